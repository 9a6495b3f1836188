"""Locating the vault, reading its configuration, resolving the current user, naming its paths.

Every path inside a vault is spelled here, as a relative key that `storage` resolves safely.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .errors import Conflict, InvalidInput, NotFound, UsageError
from .models import ROLES as MODEL_ROLES
from .storage import TEMP_PREFIX, atomic_write

CONFIG_FILE = "aibuddy.toml"
CACHE_DIR = ".aibuddy"
# The derived cache, and temp files an interrupted atomic write may leave behind.
GITIGNORE_LINES = (f"{CACHE_DIR}/", f"{TEMP_PREFIX}*")

_RECORD_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Lower case only: on a case-insensitive file system "Alice" would open alice's folders.
_USER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def validate_record_name(name: str) -> str:
    """A record name is its file stem: lowercase letters, digits, '-' and '_', at most 64."""
    if not _RECORD_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid record name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def validate_user_name(user: str) -> str:
    if not _USER_NAME.fullmatch(user):
        raise InvalidInput(
            f"invalid user name {user!r}: use 1-64 lowercase letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    return user


class RecallSettings(NamedTuple):
    window: int = 200
    max_bodies: int = 5
    lexical_share: int = 50  # manifest lines reserved for the best lexical matches


class KnowledgeSettings(NamedTuple):
    page_chars: int = 4000  # characters in one page of `kb read`
    max_steps: int = 8  # model turns the knowledge subagent may take
    tool_budget_tokens: int = 15_000  # estimated tokens all its tool results may add up to


class ExtractionSettings(NamedTuple):
    similarity: float = 0.6  # same-type description similarity at which a record is updated
    min_salience: float = 0.5  # candidates below this are dropped
    max_writes: int = 5  # records one model reply may create or update; the rest are dropped


class ContextSettings(NamedTuple):
    compact_at_tokens: int = 6000  # estimated history size above which older messages are summarised
    recent_messages: int = 6  # messages always kept verbatim


class Config(NamedTuple):
    default_user: str | None = None
    admins: tuple[str, ...] = ()
    models: Mapping[str, Any] = MappingProxyType({})
    recall: RecallSettings = RecallSettings()
    knowledge: KnowledgeSettings = KnowledgeSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    context: ContextSettings = ContextSettings()
    warnings: tuple[str, ...] = ()  # unknown keys and ignored values, said on every run


# The keys aibuddy.toml may hold: a top-level key, or a table and its keys.
KNOWN_KEYS: dict[str, tuple[str, ...] | None] = {
    "default_user": None,
    "admins": None,
    "models": ("default", "api_base", "timeout", *MODEL_ROLES),
    "recall": tuple(RecallSettings._fields),
    "knowledge": tuple(KnowledgeSettings._fields),
    "extraction": tuple(ExtractionSettings._fields),
    "context": tuple(ContextSettings._fields),
}


def _unknown_keys(data: Mapping[str, Any], source: str) -> list[str]:
    """One warning per key aibuddy does not know, with the closest known spelling: a typo in
    aibuddy.toml must not pass silently."""
    import difflib

    warnings = []

    def warn(where: str, key: str, known: Iterable[str]) -> None:
        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        warnings.append(f"{source}: unknown {where}{key!r}{hint}; ignored")

    for key, value in data.items():
        if key not in KNOWN_KEYS:
            warn("table " if isinstance(value, dict) else "key ", key, KNOWN_KEYS)
            continue
        table_keys = KNOWN_KEYS[key]
        if table_keys is not None and isinstance(value, dict):
            for inner in value:
                if inner not in table_keys:
                    warn(f"key in [{key}]: ", inner, table_keys)
    return warnings


def _int_setting(table: Mapping[str, Any], key: str, default: int, low: int, high: int, source: str) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{source}: {key} must be a whole number from {low} to {high}")
    return value


def _fraction_setting(table: Mapping[str, Any], key: str, default: float, source: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInput(f"{source}: {key} must be a number from 0 to 1")
    return float(value)


def config_from_data(data: Mapping[str, Any], source: str = CONFIG_FILE) -> Config:
    """Validate the parsed aibuddy.toml (source names it in messages)."""
    warnings = _unknown_keys(data, source)
    default_user = data.get("default_user")
    if default_user is not None:
        if not isinstance(default_user, str) or not _USER_NAME.fullmatch(default_user):
            warnings.append(
                f"{source}: default_user {default_user!r} is not a valid user name (1-64 lowercase "
                "letters, digits, '.', '-' or '_'); ignored"
            )
            default_user = None
    admins = data.get("admins", [])
    if not isinstance(admins, list) or not all(isinstance(a, str) for a in admins):
        raise InvalidInput(f"{source}: admins must be a list of user names")
    models = data.get("models", {})
    recall = data.get("recall", {})
    knowledge = data.get("knowledge", {})
    extraction = data.get("extraction", {})
    context = data.get("context", {})
    if not all(isinstance(table, dict) for table in (models, recall, knowledge, extraction, context)):
        tables = "[models], [recall], [knowledge], [extraction], [context]"
        raise InvalidInput(f"{source}: {tables} must be tables")
    max_bodies = _int_setting(recall, "max_bodies", 5, 1, 5, source)
    window = _int_setting(recall, "window", 200, max_bodies, 200, source)
    share = _int_setting(recall, "lexical_share", min(50, window), 0, window, source)
    return Config(
        default_user=default_user,
        admins=tuple(admins),
        models=models,
        recall=RecallSettings(window=window, max_bodies=max_bodies, lexical_share=share),
        knowledge=KnowledgeSettings(
            page_chars=_int_setting(knowledge, "page_chars", 4000, 200, 100_000, source),
            max_steps=_int_setting(knowledge, "max_steps", 8, 1, 50, source),
            tool_budget_tokens=_int_setting(knowledge, "tool_budget_tokens", 15_000, 500, 1_000_000, source),
        ),
        extraction=ExtractionSettings(
            similarity=_fraction_setting(extraction, "similarity", 0.6, source),
            min_salience=_fraction_setting(extraction, "min_salience", 0.5, source),
            max_writes=_int_setting(extraction, "max_writes", 5, 1, 100, source),
        ),
        context=ContextSettings(
            compact_at_tokens=_int_setting(context, "compact_at_tokens", 6000, 100, 10_000_000, source),
            recent_messages=_int_setting(context, "recent_messages", 6, 1, 1000, source),
        ),
        warnings=tuple(warnings),
    )


class Vault(NamedTuple):
    root: Path
    config: Config

    @classmethod
    def open(cls, root: Path) -> Vault:
        root = root.resolve()
        return cls(root=root, config=_load_config(root))

    @property
    def cache_dir(self) -> Path:
        """Where the derived caches (indexes, locks) go: <vault>/.aibuddy, or, when that cannot be
        written (a read-only mount or snapshot, someone else's folder), a per-user folder named
        after the vault: $XDG_CACHE_HOME/aibuddy/<vault name>-<hash of its path>."""
        own = self.root / CACHE_DIR
        probe = own if os.path.isdir(own) else self.root
        if os.access(probe, os.W_OK | os.X_OK):
            return own
        return user_cache_dir(self.root) or own

    def knowledge_index_path(self) -> Path:
        return self.cache_dir / "index" / "knowledge.sqlite"

    def memory_index_path(self, user: str) -> Path:
        return self.cache_dir / "index" / f"memory-{validate_user_name(user)}.sqlite"

    def locks_dir(self) -> Path:
        return self.cache_dir / "locks"


def user_cache_dir(root: Path) -> Path | None:
    """The per-user cache folder of the vault at root, under $XDG_CACHE_HOME (else ~/.cache);
    None if there is no home to put it in. Its aibuddy/ folder is private (0700), as XDG asks."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative, which the XDG spec says to ignore
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    import hashlib

    folder = Path(base) / "aibuddy"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        pass  # whoever opens a cache in it finds out, and keeps that cache in memory
    name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name)[:40].lstrip(".") or "vault"
    return folder / f"{name}-{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}"


def _load_config(root: Path) -> Config:
    """aibuddy.toml, parsed; the parse is cached as JSON under .aibuddy/ (in a read-only vault, in
    the user's cache folder) keyed by the file's stat, because importing tomllib costs more than
    the rest of a fast command's set-up."""
    config_path = root / CONFIG_FILE
    try:
        st = os.stat(config_path)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"no vault at {root} ({CONFIG_FILE} missing); run 'aibuddy init'") from None
    signature = [st.st_mtime_ns, st.st_ctime_ns, st.st_size]

    def cache_paths() -> Iterator[Path]:
        yield root / CACHE_DIR / "config.json"
        fallback = user_cache_dir(root)
        if fallback is not None:
            yield fallback / "config.json"

    for cache_path in cache_paths():
        try:
            cached = json.loads(cache_path.read_bytes())
            if cached["signature"] == signature:
                return config_from_data(cached["data"], str(config_path))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    try:
        text = config_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{config_path}: not UTF-8") from None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{config_path}: {exc}") from None
    config = config_from_data(data, str(config_path))
    try:
        cached_text = json.dumps({"signature": signature, "data": data}).encode()
    except (TypeError, ValueError):
        return config  # TOML dates and times are not JSON: this config is parsed every time
    for cache_path in cache_paths():
        try:
            atomic_write(cache_path, cached_text)
            break
        except OSError:
            continue  # a read-only vault: try the user's cache folder
    return config


def memory_prefix(user: str) -> str:
    return f"memory/{validate_user_name(user)}"


def memory_key(user: str, name: str) -> str:
    return f"{memory_prefix(user)}/{validate_record_name(name)}.md"


def find_vault_root(start: Path) -> Path | None:
    """Walk up from start to the first folder holding aibuddy.toml, as git does for .git."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / CONFIG_FILE).is_file():
            return candidate
    return None


def locate_vault(explicit: str | None, environ: Mapping[str, str], cwd: Path) -> Vault:
    """--vault, then AIBUDDY_VAULT, then the nearest aibuddy.toml above the working directory."""
    chosen = explicit or environ.get("AIBUDDY_VAULT")
    if chosen:
        return Vault.open(Path(chosen).expanduser())
    root = find_vault_root(cwd)
    if root is None:
        raise NotFound(
            f"no vault found in {cwd} or above; run 'aibuddy init', pass --vault or set AIBUDDY_VAULT"
        )
    return Vault.open(root)


def resolve_user(explicit: str | None, environ: Mapping[str, str], config: Config) -> str:
    """--user, then AIBUDDY_USER, then default_user from aibuddy.toml."""
    user = explicit or environ.get("AIBUDDY_USER") or config.default_user
    if not user:
        raise UsageError(
            "no current user: pass --user, set AIBUDDY_USER or a valid default_user in aibuddy.toml"
        )
    return validate_user_name(user)


VAULT_FOLDERS = (
    "memory",
    "knowledge/system/pending",
    "knowledge/system/ready",
    "knowledge/personal",
    "tasks",
)


def config_template(user: str) -> str:
    return f"""# aibuddy vault configuration
default_user = "{user}"
admins = ["{user}"]

[models]
# litellm model strings per role (recall, extract, summary, knowledge, compact) or
# `default` for all. Unset means "no model": the deterministic paths run.
# default = "openai/gpt-4o-mini"
# recall = "ollama/llama3.2"
# api_base = "http://127.0.0.1:11434"
timeout = 20

[recall]
window = 200
max_bodies = 5

[knowledge]
page_chars = 4000
max_steps = 8

[extraction]
similarity = 0.6
max_writes = 5

[context]
compact_at_tokens = 6000
"""


def default_user_name(environ: Mapping[str, str]) -> str:
    candidate = (environ.get("AIBUDDY_USER") or environ.get("USER") or "me").lower()
    return candidate if _USER_NAME.fullmatch(candidate) else "me"


def init_vault(path: Path, user: str) -> Vault:
    """Create the vault layout, aibuddy.toml and a .gitignore for the derived cache."""
    validate_user_name(user)
    if (path / CONFIG_FILE).exists():
        raise Conflict(f"{path / CONFIG_FILE} already exists")
    path.mkdir(parents=True, exist_ok=True)
    for folder in VAULT_FOLDERS:
        (path / folder).mkdir(parents=True, exist_ok=True)
    gitignore = path / ".gitignore"
    existing = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    missing = [line for line in GITIGNORE_LINES if line not in existing.split()]
    if missing:
        separator = "" if existing.endswith("\n") or not existing else "\n"
        gitignore.write_text(existing + separator + "\n".join(missing) + "\n", encoding="utf-8")
    (path / CONFIG_FILE).write_text(config_template(user), encoding="utf-8")
    return Vault.open(path)
