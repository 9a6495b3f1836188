"""`aibuddy scan`: credential-shaped values in a vault's files, and the pre-commit hook behind it.

A scan reads the files people and aibuddy keep (memory records, knowledge documents and their
sidecars, tables, tasks, the decision logs under `.aibuddy/logs`, and `aibuddy.toml`) and
reports each value `redaction.detect.find` sees: the file, the line, the kind, never the value (at
most its provider prefix, `sk-…`); a vault served from a database is read there
(`scan_store`). A folder that is not a vault is scanned whole (except
`.git`). `--staged` reads the blobs git would commit (`git diff --cached` and the index), so the
pre-commit hook judges what is committed, not what the working tree holds now.

`--staged` also refuses files that must never be committed, whatever they hold (`unshared`):
anything under `.aibuddy` (the derived indexes and logs, which hold copies of the vault's text),
and in a team vault anything under a personal folder (`memory/`, `tasks/`, `knowledge/personal/`,
`tables/personal/`): its .gitignore keeps those out of `git add -A`, and this catches a `git add
-f` or a file git tracked from before. A deletion is no such file: `doctor --move` commits them.

`install_pre_commit` writes that hook (`aibuddy git setup` calls it): a shell script that runs
`aibuddy scan --staged` and refuses the commit when something is found. `git commit
--no-verify` bypasses it, as it does every pre-commit hook.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import AibuddyError, NotFound
from ..jsonvalues import to_json

if TYPE_CHECKING:
    from ..store.files import WalkableStore

VAULT_PARTS = ("memory", "knowledge", "tables", "tasks", ".aibuddy/logs")
VAULT_FILES = ("aibuddy.toml",)
READ_AT_ONCE = 200  # files a database scan reads in one go
MAX_BYTES = 32 << 20  # larger files are not read (none of a vault's files is meant to be)
HOOK_MARK = "# aibuddy pre-commit hook"


class ScanFinding(NamedTuple):
    path: str  # relative to the scanned folder, with /
    line: int  # 1-based
    kind: str  # api key, private key, password, token, jwt, secret
    hint: str | None  # the provider prefix (`sk-…`), never a character of the value


class Unshared(NamedTuple):
    """A staged file that must not be committed, whatever it holds, and why."""

    path: str  # relative to the scanned folder, with /
    reason: str

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class ScanResult(NamedTuple):
    root: str
    staged: bool
    scanned: int  # files read
    findings: list[ScanFinding]
    unshared: list[Unshared] = []  # (--staged only)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"findings": [to_json(f) for f in self.findings], "scanned": self.scanned}
        if self.staged:
            data["unshared"] = [u.to_json() for u in self.unshared]
        return data

    def joined(self, other: ScanResult) -> ScanResult:
        """This scan and one of another folder (a team vault's personal vault), whose findings
        are named by their absolute path so that they are not taken for the shared folder's."""
        elsewhere = [f._replace(path=f"{other.root}/{f.path}") for f in other.findings]
        return self._replace(scanned=self.scanned + other.scanned, findings=[*self.findings, *elsewhere])


def scan_text(path: str, text: str) -> list[ScanFinding]:
    from .detect import find

    findings, line, at = [], 1, 0
    for found in find(text):  # in order: each line number counts on from the one before
        line, at = line + text.count("\n", at, found.start), found.start
        findings.append(ScanFinding(path, line, found.kind, found.hint))
    return findings


def _decoded(data: bytes) -> str | None:
    """A file's text, or None for what is not text (a NUL byte in its first 8 KiB)."""
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _in_vault(relative: str) -> bool:
    return relative in VAULT_FILES or any(
        relative == part or relative.startswith(part + "/") for part in VAULT_PARTS
    )


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, file) for each file a scan of root reads, sorted."""
    if root.is_file():
        yield root.name, root
        return
    is_vault = (root / "aibuddy.toml").is_file()
    found: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in names:
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if is_vault and not _in_vault(relative):
                continue
            found.append((relative, path))
    yield from sorted(found)


def scan_folder(root: Path) -> ScanResult:
    """The findings in the files under root (a vault: its parts; any other folder: all of it)."""
    if not root.exists():
        raise NotFound(f"{root} does not exist")
    findings: list[ScanFinding] = []
    scanned = 0
    for relative, path in _files(root):
        try:
            if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_BYTES:
                continue
            text = _decoded(path.read_bytes())
        except OSError:
            continue  # unreadable: nothing to report about its contents
        if text is None:
            continue
        scanned += 1
        findings.extend(scan_text(relative, text))
    return ScanResult(str(root), False, scanned, findings)


def scan_store(store: WalkableStore, root: Path) -> ScanResult:
    """The findings in a database vault: the parts from the store that serves them (files left in
    the folder under those names are not the vault's), `aibuddy.toml` from the folder root."""
    findings: list[ScanFinding] = []
    scanned = 0
    keys = [key for part in VAULT_PARTS for key in store.walk(part)]
    for start in range(0, len(keys), READ_AT_ONCE):  # (a query a batch, not one a file)
        # (a file gone since the listing is left out of the answer)
        for key, (data, _) in store.read_many(keys[start : start + READ_AT_ONCE]).items():
            text = _decoded(data) if len(data) <= MAX_BYTES else None
            if text is None:
                continue
            scanned += 1
            findings.extend(scan_text(key, text))
    local = [scan_folder(root / name) for name in VAULT_FILES if (root / name).is_file()]
    for result in local:
        scanned += result.scanned
        findings.extend(result.findings)
    return ScanResult(str(root), False, scanned, sorted(findings))


# --- git: the staged files, and the hook ---------------------------------------------------------


def _git(root: Path, *args: str, input: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], input=input, capture_output=True, check=False)
    except OSError as exc:
        raise AibuddyError(f"git could not be run: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message:
            raise NotFound(f"{root} is not in a git repository")
        raise AibuddyError(f"git {args[0]} failed: {message}")
    return done.stdout


def _staged_blobs(root: Path, paths: list[str]) -> Iterator[tuple[str, bytes]]:
    """The staged contents of paths (relative to the repository's top), through one cat-file,
    asked by blob id (a name holding a newline cannot be asked by name)."""
    if not paths:
        return
    ids: dict[str, str] = {}
    listing = _git(root, "ls-files", "--stage", "-z").decode("utf-8", "replace")
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, blob, stage = meta.split()
        if stage == "0" and mode != "160000":  # (a submodule is no file)
            ids[path] = blob
    wanted = [p for p in paths if p in ids]
    if not wanted:
        return
    out = _git(root, "cat-file", "--batch", input="".join(f"{ids[p]}\n" for p in wanted).encode("ascii"))
    at = 0
    for path in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if header[-1:] == [b"missing"] or len(header) != 3:  # nothing staged under that path
            continue
        size = int(header[2])
        if header[1] == b"blob":
            yield path, out[at : at + size]
        at += size + 1


CACHE_REASON = "aibuddy's derived cache (indexes, logs), which holds copies of the vault's text"
PERSONAL_REASON = "a personal file, which a team vault keeps in its owner's personal vault"


def unshared(relative: str, team: bool) -> str | None:
    """Why the vault file at relative must never be committed (None: it may be)."""
    from ..store.composed import PERSONAL_FOLDERS
    from ..vault import CACHE_DIR

    if relative == CACHE_DIR or relative.startswith(f"{CACHE_DIR}/"):
        return CACHE_REASON
    if team and relative.startswith(tuple(f"{folder}/" for folder in PERSONAL_FOLDERS)):
        return PERSONAL_REASON
    return None


def _is_team_vault(root: Path) -> bool:
    from ..vault import Vault

    return Vault.open(root).config.team_vault


def scan_staged(root: Path) -> ScanResult:
    """The findings in the vault files staged for the next commit of root's repository, and the
    staged files that must not be committed at all (`unshared`)."""
    top = Path(_git(root, "rev-parse", "--show-toplevel").decode("utf-8").strip())
    prefix = _git(root, "rev-parse", "--show-prefix").decode("utf-8").strip()
    # (T too: a symlink that became a file holding a key is a change of type)
    names = _git(top, "diff", "--cached", "--name-only", "-z", "--diff-filter=ACMRT").decode(
        "utf-8", "replace"
    )
    is_vault = (root / "aibuddy.toml").is_file()
    team = is_vault and _is_team_vault(root)
    staged: list[tuple[str, str]] = []  # (path in the repository, path in the vault)
    refused: list[Unshared] = []
    for name in filter(None, names.split("\0")):
        if not name.startswith(prefix):
            continue
        relative = name[len(prefix) :]
        reason = unshared(relative, team) if is_vault else None
        if reason is not None:
            refused.append(Unshared(relative, reason))
        if _in_vault(relative) or not is_vault:
            staged.append((name, relative))
    findings: list[ScanFinding] = []
    scanned = 0
    inside = dict(staged)
    for name, data in _staged_blobs(top, [name for name, _ in staged]):
        text = _decoded(data)
        if text is None:
            continue
        scanned += 1
        findings.extend(scan_text(inside[name], text))
    return ScanResult(str(root), True, scanned, findings, refused)


class HookResult(NamedTuple):
    path: str  # the hook file
    installed: bool
    reason: str | None  # why it was not installed

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def hook_script(vault_prefix: str) -> str:
    """The pre-commit script for a vault at vault_prefix (relative to the repository's top).
    It starts aibuddy as this interpreter with the package (its absolute path, found at set-up),
    else as `aibuddy` on PATH; with neither, it refuses the commit and says why."""
    interpreter = shlex.quote(sys.executable)
    vault = shlex.quote(vault_prefix or ".")
    return f"""#!/bin/sh
{HOOK_MARK} (written by `aibuddy git setup`; it rewrites this file, leave the line above).
# Refuses a commit whose staged vault files hold credential-shaped values (API keys, private
# keys, passwords, tokens), or are files never to be shared (aibuddy's cache; in a team vault a
# personal file): `aibuddy scan --staged`. Bypass once: git commit --no-verify
top=$(git rev-parse --show-toplevel) || exit 1
vault="$top/"{vault}
if [ -x {interpreter} ] && {interpreter} -c 'import aibuddy_cli' >/dev/null 2>&1; then
    set -- {interpreter} -m aibuddy_cli
elif command -v aibuddy >/dev/null 2>&1; then
    set -- aibuddy
else
    echo "aibuddy pre-commit: aibuddy is not installed here, so the vault files cannot be checked;" >&2
    echo "install it, or commit with git commit --no-verify" >&2
    exit 1
fi
"$@" scan --staged "$vault"  # a folder, not --vault: a personal vault has no aibuddy.toml
status=$?
if [ "$status" -eq 4 ]; then
    echo "aibuddy pre-commit: commit refused: the staged vault files above hold" \
        "credential-shaped values (remove them: edit the files, aibuddy memory update," \
        "table update-rows) or must not be shared (git rm --cached them)," \
        "or commit anyway with git commit --no-verify" >&2
    exit 1
elif [ "$status" -ne 0 ]; then
    echo "aibuddy pre-commit: aibuddy scan failed (exit $status);" \
        "commit with git commit --no-verify to skip the check" >&2
    exit 1
fi
exit 0
"""


def install_pre_commit(root: Path) -> HookResult:
    """Write the pre-commit hook of root's repository (core.hooksPath respected). A hook that is
    not aibuddy's is never overwritten: it is reported, with what to add to it."""
    hooks = _git(root, "rev-parse", "--git-path", "hooks").decode("utf-8").strip()
    folder = (root / hooks).resolve()  # --git-path answers relative to git -C's folder
    hook = folder / "pre-commit"
    prefix = _git(root, "rev-parse", "--show-prefix").decode("utf-8").strip().rstrip("/")
    try:
        existing = hook.read_text(encoding="utf-8", errors="replace") if hook.exists() else None
    except OSError as exc:
        return HookResult(str(hook), False, f"cannot read the existing hook: {exc.strerror or exc}")
    if existing is not None and HOOK_MARK not in existing:
        return HookResult(
            str(hook),
            False,
            "a pre-commit hook that is not aibuddy's exists; left as it is: add "
            f"`aibuddy scan --staged {prefix or '.'}` to it",
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        hook.write_text(hook_script(prefix), encoding="utf-8")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        return HookResult(str(hook), False, f"cannot write the hook: {exc.strerror or exc}")
    return HookResult(str(hook), True, None)


def describe_findings(findings: Iterable[ScanFinding]) -> list[str]:
    """One line per finding: `memory/demo/x.md:3: api key (sk-…)`."""
    return [
        f"{PurePosixPath(f.path)}:{f.line}: {f.kind}" + (f" ({f.hint})" if f.hint else "") for f in findings
    ]
