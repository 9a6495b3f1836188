"""Locating the vault, loading its configuration, resolving the current user, naming its paths.

Every path inside a vault is spelled here, as a relative key that `storage` resolves safely. What
aibuddy.toml may hold, and its defaults, is declared in `config`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .config import (  # noqa: F401 - re-exported: the configuration's names as they were imported here
    CONFIG_FILE,
    KNOWN_KEYS,
    Config,
    ContextSettings,
    ExtractionSettings,
    KnowledgeSettings,
    RecallSettings,
    config_from_data,
    config_template,
)
from .errors import Conflict, InvalidInput, NotFound, UsageError
from .git.files import add_lines, write_attributes
from .names import (  # noqa: F401 - re-exported: the name rules as they were imported from here
    default_user_name,
    is_user_name,
    validate_record_name,
    validate_user_name,
)
from .settings import Settings
from .store.files import TEMP_PREFIX, atomic_write

CACHE_DIR = ".aibuddy"
# The derived cache (as a folder, a file or a link: `.aibuddy/` would match only a folder, and a
# link committed in its place would go to the remote), and temp files an interrupted atomic write
# may leave behind.
GITIGNORE_LINES = (CACHE_DIR, f"{TEMP_PREFIX}*")
# The folders of the cache that files are opened in by their path (SQLite, lock files, the
# config's parse), not through the store, which refuses a symlink on the way itself.
CACHE_FOLDERS = (CACHE_DIR, f"{CACHE_DIR}/index", f"{CACHE_DIR}/locks")

class Vault(NamedTuple):
    root: Path
    config: Config
    # Where XDG_CACHE_HOME and HOME come from, for the per-user cache folder (`cache_dir`).
    environ: Mapping[str, str]

    def __repr__(self) -> str:  # not the environment: it holds the model providers' keys
        return f"Vault(root={self.root!r})"

    def to_json(self) -> dict[str, Any]:
        """`aibuddy init`'s answer."""
        return {"vault": str(self.root), "default_user": self.config.default_user}

    @classmethod
    def open(cls, root: Path, environ: Mapping[str, str] = os.environ) -> Vault:
        """environ: the session's (`locate_vault`); the process's for a vault opened on its own."""
        root = root.resolve()
        check_cache_folder(root)
        return cls(root=root, config=_load_config(root, environ), environ=environ)

    @property
    def cache_dir(self) -> Path:
        """Where the derived caches (indexes, locks) go: <vault>/.aibuddy, or, when that cannot be
        written (a read-only mount or snapshot, someone else's folder), a per-user folder named
        after the vault: $XDG_CACHE_HOME/aibuddy/<vault name>-<hash of its path>."""
        own = self.root / CACHE_DIR
        check_cache_folder(self.root)  # again: a long-running process outlives a pull that swaps it
        probe = own if os.path.isdir(own) else self.root
        if os.access(probe, os.W_OK | os.X_OK):
            return own
        return user_cache_dir(self.root, self.environ) or own

    def knowledge_index_path(self) -> Path:
        return self.cache_dir / "index" / "knowledge.sqlite"

    def memory_index_path(self, user: str) -> Path:
        return self.cache_dir / "index" / f"memory-{validate_user_name(user)}.sqlite"

    def tables_index_path(self) -> Path:
        return self.cache_dir / "index" / "tables.sqlite"

    def locks_dir(self) -> Path:
        return self.cache_dir / "locks"


def check_cache_folder(root: Path) -> None:
    """Refuse a vault whose .aibuddy (or its index/ or locks/) is there but is not a real folder of
    it: a symlink a teammate committed (git replaces the ignored folder with it at the next pull)
    would send the indexes, which hold whole records and table rows, into the folder it names,
    which git may track and push."""
    for relative in CACHE_FOLDERS:
        path = root / relative
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return  # not there (aibuddy makes it), so nothing below it is either
        if stat.S_ISDIR(mode):
            continue
        what = f"a symlink to {os.readlink(path)}" if stat.S_ISLNK(mode) else "a file"
        fix = f"git rm --cached {relative} and commit if git tracks it, then remove it"
        raise InvalidInput(
            f"{path} is {what}, not a folder: aibuddy keeps indexes and logs of your records there, "
            f"and whatever it leads to may be committed and pushed; {fix} (aibuddy makes the folder again)"
        )


def user_cache_dir(root: Path, environ: Mapping[str, str]) -> Path | None:
    """The per-user cache folder of the vault at root, under $XDG_CACHE_HOME (else ~/.cache);
    None if there is no home to put it in. Its aibuddy/ folder is private (0700), as XDG asks."""
    from .xdg import base_dir

    base = base_dir(environ, "XDG_CACHE_HOME")  # unset, or relative, which XDG says to ignore
    if base is None:
        home = environ.get("HOME") or os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = Path(home) / ".cache"
    import hashlib

    folder = base / "aibuddy"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        pass  # whoever opens a cache in it finds out, and keeps that cache in memory
    name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name)[:40].lstrip(".") or "vault"
    return folder / f"{name}-{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}"


def _load_config(root: Path, environ: Mapping[str, str]) -> Config:
    """aibuddy.toml, parsed; the parse is cached as JSON under .aibuddy/ (in a read-only vault, in
    the user's cache folder) keyed by the file's stat, because importing tomllib costs more than
    the rest of a fast command's set-up."""
    config_path = root / CONFIG_FILE
    try:
        st = os.stat(config_path)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"no vault at {root} ({CONFIG_FILE} missing); run 'aibuddy init'") from None
    signature = [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]  # (the inode: an editor's replace)

    def cache_paths() -> Iterator[Path]:
        yield root / CACHE_DIR / "config.json"
        fallback = user_cache_dir(root, environ)
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


def locate_vault(explicit: str | None, settings: Settings, cwd: Path) -> Vault:
    """--vault, then AIBUDDY_VAULT, then the nearest aibuddy.toml above the working directory."""
    chosen = explicit or settings.vault
    if chosen:
        return Vault.open(Path(chosen).expanduser(), settings.environ)
    root = find_vault_root(cwd)
    if root is None:
        raise NotFound(
            f"no vault found in {cwd} or above; run 'aibuddy init', pass --vault or set AIBUDDY_VAULT"
        )
    return Vault.open(root, settings.environ)


def resolve_user(explicit: str | None, settings: Settings, config: Config) -> str:
    """--user, then AIBUDDY_USER, then default_user from aibuddy.toml."""
    user = explicit or settings.user or config.default_user
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


def init_vault(path: Path, user: str, environ: Mapping[str, str] = os.environ) -> Vault:
    """Create the vault layout, aibuddy.toml and a .gitignore for the derived cache."""
    validate_user_name(user)
    if (path / CONFIG_FILE).exists():
        raise Conflict(f"{path / CONFIG_FILE} already exists")
    path.mkdir(parents=True, exist_ok=True)
    for folder in VAULT_FOLDERS:
        (path / folder).mkdir(parents=True, exist_ok=True)
    add_lines(path / ".gitignore", GITIGNORE_LINES)
    write_attributes(path)  # the merge driver's routes; `aibuddy git setup` registers the driver
    (path / CONFIG_FILE).write_text(config_template(user), encoding="utf-8")
    return Vault.open(path, environ)
