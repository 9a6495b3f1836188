"""A team vault: where each person's files live, and getting them out of the shared tree.

A vault whose aibuddy.toml has a `[teams.<team>]` table is a team vault: its folder is a git
repository pushed to the team's remote, so anything in it is readable by whoever can clone. A
person's memory, tasks, personal documents and personal tables therefore live in a *personal
vault* on their own machine, which the session composes with the shared one at run time
(`store.composed.RoutedStore`). Where the personal vault is:

1. `AIBUDDY_PERSONAL_VAULT`, when set: that folder, exactly. A path on one person's machine has
   no place in a file the whole team shares, so it is an environment setting, never a key.
2. Else `$XDG_DATA_HOME/aibuddy/vaults/<vault id>/` (default `~/.local/share/...`), private
   (0700). The vault id is `vault_id` in aibuddy.toml: the same in every clone, so a person who
   clones the vault again, or keeps two clones, finds their own files. `aibuddy git setup` writes
   it (made from the repository's first commit, so two members who run it before either pushed
   write the same line and git merges them cleanly); it is a key, not derived at every run,
   because a history rewrite (a purge with `git filter-repo`) changes every commit and must not
   move anyone's personal vault.
3. A team vault that has no vault_id yet uses a folder named after this clone's path, and says
   so once; `aibuddy git setup` gives the vault its id and moves that folder's files to the
   id's. A command that finds the id arrived by a pull instead (a teammate's `git setup`) moves
   them too, so what a person saved before stays theirs and visible; a file the id's folder
   holds differently stays where it was, and `doctor` names that folder (`unused_folders`).

The personal vault has the vault's own layout (`memory/<user>/…`), a `.gitignore` for its
`.aibuddy/` and the merge driver's `.gitattributes`, so its owner can make it a git repository
with a private remote (`aibuddy git setup --personal`). A single-person vault (no `[teams]`)
keeps everything in its one folder, as before.

Defence in depth: `aibuddy git setup` and `aibuddy doctor --move` add the personal folders to the
shared vault's .gitignore, so a file put there by hand is not committed by `git add -A` either.

A vault that was shared before it became a team vault may hold personal files in its tree (and
its history). `doctor` lists them; `doctor --move` copies the current user's to the personal
vault, checks each copy byte for byte, and only then removes the original from git's index
(`git rm --cached`) and the work tree. History is never rewritten here; the README says how a
team purges it if it must.

Receives the environment's settings as an argument: only the composition root reads them.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from ..config import CONFIG_FILE
from ..errors import AibuddyError, Conflict, InvalidInput, NotFound, UsageError
from ..settings import Settings
from ..store.composed import PERSONAL_FOLDERS, RoutedStore
from ..store.files import TEMP_PREFIX, FileStore, Store, atomic_write
from ..store.folder_watch import Watch
from ..vault import CACHE_DIR, GITIGNORE_LINES, Vault, add_lines, is_user_name

PERSONAL_VAULT_ENV = "AIBUDDY_PERSONAL_VAULT"
# What the shared vault's .gitignore lists in a team vault: every user's personal folders, anchored
# at the vault's root (a bare `tasks/` would also match a folder of that name anywhere below).
# The derived caches too: .aibuddy/ holds indexes, logs and undo snapshots of personal text.
SHARED_GITIGNORE_LINES = (*GITIGNORE_LINES, *(f"/{folder}/" for folder in PERSONAL_FOLDERS))
HINT_MARKER = f"{CACHE_DIR}/team-setup-hint"
# How a command's notices about an unfinished team vault begin (`doctor` and `git setup` leave
# them out: they report the same themselves, or fix it).
NOTICE = "this team vault"


def is_team_vault(vault: Vault) -> bool:
    return vault.config.team_vault


class PersonalVault(NamedTuple):
    root: Path
    vault_id: str | None  # the vault's vault_id (None if it has none), or the clone path's id
    source: str  # how the folder was chosen: "environment", "vault_id", "clone path"

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.root), "vault_id": self.vault_id, "chosen_by": self.source}


def _data_home(settings: Settings) -> Path:
    """$XDG_DATA_HOME, else ~/.local/share (a relative XDG_DATA_HOME is ignored: xdg.base_dir)."""
    from ..xdg import base_dir

    base = base_dir(settings.environ, "XDG_DATA_HOME")
    if base is not None:
        return base
    home = settings.environ.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home):
        raise UsageError(
            f"no home folder for this team vault's personal files: set {PERSONAL_VAULT_ENV} to a folder"
        )
    return Path(home) / ".local" / "share"


def clone_id(root: Path) -> str:
    """The id of a team vault without vault_id: its folder name and a hash of this clone's path."""
    name = re.sub(r"[^a-z0-9._-]", "_", root.name.lower())[:40].lstrip("._") or "vault"
    return f"{name}-{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}"


def personal_vaults_home(settings: Settings) -> Path:
    return (_data_home(settings) / "aibuddy" / "vaults").resolve()


def personal_vault(vault: Vault, settings: Settings) -> PersonalVault:
    """Where the current person's files of this team vault live (see the module's docstring)."""
    explicit = settings.personal_vault
    if explicit:
        chosen = PersonalVault(Path(explicit).expanduser().resolve(), vault.config.vault_id, "environment")
    elif vault.config.vault_id:
        vault_id = vault.config.vault_id
        chosen = PersonalVault(personal_vaults_home(settings) / vault_id, vault_id, "vault_id")
    else:
        vault_id = clone_id(vault.root)
        chosen = PersonalVault(personal_vaults_home(settings) / vault_id, vault_id, "clone path")
    root, shared = chosen.root, vault.root
    # What the team's remote receives is the repository that holds the vault, all it does not ignore.
    pushed = next((folder for folder in (shared, *shared.parents) if (folder / ".git").exists()), shared)
    inside = root == shared or shared in root.parents or root in shared.parents
    if inside or (pushed in root.parents and not _ignored_by_git(pushed, root)):
        raise InvalidInput(
            f"the personal vault {root} must be outside the shared vault {shared} and what its "
            f"repository {pushed} pushes (and not hold it): what is there reaches the team's remote; "
            f"change {PERSONAL_VAULT_ENV}"
        )
    return chosen


def _ignored_by_git(repository: Path, folder: Path) -> bool:
    """Whether git ignores folder in repository (a dotfiles repository at ~ that ignores ~/.local)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(repository), "check-ignore", "-q", str(folder) + "/"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def prepare_personal_vault(root: Path) -> None:
    """Make the personal vault's folder (private) with its .gitignore and .gitattributes, the
    first time. Best effort: a folder that cannot be made fails the first write, naming it."""
    if root.is_dir() and (root / ".gitignore").exists():
        return
    try:
        _private_folder(root.parent)
        os.makedirs(root, mode=0o700, exist_ok=True)
        add_lines(root / ".gitignore", GITIGNORE_LINES)
        from .merge_driver import write_attributes

        write_attributes(root)
    except OSError:
        pass


def _private_folder(folder: Path) -> None:
    """folder, made readable by its owner only if it is new (the personal vaults' parent)."""
    if not folder.is_dir():
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            pass  # the first write says what it cannot write


def compose(
    vault: Vault, user: str, settings: Settings, warnings: list[str], watch: Watch | None = None
) -> tuple[RoutedStore, Adopted | None]:
    """The store of user in a team vault (the session asks only for one): its folder composed
    with the user's personal vault; and what it moved there from the folder this clone used
    before the vault had its vault_id (`adopt_folder`), if that folder was still there. What
    needs the user's attention goes to warnings; watch: see FileStore."""
    chosen = personal_vault(vault, settings)
    if chosen.source == "clone path":  # made by the first write, if any before `git setup` moves it
        _private_folder(chosen.root.parent)
    else:
        prepare_personal_vault(chosen.root)
    adopted = _adopt_clone_folder(vault, settings, chosen, warnings)
    warnings.extend(_notices(vault, user, chosen))
    shared = FileStore(vault.root, vault.locks_dir(), watch)
    personal = FileStore(chosen.root, chosen.root / CACHE_DIR / "locks", watch)
    return RoutedStore(shared, personal, user), adopted


def _notices(vault: Vault, user: str, chosen: PersonalVault) -> list[str]:
    """What a command in a team vault says: the user's files left in the shared tree, every time
    (aibuddy no longer reads them there); a set-up that is not finished, once per clone."""
    notices = []
    left = personal_files(vault.root, user)
    if left:
        notices.append(
            f"{NOTICE}'s shared folder still holds {len(left)} personal file(s) of {user} "
            f"({left[0]}{', …' if len(left) > 1 else ''}), which its git remote receives and aibuddy no "
            f"longer reads there: `aibuddy doctor` lists them, `aibuddy doctor --move` moves them to "
            f"your personal vault {chosen.root}"
        )
    missing = missing_ignore_lines(vault.root)
    if (missing or chosen.source == "clone path") and not _hint_shown(vault.root):
        what = "has no vault_id" if chosen.source == "clone path" else f"does not ignore {', '.join(missing)}"
        notices.append(f"{NOTICE} {what}: run `aibuddy git setup` once and commit what it changes")
    return notices


def _hint_shown(root: Path) -> bool:
    """Whether the set-up hint was shown in this clone already (and mark it shown)."""
    marker = root / HINT_MARKER
    try:
        if marker.exists():
            return True
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("shown\n", encoding="utf-8")
    except OSError:
        return True  # a read-only clone: nothing to remember it by, so say nothing
    return False


# --- what the shared tree holds -------------------------------------------------------------------


def personal_files(root: Path, user: str) -> list[str]:
    """The keys of the files under user's personal folders in the folder root, sorted."""
    keys: list[str] = []
    for folder in PERSONAL_FOLDERS:
        top = root.joinpath(*folder.split("/"), user)
        if not top.is_dir() or top.is_symlink():
            continue
        for current, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(current, d))]
            relative = Path(current).relative_to(root).as_posix()
            keys += [f"{relative}/{name}" for name in files if not name.startswith(TEMP_PREFIX)]
    return sorted(keys)


def personal_owners(root: Path) -> list[str]:
    """Every user with personal files in the folder root."""
    owners: set[str] = set()
    for folder in PERSONAL_FOLDERS:
        top = root.joinpath(*folder.split("/"))
        try:
            names = [item.name for item in os.scandir(top) if item.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        owners.update(name for name in names if is_user_name(name) and personal_files(root, name))
    return sorted(owners)


def missing_ignore_lines(root: Path) -> list[str]:
    try:
        present = set((root / ".gitignore").read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        present = set()
    return [line for line in SHARED_GITIGNORE_LINES if line not in present]


# --- git ------------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> Any:
    import subprocess  # not on a command's path unless git is asked something

    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def tracked(root: Path, keys: Iterable[str]) -> set[str]:
    """Which of keys git tracks in the repository holding root (none outside a repository)."""
    keys = list(keys)
    if not keys:
        return set()
    listed = _git(root, "--literal-pathspecs", "ls-files", "-z", "--full-name", "--", *keys)
    if listed.returncode != 0:
        return set()
    top = _git(root, "rev-parse", "--show-prefix").stdout.strip()  # root's path in the repository
    return {name[len(top) :] for name in listed.stdout.split("\0") if name.startswith(top) and name}


def staged_apart(root: Path, keys: Iterable[str]) -> set[str]:
    """Which of keys git's index holds with bytes that are neither HEAD's nor the work tree's
    (edited, `git add`-ed, edited again): `git rm --cached` refuses to drop those."""
    keys = list(keys)
    if not keys:
        return set()
    found: list[set[str]] = []
    for against in (("--cached",), ()):  # the index against HEAD, then the work tree against it
        names = ("--name-only", "-z", "--relative", "--", *keys)
        listed = _git(root, "--literal-pathspecs", "diff", *against, *names)
        found.append(set(filter(None, listed.stdout.split("\0"))) if listed.returncode == 0 else set())
    return found[0] & found[1]


def first_commit_id(root: Path) -> str | None:
    """A vault id made from the repository's first commit: the same in every clone."""
    found = _git(root, "rev-list", "--max-parents=0", "HEAD")
    roots = sorted(found.stdout.split()) if found.returncode == 0 else []
    return roots[0][:16] if roots else None


# --- set-up: vault_id, .gitignore -----------------------------------------------------------------


def with_vault_id(text: str, vault_id: str) -> str:
    """aibuddy.toml's text with a `vault_id` line added at the top (after leading comments, where
    a top-level key is always valid TOML); everything else kept as it is."""
    newline = "\r\n" if "\r\n" in text else "\n"
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = text[len(bom) :].splitlines(keepends=True)
    at = 0
    while at < len(lines) and lines[at].lstrip().startswith("#"):
        at += 1
    lines.insert(at, f'vault_id = "{vault_id}"{newline}')
    return bom + "".join(lines)


def assign_vault_id(vault: Vault) -> str:
    """Write a vault_id into aibuddy.toml (checked by parsing the result); returns it."""
    import secrets
    import tomllib

    vault_id = first_commit_id(vault.root) or secrets.token_hex(8)
    path = vault.root / CONFIG_FILE
    text = path.read_text(encoding="utf-8")
    updated = with_vault_id(text, vault_id)
    try:
        parsed = tomllib.loads(updated)
    except tomllib.TOMLDecodeError:
        parsed = {}
    if parsed.get("vault_id") != vault_id:
        raise Conflict(f'could not add vault_id to {path}: add `vault_id = "{vault_id}"` at its top yourself')
    atomic_write(path, updated.encode("utf-8"))
    return vault_id


class TeamSetup(NamedTuple):
    """What `aibuddy git setup` (and `doctor --move`) did to make a team vault safe."""

    personal_vault: str
    vault_id: str
    vault_id_added: bool
    gitignore_added: list[str]
    moved_folder: str | None  # the clone-path personal vault, whose files moved to the vault id's folder
    stranded_folder: str | None  # that folder, still holding files the personal vault holds differently
    personal_files: dict[str, int]  # user -> files of theirs still in the shared tree

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    def lines(self, user: str) -> list[str]:
        said = [f"personal vault: {self.personal_vault}"]
        if self.vault_id_added:
            said.append(f"vault_id {self.vault_id} added to {CONFIG_FILE}: commit it")
        if self.gitignore_added:
            said.append(f".gitignore now lists {', '.join(self.gitignore_added)}: commit it")
        if self.moved_folder:
            said.append(f"moved {self.moved_folder} there")
        if self.stranded_folder:
            said.append(
                f"{self.stranded_folder} still holds personal files of this clone that your personal "
                "vault holds differently: `aibuddy doctor` lists them"
            )
        for owner, count in self.personal_files.items():
            fix = "`aibuddy doctor --move` moves them"
            if owner != user:
                fix = f"{owner} moves them from a clone of theirs ({fix})"
            said.append(f"the shared folder still holds {count} personal file(s) of {owner}: {fix}")
        return said


def secure_shared_vault(
    vault: Vault, user: str, settings: Settings, adopted: Adopted | None = None
) -> TeamSetup | None:
    """In a team vault: give it a vault_id, make its .gitignore list the personal folders, move
    this clone's earlier personal folder into the personal vault, and say whose personal files
    are still in its tree. adopted: what the session moved already (reported as moved here).
    None for a single-person vault."""
    if not is_team_vault(vault):
        return None
    added = False
    vault_id = vault.config.vault_id
    if not vault_id:
        vault_id = assign_vault_id(vault)
        vault = Vault.open(vault.root, vault.environ)
        added = True
    chosen = personal_vault(vault, settings)
    prepare_personal_vault(chosen.root)
    done = [adopted] if adopted is not None else []
    earlier = _clone_folder(vault, settings, chosen)
    if earlier is not None and earlier.is_dir():
        done.append(adopt_folder(earlier, chosen.root))
    moved = next((item.folder for item in done if item.moved), None)
    stranded = next((item.folder for item in done if item.kept), None)
    missing = missing_ignore_lines(vault.root)
    add_lines(vault.root / ".gitignore", missing)
    counts = {owner: len(personal_files(vault.root, owner)) for owner in personal_owners(vault.root)}
    return TeamSetup(str(chosen.root), vault_id, added, missing, moved, stranded, counts)


def setup_personal_repository(root: Path) -> str:
    """Make the personal vault a git repository of its own (for a private remote); its top."""
    prepare_personal_vault(root)
    found = _git(root, "rev-parse", "--show-toplevel")
    if found.returncode != 0 or Path(found.stdout.strip()).resolve() != root.resolve():
        done = _git(root, "init", "-q")
        if done.returncode != 0:
            raise AibuddyError(f"git init {root} failed: {done.stderr.strip()}")
    from .merge_driver import setup

    return setup(root).repository


# --- the move -------------------------------------------------------------------------------------


class Skipped(NamedTuple):
    key: str
    reason: str


class Report(NamedTuple):
    """`aibuddy doctor`: where a team vault's personal files are, and what a move did."""

    vault: str
    user: str
    team_vault: bool
    personal_vault: dict[str, Any] | None
    gitignore_missing: list[str]
    personal_files: dict[str, list[str]]  # user -> their files in the shared tree (tracked or not)
    tracked: list[str]  # which of those git tracks (in the team's history from the next push on)
    moved: list[str]  # keys from the shared tree; absolute paths from an unused personal folder
    skipped: list[Skipped]
    dry_run: bool
    unused_personal_folders: list[UnusedFolder]

    def to_json(self) -> dict[str, Any]:
        data = self._asdict()
        data["skipped"] = [s._asdict() for s in self.skipped]
        data["unused_personal_folders"] = [folder.to_json() for folder in self.unused_personal_folders]
        return data

    def lines(self) -> list[str]:
        if not self.team_vault:
            return [f"{self.vault} is a single-person vault: everything stays in its one folder"]
        assert self.personal_vault is not None
        said = [f"personal vault of {self.user}: {self.personal_vault['path']}"]
        if self.gitignore_missing:
            missing = ", ".join(self.gitignore_missing)
            said.append(f".gitignore does not list {missing}: run `aibuddy git setup`")
        if self.personal_vault["chosen_by"] == "clone path":
            said.append(f"no vault_id in {CONFIG_FILE}: run `aibuddy git setup`")
        verb = "would move" if self.dry_run else "moved"
        said += [f"{verb} {key}" for key in self.moved]
        said += [f"kept {s.key}: {s.reason}" for s in self.skipped]
        for owner, keys in self.personal_files.items():
            said.append(f"the shared folder holds {len(keys)} personal file(s) of {owner}:")
            said += [f"  {key}{' (tracked by git)' if key in self.tracked else ''}" for key in keys]
        for folder in self.unused_personal_folders:
            said.append(
                f"{folder.path} is a personal folder this vault does not use ({folder.why}); "
                f"it holds {len(folder.files)} personal file(s):"
            )
            said += [f"  {key}" for key in folder.files]
        if not any(self.personal_files.values()) and not self.moved:
            said.append("no personal files in the shared folder")
        if (self.user in self.personal_files or self.unused_personal_folders) and not self.dry_run:
            said.append(
                "`aibuddy doctor --move` moves yours into your personal vault (`--dry-run` lists them first)"
            )
        if any(not os.path.isabs(key) for key in self.moved) and not self.dry_run:  # the shared tree's
            said.append(
                "commit the removal; the files stay in the git history: README.md, \"Team vaults\", "
                "says how a team purges it"
            )
        return said


def doctor(vault: Vault, user: str, settings: Settings, *, move: bool, dry_run: bool) -> Report:
    """Report where the team vault's personal files are, and the personal folders of this vault it
    does not use; with move, move the user's own files from the shared tree and everything in
    those folders into the personal vault (after `secure_shared_vault`, so it is the one the
    vault id names)."""
    if not is_team_vault(vault):
        return Report(str(vault.root), user, False, None, [], {}, [], [], [], dry_run, [])
    moved: list[str] = []
    skipped: list[Skipped] = []
    if move and not dry_run:
        secure_shared_vault(vault, user, settings)
        vault = Vault.open(vault.root, vault.environ)
        root = personal_vault(vault, settings).root
        moved, skipped = move_personal_files(vault, user, root)
        for folder in unused_folders(vault, settings):
            done = adopt_folder(Path(folder.path), root)
            moved += [f"{done.folder}/{key}" for key in done.moved]
            skipped += [Skipped(f"{done.folder}/{kept.key}", kept.reason) for kept in done.kept]
    elif move:
        moved = personal_files(vault.root, user)
        unused = unused_folders(vault, settings)
        moved += [f"{folder.path}/{key}" for folder in unused for key in folder.files]
    files = {owner: personal_files(vault.root, owner) for owner in personal_owners(vault.root)}
    chosen = personal_vault(vault, settings)
    return Report(
        str(vault.root),
        user,
        True,
        chosen.to_json(),
        missing_ignore_lines(vault.root),
        files,
        sorted(tracked(vault.root, [key for keys in files.values() for key in keys])),
        moved,
        skipped,
        dry_run,
        unused_folders(vault, settings),
    )


def unit_of(key: str) -> str:
    """The thing a personal file belongs to: tasks/<u>/<id>, memory/<u>/<name> (record and
    history), knowledge/personal/<u>/<doc> (body and sidecar, either status) or
    tables/personal/<u>/<table> (rows and schema)."""
    parts = key.split("/")
    if parts[0] == "tasks":
        return "/".join(parts[:3])
    name = parts[-1]
    for suffix in (".meta.json", ".schema.json", ".jsonl", ".csv", ".md", ".txt"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if parts[0] == "memory":
        return f"memory/{parts[1]}/{name}"
    if parts[0] == "knowledge":
        return f"knowledge/personal/{parts[2]}/{name}"
    return "/".join([*parts[:-1], name])


def _copy_units(
    source: FileStore, target: FileStore, user: str, keys: list[str], stuck: Mapping[str, str]
) -> tuple[list[str], list[Skipped]]:
    """Copy keys (user's personal files, sorted) from source to target, checking each copy; the caller
    removes the originals of the keys copied. Files that only make sense together (a task's
    folder, a record and its history, a document and its sidecar, a table and its schema) go
    together or not at all: a unit target holds with other files or bytes is kept back whole (an
    old t1's messages must never join the new t1 a personal vault numbered from 1 again), and so
    is one stuck names (with its reason). A file already in target with the same bytes counts as
    copied; nothing in target is ever overwritten."""
    theirs: dict[str, list[str]] = {}
    for key in personal_files(target.root, user):
        theirs.setdefault(unit_of(key), []).append(key)
    refused = {
        unit
        for unit, found in theirs.items()
        if any(key not in keys or target.read(key)[0] != source.read(key)[0] for key in found)
    }
    copied: list[str] = []
    skipped: list[Skipped] = []
    for key in keys:
        unit = unit_of(key)
        if unit in refused:
            skipped.append(Skipped(key, f"the personal vault holds a different {unit}"))
            continue
        if unit in stuck:
            skipped.append(Skipped(key, f"{unit} {stuck[unit]}"))
            continue
        try:
            data, entry = source.read(key)
        except (AibuddyError, OSError) as exc:
            skipped.append(Skipped(key, getattr(exc, "message", None) or str(exc)))
            continue
        try:
            if target.exists(key):
                if target.read(key)[0] != data:
                    skipped.append(Skipped(key, "the personal vault holds a different file there"))
                    continue
            else:
                target.write(key, data, create=True)
                # Keep the file time: records without header dates are ordered by it.
                os.utime(target.path(key), ns=(entry.mtime_ns, entry.mtime_ns))
            if hashlib.sha256(target.read(key)[0]).digest() != hashlib.sha256(data).digest():
                skipped.append(Skipped(key, "the copy in the personal vault does not match"))
                continue
        except (AibuddyError, OSError) as exc:
            skipped.append(Skipped(key, getattr(exc, "message", None) or str(exc)))
            continue
        copied.append(key)
    return copied, skipped


def _delete(store: FileStore, keys: Iterable[str]) -> None:
    for key in keys:
        try:
            store.delete(key)
        except NotFound:
            pass


def move_personal_files(vault: Vault, user: str, personal_root: Path) -> tuple[list[str], list[Skipped]]:
    """Copy user's files from the shared tree to the personal vault at personal_root, check each
    copy, then take the original out of git's index and the work tree. A file the personal vault
    holds with other bytes is kept where it is (never overwritten); nothing leaves git's history.
    Holds the locks of every writer of those files meanwhile."""
    prepare_personal_vault(personal_root)
    shared = FileStore(vault.root, vault.locks_dir())
    personal = FileStore(personal_root, personal_root / CACHE_DIR / "locks")
    store = RoutedStore(shared, personal, user)
    with _locks_of(store, user):
        keys = personal_files(vault.root, user)
        why = "has changes staged apart from the file: git restore --staged, then run this again"
        stuck = {unit_of(key): why for key in staged_apart(vault.root, keys)}
        moved, skipped = _copy_units(shared, personal, user, keys, stuck)
        in_git = tracked(vault.root, moved)
        if in_git:
            removed = _git(vault.root, "--literal-pathspecs", "rm", "--cached", "-q", "--", *sorted(in_git))
            if removed.returncode != 0:
                raise AibuddyError(f"git rm --cached failed: {removed.stderr.strip()}")
        _delete(shared, moved)
        _remove_empty_folders(vault.root, user)
    return moved, skipped


@contextmanager
def _locks_of(store: Store, user: str, timeout: float = 30.0) -> Iterator[None]:
    """The locks every writer of user's personal files takes, held on store."""
    with (
        store.lock(f"memory-{user}", timeout),
        store.lock(f"tasks-{user}", timeout),
        store.lock("knowledge", timeout),
        store.lock("tables", timeout),
    ):
        yield


def _remove_empty_folders(root: Path, user: str) -> None:
    for folder in PERSONAL_FOLDERS:
        top = root.joinpath(*folder.split("/"), user)
        if not top.is_dir() or top.is_symlink():
            continue
        for current, _, _ in sorted(os.walk(top), key=lambda walked: -len(walked[0])):
            try:
                os.rmdir(current)
            except OSError:
                pass  # not empty: something was kept


# --- personal folders this vault does not use ----------------------------------------------------


class UnusedFolder(NamedTuple):
    """A personal folder of this vault that is not its personal vault now (`doctor` names it)."""

    path: str
    why: str
    files: list[str]  # the personal files in it (keys)

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class Adopted(NamedTuple):
    """What `adopt_folder` moved from a personal folder the vault does not use into its personal
    vault, and what it kept there."""

    folder: str
    moved: list[str]
    kept: list[Skipped]


def _clone_folder(vault: Vault, settings: Settings, chosen: PersonalVault) -> Path | None:
    """The folder this clone's personal files went to before the vault had a vault_id, when its
    personal vault is another one now. This clone's alone (its path names it), so whatever is in
    it is this person's, from this clone."""
    if chosen.source == "clone path":
        return None
    try:
        folder = personal_vaults_home(settings) / clone_id(vault.root)
    except UsageError:
        return None
    return None if folder == chosen.root else folder


def _all_personal_files(root: Path) -> list[str]:
    return sorted(key for owner in personal_owners(root) for key in personal_files(root, owner))


def unused_folders(vault: Vault, settings: Settings) -> list[UnusedFolder]:
    """The personal folders of this vault on this machine that hold files and are not its personal
    vault now: this clone's from before the vault had a vault_id, and the vault id's while
    AIBUDDY_PERSONAL_VAULT names another."""
    chosen = personal_vault(vault, settings)
    candidates: list[tuple[Path, str]] = []
    earlier = _clone_folder(vault, settings, chosen)
    if earlier is not None:
        candidates.append((earlier, "this clone's, from before the vault had its vault_id"))
    if chosen.source == "environment" and vault.config.vault_id:
        try:
            by_id = personal_vaults_home(settings) / vault.config.vault_id
        except UsageError:
            by_id = chosen.root
        if by_id != chosen.root:
            candidates.append((by_id, f"the vault id's, unused while {PERSONAL_VAULT_ENV} names another"))
    found = [UnusedFolder(str(folder), why, _all_personal_files(folder)) for folder, why in candidates]
    return [folder for folder in found if folder.files]


def adopt_folder(folder: Path, personal_root: Path, timeout: float = 30.0) -> Adopted:
    """Move every user's personal files from folder, a personal folder this vault does not use,
    into its personal vault at personal_root, unit by unit as `doctor --move` does (a unit the
    personal vault holds differently stays where it is), holding both folders' locks. folder is
    removed once nothing is left in it but its locks and set-up files (never a git repository)."""
    prepare_personal_vault(personal_root)
    source = FileStore(folder, folder / CACHE_DIR / "locks")
    target = FileStore(personal_root, personal_root / CACHE_DIR / "locks")
    moved: list[str] = []
    kept: list[Skipped] = []
    for user in personal_owners(folder):
        with _locks_of(target, user, timeout), _locks_of(source, user, timeout):
            copied, skipped = _copy_units(source, target, user, personal_files(folder, user), {})
            _delete(source, copied)
            _remove_empty_folders(folder, user)
        moved += copied
        kept += skipped
    _remove_if_spent(folder)
    return Adopted(str(folder), moved, kept)


def _remove_if_spent(folder: Path) -> None:
    """Remove a personal folder that holds nothing but aibuddy's locks and set-up files."""
    import shutil

    if (folder / ".git").exists():
        return
    for current, dirs, files in os.walk(folder):
        relative = Path(current).relative_to(folder).as_posix()
        if relative == ".":
            dirs[:] = [d for d in dirs if d != CACHE_DIR]
            files = [name for name in files if name not in (".gitignore", ".gitattributes")]
        if files:
            return
    shutil.rmtree(folder, ignore_errors=True)


def _adopt_clone_folder(
    vault: Vault, settings: Settings, chosen: PersonalVault, warnings: list[str]
) -> Adopted | None:
    """At every command: the files this clone saved before the vault had its vault_id (a
    teammate's `git setup` pulled since) move into the personal vault, so they stay visible."""
    earlier = _clone_folder(vault, settings, chosen)
    if earlier is None or not earlier.is_dir():
        return None
    try:
        adopted = adopt_folder(earlier, chosen.root, timeout=5.0)
    except (AibuddyError, OSError) as exc:
        reason = getattr(exc, "message", None) or str(exc)
        warnings.append(
            f"{NOTICE}: the personal files this clone saved before it had its vault_id, in {earlier}, "
            f"could not be moved to your personal vault {chosen.root} now ({reason}): `aibuddy doctor --move`"
        )
        return None
    if adopted.moved:
        warnings.append(
            f"moved {len(adopted.moved)} personal file(s) this clone saved before the team vault had its "
            f"vault_id from {earlier} to your personal vault {chosen.root}"
        )
    if adopted.kept:
        first = adopted.kept[0].key
        warnings.append(
            f"{NOTICE}: {earlier} still holds {len(adopted.kept)} personal file(s) this clone saved before "
            f"it had its vault_id ({first}{', …' if len(adopted.kept) > 1 else ''}), which your personal "
            f"vault {chosen.root} holds differently: `aibuddy doctor` lists them; keep one by hand"
        )
    return adopted
