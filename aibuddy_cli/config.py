"""aibuddy.toml: every key declared once, and everything derived from the declarations.

A key is declared once, as a field of its table's settings class (`RecallSettings.window`): its
name, type and default are the field's, and its kind, description, range and template line a `Key`
beside its type (`Annotated[int, Key(WHOLE, "…", low=…, high=200)] = 200`). mypy checks every read
of a setting through the class; `TABLES` is read from the classes (with [models], which is kept
raw, declared as its keys), and from it come validation, unknown-key warnings, the template
`aibuddy init` writes and the documentation's key reference (docs/reference/configuration.md,
which docs/gen_reference.py writes). A schema given tables without classes (an extended one, in
tests) builds its named tuples from the declarations; one given a class checks it matches.

Kept cheap to import, as it is on every command's path: named tuples, no tomllib, no dataclasses.
"""

# No `from __future__ import annotations` here: string annotations make every NamedTuple field a
# ForwardRef that is compiled at import, and this module is imported by every command.
import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, NamedTuple, get_args, get_origin

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


class Key(NamedTuple):
    """A setting's facts beside its type and default, on its settings class's field:
    `window: Annotated[int, Key(WHOLE, "manifest lines …", low=…, high=200)] = 200`."""

    kind: Kind
    description: str  # one line, for the reference
    low: Bound = None
    high: Bound = None
    template: str = "{key} = {default}"  # as Setting's


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

# The settings objects are the declarations: each field is a key of aibuddy.toml, its type and
# default the field's, and its facts (kind, description, range, template line) a `Key` beside its
# type. The tables, and so the parser, the template and the reference, are read from them.


class RecallSettings(NamedTuple):
    window: Annotated[
        int, Key(WHOLE, "manifest lines a recall chooses from", low="max_bodies", high=200)
    ] = 200
    max_bodies: Annotated[int, Key(WHOLE, "record bodies a recall reads", low=1, high=5)] = 5
    lexical_share: Annotated[
        int, Key(WHOLE, "manifest lines kept for the best lexical matches over all the user's records",
                 low=0, high="window", template="")
    ] = 50
    semantic: Annotated[
        bool, Key(FLAG, "fuse the static meaning vectors (WordLlama, offline) with the words; "
                        "`[models] embedding`, when set, replaces them", template="")
    ] = True


class KnowledgeSettings(NamedTuple):
    page_chars: Annotated[
        int, Key(WHOLE, "characters in one page of `kb read`", low=200, high=100_000)
    ] = 4000
    max_steps: Annotated[int, Key(WHOLE, "model turns `kb ask` may take", low=1, high=50)] = 8
    tool_budget_tokens: Annotated[
        int, Key(WHOLE, "estimated tokens all of `kb ask`'s tool results may add up to",
                 low=500, high=1_000_000, template="")
    ] = 15_000


class ExtractionSettings(NamedTuple):
    similarity: Annotated[
        float, Key(NUMBER, "same-type fact similarity at which automatic memory updates a record",
                   low=0, high=1)
    ] = 0.6
    min_salience: Annotated[
        float, Key(NUMBER, "candidates below this salience are dropped", low=0, high=1, template="")
    ] = 0.5
    max_writes: Annotated[
        int, Key(WHOLE, "records one model reply may create or update; the rest are dropped", low=1, high=100)
    ] = 5
    review: Annotated[
        bool, Key(FLAG, "automatic extraction and consolidation propose their memory changes for a person to "
                        "accept or reject (`aibuddy memory pending`, `aibuddy ui`) instead of writing them")
    ] = False


class ContextSettings(NamedTuple):
    compact_at_tokens: Annotated[
        int, Key(WHOLE, "estimated history size above which older messages are summarised",
                 low=100, high=10_000_000)
    ] = 6000
    recent_messages: Annotated[
        int, Key(WHOLE, "messages always kept verbatim", low=1, high=1000, template="")
    ] = 6


class TablesSettings(NamedTuple):
    max_steps: Annotated[
        int, Key(WHOLE, "model turns `table ask`, `table update` or `table refactor` may take",
                 low=1, high=100)
    ] = 12
    tool_budget_tokens: Annotated[
        int, Key(WHOLE, "estimated tokens all of one table loop's tool results may add up to",
                 low=500, high=1_000_000, template="")
    ] = 20_000
    max_rows: Annotated[
        int, Key(WHOLE, "rows one filter, search or join returns at most", low=1, high=100_000, template="")
    ] = 1000


class ConsolidationSettings(NamedTuple):
    every: Annotated[
        int, Key(WHOLE, "messages of a task between two background consolidation passes", low=1, high=10_000)
    ] = 50
    memory: Annotated[bool, Key(FLAG, "distil user memory records (as automatic extraction does)")] = True
    contacts: Annotated[
        bool, Key(FLAG, "keep the people a chunk mentions in the personal `contacts` table")
    ] = True
    bios: Annotated[bool, Key(FLAG, "with contacts: a short bio of each", template="")] = True
    response_policies: Annotated[
        bool, Key(FLAG, "with contacts: how the user wants each one answered", template="")
    ] = True
    contact_summaries: Annotated[
        bool, Key(FLAG, "with contacts: a rolling summary of what the conversations say about each",
                  template="")
    ] = True
    summaries: Annotated[bool, Key(FLAG, "keep a rolling summary of each task")] = True
    knowledge: Annotated[
        bool, Key(FLAG, "add the facts a chunk states as rows of existing knowledge tables", template="")
    ] = False
    tasks: Annotated[bool, Key(FLAG, "update the task's plan and status", template="")] = False


class StoreSettings(NamedTuple):
    url: Annotated[
        str | None,
        Key(STORE_URL, "a PostgreSQL database serving this vault to many hosts (no password here)",
            template=""),
    ] = None


class IndexSettings(NamedTuple):
    watch: Annotated[
        str,
        Key(WATCH_MODE, '"auto": a vault folder of 2,000 files or more gets a small background process that '
                        "tells each command what changed in it (inotify), so no command stats every file; "
                        '"on": any folder; "off": none (also AIBUDDY_WATCH=off)', template=""),
    ] = "auto"


class Config(NamedTuple):
    default_user: Annotated[
        str | None, Key(USER_NAME, "the current user when neither --user nor AIBUDDY_USER is given",
                        template='{key} = "{user}"')
    ] = None
    admins: Annotated[
        tuple[str, ...], Key(USER_NAMES, "users who may publish and reject system documents",
                             template='{key} = ["{user}"]')
    ] = ()
    vault_id: Annotated[
        str | None, Key(VAULT_ID, "a team vault's id, the same in every clone: names each member's personal "
                                  "vault folder (`aibuddy git setup` writes it)", template="")
    ] = None
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


def declared_settings(cls: type) -> tuple[Setting, ...]:
    """The settings a class declares: each field annotated `Annotated[type, Key(…)]`, with its default."""
    found = []
    for name, annotation in cls.__annotations__.items():
        key = next((part for part in getattr(annotation, "__metadata__", ()) if isinstance(part, Key)), None)
        if key is not None:
            default = cls._field_defaults[name]  # type: ignore[attr-defined]
            found.append(Setting(name, key.kind, default, key.description, key.low, key.high, key.template))
    return tuple(found)


# [models] is kept raw (checked where a role is resolved), so no class declares it: its keys are
# declared here, one per role and the bounds of a call.
MODELS = Table("models", (
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
        'Unset means "no model": the deterministic paths run.', raw=True)  # fmt: skip

TABLES: tuple[Table, ...] = (
    Table("", declared_settings(Config)),
    MODELS,
    *(Table(name, declared_settings(cls)) for name, cls in SETTINGS_TYPES.items()),
    Table("teams", (), raw=True, entries=_team,
          note="[teams.<team>] members = [\"alice\", \"bob\"]: who shares tables/team/<team>/"),
)  # fmt: skip


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
    # (the type a field's `Annotated[type, Key(…)]` declares)
    annotations = {
        key: get_args(hint)[0] if get_origin(hint) is Annotated else hint
        for key, hint in declared.__annotations__.items()
    }
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
