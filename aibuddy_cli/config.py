"""aibuddy.toml: every key declared once, and everything derived from the declarations.

`TABLES` is the one place a setting is declared: its table, name, kind, default, allowed range
and a one-line description. From it come validation, unknown-key warnings, the template
`aibuddy init` writes and the documentation's key reference (docs/reference/configuration.md,
which docs/gen_reference.py writes). The settings objects (`Config`, one named tuple per table)
are declared as classes too, so that mypy checks every settings read; `Schema` refuses a class
that does not match its table (fields, order, types, defaults), so the two cannot drift apart. A
schema given no classes (an extended one, in tests) builds its named tuples from the declarations.

Kept cheap to import, as it is on every command's path: named tuples, no tomllib, no dataclasses.
"""

# No `from __future__ import annotations` here: string annotations make every NamedTuple field a
# ForwardRef that is compiled at import, and this module is imported by every command.
import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from .errors import InvalidInput
from .names import is_user_name

# A range bound: a number, or the name of another setting of the same table (its value).
Bound = int | float | str | None
# Checks a value the file gives: (setting, value, low, high, source, warnings) -> the value to use.
Check = Callable[..., Any]

CONFIG_FILE = "aibuddy.toml"


class Kind(NamedTuple):
    label: str  # as the reference names it
    type: Any  # the settings field's annotation
    check: Check | None  # None: a table kept raw, checked where it is used


class Setting(NamedTuple):
    name: str
    kind: Kind
    default: Any
    description: str  # one line, for the reference
    low: Bound = None
    high: Bound = None
    # The setting's line in the template `aibuddy init` writes: "" leaves it out (documented only).
    # {key}, {default} (as TOML) and {user} (the user the vault is made for) are filled in.
    template: str = "{key} = {default}"

    def template_line(self, user: str) -> str:
        return self.template.format(key=self.name, default=_toml(self.default), user=user)


class Table(NamedTuple):
    name: str  # "" for the keys at the top of the file
    settings: tuple[Setting, ...]
    note: str = ""  # a comment above the table's keys in the template
    raw: bool = False  # kept as the file's mapping and checked where it is used ([models])
    # A table of named entries, such as [teams.<team>]: each entry is checked by this function,
    # (name, value, source, warnings) -> the value to keep, or None to leave the entry out.
    entries: Check | None = None


# --- kinds ---------------------------------------------------------------------------------------


def _whole(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{source}: {setting.name} must be a whole number from {low} to {high}")
    return value


def _number(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidInput(f"{source}: {setting.name} must be a number from {low} to {high}")
    return float(value)


def _flag(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{source}: {setting.name} must be true or false")
    return value


def _user_name(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> Any:
    """A bad user name is ignored with a warning, so --user still works."""
    if isinstance(value, str) and is_user_name(value):
        return value
    warnings.append(
        f"{source}: {setting.name} {value!r} is not a valid user name (1-64 lowercase letters, digits, "
        "'.', '-' or '_'); ignored"
    )
    return setting.default


def _user_names(
    setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]
) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"{source}: {setting.name} must be a list of user names")
    return tuple(value)


def _vault_id(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> str:
    """A team vault's id names its members' personal vaults: a wrong one would hide them."""
    # The same spelling as a user name: safe as a folder name.
    if not isinstance(value, str) or not is_user_name(value):
        raise InvalidInput(
            f"{source}: {setting.name} must be 1-64 lowercase letters, digits, '.', '-' or '_'"
        )
    return value


def _store_url(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> str:
    """A PostgreSQL URL, without a password: git tracks aibuddy.toml, so a password comes from the
    environment (PGPASSWORD, AIBUDDY_STORE_URL) or a libpq passfile or service file."""
    from urllib.parse import urlsplit

    if not isinstance(value, str) or not value.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(f"{source}: [store] {setting.name} must be a postgresql:// URL")
    try:
        password = urlsplit(value).password
    except ValueError:
        raise InvalidInput(f"{source}: [store] {setting.name} is not a URL") from None
    if password is not None or "password=" in value:
        raise InvalidInput(
            f"{source}: [store] {setting.name} holds a password, and git tracks this file: put it in "
            "PGPASSWORD or ~/.pgpass, or give the whole URL in AIBUDDY_STORE_URL"
        )
    return value


def _watch_mode(setting: Setting, value: Any, low: Any, high: Any, source: str, warnings: list[str]) -> str:
    if value not in ("auto", "on", "off"):
        raise InvalidInput(f'{source}: [indexes] {setting.name} must be "auto", "on" or "off"')
    return str(value)


WHOLE = Kind("whole number", int, _whole)
NUMBER = Kind("number", float, _number)
FLAG = Kind("true or false", bool, _flag)
USER_NAME = Kind("user name", str | None, _user_name)
USER_NAMES = Kind("list of user names", tuple[str, ...], _user_names)
VAULT_ID = Kind("vault id", str | None, _vault_id)
# [models] is checked by models.model_settings when a role is resolved, so its kinds have no check.
MODEL = Kind("litellm model string", str | None, None)
URL = Kind("URL", str | None, None)
STORE_URL = Kind("postgresql:// URL", str | None, _store_url)
SECONDS = Kind("seconds", float, None)
WATCH_MODE = Kind('"auto", "on" or "off"', str, _watch_mode)


def _team(name: str, value: Any, source: str, warnings: list[str]) -> Any:
    """[teams.<team>]: members, a list of user names. Anything else is left out with a warning."""
    members = value.get("members") if isinstance(value, dict) else None
    if not is_user_name(name) or not isinstance(members, list) or not all(
        isinstance(member, str) and is_user_name(member) for member in members
    ):
        warnings.append(f"{source}: [teams.{name}] needs a valid name and members = [user names]; ignored")
        return None
    unknown = sorted(set(value) - {"members"})
    if unknown:
        warnings.append(f"{source}: unknown key in [teams.{name}]: {unknown[0]!r}; ignored")
    return frozenset(members)


# --- the declarations ----------------------------------------------------------------------------

# One [models] key per role, and what the role's model does.
MODEL_ROLES = {
    "recall": "chooses the memory records a recall reads",
    "extract": "proposes memory records from a conversation's latest turns",
    "summary": "summarises knowledge documents",
    "knowledge": "answers `kb ask` through its read-only document tools",
    "compact": "summarises a task's older messages",
    "tables": "answers `table ask` and carries out `table update` and `table refactor` through their tools",
    "embedding": "embeds memory records for recall and vectorized table columns for `table search`"
    " (litellm.embedding)",
    "consolidate": "distils each chunk of a task's messages into memory, contacts and a summary",
}
ROLES = tuple(MODEL_ROLES)

TABLES: tuple[Table, ...] = (
    Table("", (
        Setting("default_user", USER_NAME, None, template='{key} = "{user}"',
                description="the current user when neither --user nor AIBUDDY_USER is given"),
        Setting("admins", USER_NAMES, (), template='{key} = ["{user}"]',
                description="users who may publish and reject system documents"),
        Setting("vault_id", VAULT_ID, None, template="",
                description="a team vault's id, the same in every clone: names each member's personal "
                            "vault folder (`aibuddy git setup` writes it)"),
    )),
    Table("models", (
        Setting("default", MODEL, None, template='# {key} = "openai/gpt-4o-mini"',
                description="the model of every role not set on its own; unset: no model"),
        *(Setting(role, MODEL, None, template='# {key} = "ollama/llama3.2"' if role == "recall" else "",
                  description=f"the model that {does}; unset: `default`")
          for role, does in MODEL_ROLES.items()),
        Setting("api_base", URL, None, template='# {key} = "http://127.0.0.1:11434"',
                description="the server every role calls, e.g. a local Ollama or vLLM"),
        Setting("timeout", SECONDS, 20, low=0, high=600,
                description="seconds the wait for a model's answer may take (more than 0); litellm's "
                            "one-time import has its own bound, AIBUDDY_IMPORT_TIMEOUT (120)"),
        Setting("keep_worker", SECONDS, None, low=0, high=86_400, template="",
                description="seconds an unused model worker stays up (AIBUDDY_WORKER_IDLE overrides); "
                            "unset: as long as its own start took, so no idle worker outlives its cost"),
    ), note="litellm model strings per role, or `default` for all. The roles:\n"
            f"{', '.join(ROLES)}.\n"
            'Unset means "no model": the deterministic paths run.', raw=True),
    Table("recall", (
        Setting("window", WHOLE, 200, low="max_bodies", high=200,
                description="manifest lines a recall chooses from"),
        Setting("max_bodies", WHOLE, 5, low=1, high=5,
                description="record bodies a recall reads"),
        Setting("lexical_share", WHOLE, 50, low=0, high="window", template="",
                description="manifest lines kept for the best lexical matches over all the user's records"),
        Setting("semantic", FLAG, True, template="",
                description="fuse the static meaning vectors (WordLlama, offline) with the words; "
                            "`[models] embedding`, when set, replaces them"),
    )),
    Table("knowledge", (
        Setting("page_chars", WHOLE, 4000, low=200, high=100_000,
                description="characters in one page of `kb read`"),
        Setting("max_steps", WHOLE, 8, low=1, high=50,
                description="model turns `kb ask` may take"),
        Setting("tool_budget_tokens", WHOLE, 15_000, low=500, high=1_000_000, template="",
                description="estimated tokens all of `kb ask`'s tool results may add up to"),
    )),
    Table("extraction", (
        Setting("similarity", NUMBER, 0.6, low=0, high=1,
                description="same-type fact similarity at which automatic memory updates a record"),
        Setting("min_salience", NUMBER, 0.5, low=0, high=1, template="",
                description="candidates below this salience are dropped"),
        Setting("max_writes", WHOLE, 5, low=1, high=100,
                description="records one model reply may create or update; the rest are dropped"),
    )),
    Table("context", (
        Setting("compact_at_tokens", WHOLE, 6000, low=100, high=10_000_000,
                description="estimated history size above which older messages are summarised"),
        Setting("recent_messages", WHOLE, 6, low=1, high=1000, template="",
                description="messages always kept verbatim"),
    )),
    Table("tables", (
        Setting("max_steps", WHOLE, 12, low=1, high=100,
                description="model turns `table ask`, `table update` or `table refactor` may take"),
        Setting("tool_budget_tokens", WHOLE, 20_000, low=500, high=1_000_000, template="",
                description="estimated tokens all of one table loop's tool results may add up to"),
        Setting("max_rows", WHOLE, 1000, low=1, high=100_000, template="",
                description="rows one filter, search or join returns at most"),
    )),
    Table("consolidation", (
        Setting("every", WHOLE, 50, low=1, high=10_000,
                description="messages of a task between two background consolidation passes"),
        Setting("memory", FLAG, True,
                description="distil user memory records (as automatic extraction does)"),
        Setting("contacts", FLAG, True,
                description="keep the people a chunk mentions in the personal `contacts` table"),
        Setting("bios", FLAG, True, template="", description="with contacts: a short bio of each"),
        Setting("response_policies", FLAG, True, template="",
                description="with contacts: how the user wants each one answered"),
        Setting("contact_summaries", FLAG, True, template="",
                description="with contacts: a rolling summary of what the conversations say about each"),
        Setting("summaries", FLAG, True, description="keep a rolling summary of each task"),
        Setting("knowledge", FLAG, False, template="",
                description="add the facts a chunk states as rows of existing knowledge tables"),
        Setting("tasks", FLAG, False, template="", description="update the task's plan and status"),
    )),
    Table("store", (
        Setting("url", STORE_URL, None, template="",
                description="a PostgreSQL database serving this vault to many hosts (no password here)"),
    )),
    Table("indexes", (
        Setting("watch", WATCH_MODE, "auto", template="",
                description='"auto": a vault folder of 2,000 files or more gets a small background process '
                            'that tells each command what changed in it (inotify), so no command stats every '
                            'file; "on": any folder; "off": none (also AIBUDDY_WATCH=off)'),
    )),
    Table("teams", (), raw=True, entries=_team,
          note="[teams.<team>] members = [\"alice\", \"bob\"]: who shares tables/team/<team>/"),
)  # fmt: skip


# --- the settings objects, typed: each matches its table above (Schema checks it) -----------------


class RecallSettings(NamedTuple):
    window: int = 200
    max_bodies: int = 5
    lexical_share: int = 50
    semantic: bool = True


class KnowledgeSettings(NamedTuple):
    page_chars: int = 4000
    max_steps: int = 8
    tool_budget_tokens: int = 15_000


class ExtractionSettings(NamedTuple):
    similarity: float = 0.6
    min_salience: float = 0.5
    max_writes: int = 5


class ContextSettings(NamedTuple):
    compact_at_tokens: int = 6000
    recent_messages: int = 6


class TablesSettings(NamedTuple):
    max_steps: int = 12
    tool_budget_tokens: int = 20_000
    max_rows: int = 1000


class ConsolidationSettings(NamedTuple):
    every: int = 50
    memory: bool = True
    contacts: bool = True
    bios: bool = True
    response_policies: bool = True
    contact_summaries: bool = True
    summaries: bool = True
    knowledge: bool = False
    tasks: bool = False


class StoreSettings(NamedTuple):
    url: str | None = None


class IndexSettings(NamedTuple):
    watch: str = "auto"


class Config(NamedTuple):
    default_user: str | None = None
    admins: tuple[str, ...] = ()
    vault_id: str | None = None
    models: Mapping[str, Any] = MappingProxyType({})  # the file's [models], checked when a role is called
    recall: RecallSettings = RecallSettings()
    knowledge: KnowledgeSettings = KnowledgeSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    context: ContextSettings = ContextSettings()
    tables: TablesSettings = TablesSettings()
    consolidation: ConsolidationSettings = ConsolidationSettings()
    store: StoreSettings = StoreSettings()
    indexes: IndexSettings = IndexSettings()
    teams: Mapping[str, frozenset[str]] = MappingProxyType({})  # team -> its members
    # Unknown keys and ignored values, said on every run.
    warnings: tuple[str, ...] = ()
    # Whether the file has a [teams] table at all, even one whose every entry was ignored:
    # a typo in a team must never put its members' personal files in the shared folder.
    team_vault: bool = False


SETTINGS_TYPES: dict[str, type] = {
    "recall": RecallSettings,
    "knowledge": KnowledgeSettings,
    "extraction": ExtractionSettings,
    "context": ContextSettings,
    "tables": TablesSettings,
    "consolidation": ConsolidationSettings,
    "store": StoreSettings,
    "indexes": IndexSettings,
}


# --- what is derived from them -------------------------------------------------------------------


def _table_values(table: Table, given: Mapping[str, Any], source: str, warnings: list[str]) -> dict[str, Any]:
    """The table's values in declaration order. A bound naming another setting is that setting's value,
    settled (and checked) first; an absent key takes its default, kept inside its range."""
    declared = {setting.name: setting for setting in table.settings}
    values: dict[str, Any] = {}

    def bound(value: Bound) -> Any:
        return value_of(declared[value]) if isinstance(value, str) else value

    def value_of(setting: Setting) -> Any:
        if setting.name not in values:
            low, high = bound(setting.low), bound(setting.high)
            if setting.name in given and setting.kind.check is not None:
                value = setting.kind.check(setting, given[setting.name], low, high, source, warnings)
            else:
                value = setting.default
                if value is not None and low is not None:
                    value = max(low, value)
                if value is not None and high is not None:
                    value = min(value, high)
            values[setting.name] = value
        return values[setting.name]

    for setting in table.settings:
        value_of(setting)
    return values


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        import json

        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return repr(value)


def _shown_bound(value: Bound) -> str:
    return f"`{value}`" if isinstance(value, str) else str(value)


class Schema:
    """The configuration a list of table declarations describes: its types, parser, template and reference."""

    def __init__(
        self,
        tables: Sequence[Table],
        config_type: type | None = None,
        settings_types: Mapping[str, type] = MappingProxyType({}),
    ) -> None:
        """config_type, settings_types: the declared classes (by table name), each checked against
        its table; a table without one gets a named tuple built from its declarations."""
        self.tables = tuple(tables)
        for table in self.tables:
            names = [setting.name for setting in table.settings]
            for setting in table.settings:
                for bound in (setting.low, setting.high):
                    if isinstance(bound, str) and (bound not in names or bound == setting.name):
                        raise ValueError(f"[{table.name}] {setting.name}: bound {bound!r} is not another key")
        self.root = next((table for table in self.tables if not table.name), Table("", ()))
        self.sections = tuple(table for table in self.tables if table.name)
        # Named tuples, typed: one per checked table (RecallSettings, …), and the Config holding them.
        self.settings_types: dict[str, type] = {
            table.name: _settings_type(
                f"{table.name.title().replace('_', '')}Settings",
                [(setting.name, setting.kind.type, setting.default) for setting in table.settings],
                settings_types.get(table.name),
            )
            for table in self.sections
            if not table.raw
        }
        self.config_type = _settings_type(
            "Config",
            [(setting.name, setting.kind.type, setting.default) for setting in self.root.settings]
            + [
                # A raw table's annotation is the declared class's own (None: not checked).
                (table.name, None if config_type else Mapping[str, Any], MappingProxyType({}))
                if table.raw
                else (table.name, self.settings_types[table.name], self.settings_types[table.name]())
                for table in self.sections
            ]
            + [("warnings", tuple[str, ...], ()), ("team_vault", bool, False)],
            config_type,
        )
        # The keys the file may hold: a top-level key, or a table and its keys.
        self.known_keys: dict[str, tuple[str, ...] | None] = {
            **{setting.name: None for setting in self.root.settings},
            **{
                table.name: None if table.entries else tuple(setting.name for setting in table.settings)
                for table in self.sections
            },
        }

    def setting(self, table: str, name: str) -> Setting:
        return next(s for t in self.tables if t.name == table for s in t.settings if s.name == name)

    def parse(self, data: Mapping[str, Any], source: str = CONFIG_FILE) -> Any:
        """Validate the parsed aibuddy.toml (source names it in messages) into a Config."""
        warnings = self.unknown_keys(data, source)
        values = _table_values(self.root, data, source, warnings)
        tables = {table.name: data.get(table.name, {}) for table in self.sections}
        if not all(isinstance(given, dict) for given in tables.values()):
            names = ", ".join(f"[{name}]" for name in tables)
            raise InvalidInput(f"{source}: {names} must be tables")
        for table in self.sections:
            given = tables[table.name]
            if table.entries is not None:
                checked = {key: table.entries(key, value, source, warnings) for key, value in given.items()}
                values[table.name] = MappingProxyType({k: v for k, v in checked.items() if v is not None})
                continue
            values[table.name] = (
                given
                if table.raw
                else self.settings_types[table.name](**_table_values(table, given, source, warnings))
            )
        return self.config_type(**values, warnings=tuple(warnings), team_vault=bool(tables.get("teams")))

    def unknown_keys(self, data: Mapping[str, Any], source: str) -> list[str]:
        """One warning per key aibuddy does not know, with the closest known spelling: a typo in
        aibuddy.toml must not pass silently."""
        warnings: list[str] = []

        def warn(where: str, key: str, known: Iterable[str]) -> None:
            import difflib

            close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{source}: unknown {where}{key!r}{hint}; ignored")

        for key, value in data.items():
            if key not in self.known_keys:
                warn("table " if isinstance(value, dict) else "key ", key, self.known_keys)
                continue
            table_keys = self.known_keys[key]
            if table_keys is not None and isinstance(value, dict):
                for inner in value:
                    if inner not in table_keys:
                        warn(f"key in [{key}]: ", inner, table_keys)
        return warnings

    def template(self, user: str) -> str:
        """The aibuddy.toml `aibuddy init` writes for user: the declarations with a template line."""
        lines = ["# aibuddy vault configuration"]
        for table in self.tables:
            body = [line for setting in table.settings if (line := setting.template_line(user))]
            if not body:
                continue
            if table.name:
                lines += ["", f"[{table.name}]"]
            lines += [f"# {note}" for note in table.note.splitlines()]
            lines += body
        return "\n".join(lines) + "\n"

    def reference(self) -> str:
        """The Markdown table of every key, as README.md shows it."""
        rows = ["| key | type | default | allowed | what it sets |", "|---|---|---|---|---|"]
        for table in self.tables:
            for setting in table.settings:
                key = f"`[{table.name}] {setting.name}`" if table.name else f"`{setting.name}`"
                default = "unset" if setting.default is None else f"`{_toml(setting.default)}`"
                allowed = (
                    f"{_shown_bound(setting.low)} to {_shown_bound(setting.high)}"
                    if setting.low is not None and setting.high is not None
                    else ""
                )
                kind, description = setting.kind.label, setting.description
                rows.append(f"| {key} | {kind} | {default} | {allowed} | {description} |")
        return "\n".join(rows) + "\n"


def _settings_type(name: str, fields: list[tuple[str, Any, Any]], declared: type | None) -> type:
    """The declared class, once checked against fields (name, annotation or None, default), else a
    named tuple made from them. A class that does not match is a ValueError, at import."""
    if declared is None:
        return _named_tuple(name, fields)
    names = getattr(declared, "_fields", ())
    annotations = getattr(declared, "__annotations__", {})
    defaults = getattr(declared, "_field_defaults", {})
    if len(names) != len(fields) or not all(
        field == key
        and (annotation is None or annotations.get(key) == annotation)
        and key in defaults
        and defaults[key] == default
        for field, (key, annotation, default) in zip(names, fields, strict=True)
    ):
        raise ValueError(f"{declared.__name__} does not match its declarations: {[f[0] for f in fields]}")
    return declared


def _named_tuple(name: str, fields: list[tuple[str, Any, Any]]) -> type:
    """A typed named tuple whose every field has a default (collections.namedtuple: cheaper than a
    class statement, and the field list comes from the declarations)."""
    names, annotations, defaults = zip(*fields, strict=True) if fields else ((), (), ())
    cls = collections.namedtuple(name, names, defaults=defaults, module=__name__)  # type: ignore[misc]
    cls.__annotations__ = dict(zip(names, annotations, strict=True))
    return cls


SCHEMA = Schema(TABLES, Config, SETTINGS_TYPES)
KNOWN_KEYS = SCHEMA.known_keys
DEFAULT_TIMEOUT = float(SCHEMA.setting("models", "timeout").default)
MAX_KEEP_WORKER = float(SCHEMA.setting("models", "keep_worker").high or 0)


def config_from_data(data: Mapping[str, Any], source: str = CONFIG_FILE) -> Config:
    """Validate the parsed aibuddy.toml (source names it in messages)."""
    config: Config = SCHEMA.parse(data, source)
    return config


def config_template(user: str) -> str:
    return SCHEMA.template(user)


# The documentation's key reference (docs/reference/configuration.md) sits between these lines;
# docs/gen_reference.py writes it and the test suite checks it matches SCHEMA.
REFERENCE_START = "<!-- config keys, made by docs/gen_reference.py -->"
REFERENCE_END = "<!-- end of config keys -->"


def with_reference(document: str, schema: Schema = SCHEMA) -> str:
    """document with the text between the reference markers replaced by the schema's reference."""
    head, start, rest = document.partition(REFERENCE_START)
    _, end, tail = rest.partition(REFERENCE_END)
    if not start or not end:
        raise ValueError(f"the reference markers are missing: {REFERENCE_START} … {REFERENCE_END}")
    return f"{head}{REFERENCE_START}\n{schema.reference()}{REFERENCE_END}{tail}"
