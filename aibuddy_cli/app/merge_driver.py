"""A vault shared through git: the `aibuddy` merge driver and its set-up.

`aibuddy init` writes a `.gitattributes` that routes memory records, tables, document sidecars and
task files to the driver; `aibuddy git setup` registers it in the repository's config (git does not
copy config into a clone). Git runs `aibuddy git merge-file %O %A %B %P` for each such file both
sides changed.

A memory record merges by field: `recallCount` adds both sides' increments to the base,
`lastRecalledAt` and `updated` take the later time, every other header key (`expires` too) and
the body take the side that changed them. When both sides changed the same one differently, the
file gets git's own conflict markers (`git merge-file`) and the driver exits non-zero, as git's
merge does: a real disagreement stays a conflict. Any other file, or one that cannot be read as it
should, is merged by `git merge-file` alone.

Rows and messages both sides added under one key or number keep the ones already shared (their
keys and numbers are in other clones) and renumber the others after them. Which side was shared
depends on what git is doing (see `replaying`): in a merge, ours (%A) is the local branch and
theirs (%B) what was pulled; in a rebase, a cherry-pick or a stash pop, ours is the branch being
built on and theirs the local work git replays onto it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ..errors import AibuddyError, MalformedRecord, NotFound
from ..git.files import ATTRIBUTES, write_attributes
from ..git.merging import CONFLICT, Merged, later, read_text, three_way

DRIVER_NAME = "aibuddy: recall telemetry and concurrent edits"


def merge_file(
    base: Path,
    current: Path,
    other: Path,
    path: str,
    *,
    replaying: bool | None = None,
    environ: Mapping[str, str] = MappingProxyType({}),
) -> int:
    """Merge other into current (in place) over base; the exit status git expects.

    replaying: whether git replays theirs onto ours (None: ask git, see `_replaying`, which reads
    the variables git sets for the driver in environ)."""
    merged: Merged | None = None
    kind = _vault_path(path)
    folder, _, name = kind.rpartition("/")
    if kind.startswith("memory/") and name.endswith(".md"):
        merged = _merged_record(base, current, other, Path(name).stem)
    elif kind.startswith("knowledge/") and name.endswith(".meta.json"):
        merged = _merged_sidecar(base, current, other)
    elif kind.startswith(("tables/", "tasks/")):
        from ..tables.merge import merged_rows, merged_schema
        from ..tasks.merge import merged_task_file

        replay = _replaying(environ) if replaying is None else replaying
        if kind.startswith("tables/") and name.endswith(".schema.json"):
            merged = merged_schema(base, current, other, replay)
        elif kind.startswith("tables/") and name.endswith(".csv"):
            merged = merged_rows(base, current, other, replay)
        elif kind.startswith("tasks/") and folder.count("/") == 2:
            merged = merged_task_file(name, base, current, other, replay)
    if merged is None:
        return _git_merge_file(base, current, other)
    current.write_bytes(merged.text.encode("utf-8"))
    return 0 if merged.clean else 1


KINDS = ("memory/", "tables/", "knowledge/", "tasks/")


def _vault_path(path: str) -> str:
    """%P relative to the vault: git gives it relative to the repository, which may hold the
    vault in a folder of its own (`aibuddy init` inside a repository). Git runs the driver at the
    top of the work tree, where the vault's aibuddy.toml is found."""
    if path.startswith(KINDS):
        return path
    parts = path.split("/")
    for at in range(1, len(parts) - 1):
        rest = "/".join(parts[at:])
        if rest.startswith(KINDS) and Path(*parts[:at], "aibuddy.toml").is_file():
            return rest
    return path


def _replaying(environ: Mapping[str, str]) -> bool:
    """Whether git is replaying theirs (%B) onto ours (%A) rather than merging theirs into ours.

    A merge (`git merge`, `git pull` without rebase) names the commits it merges in GITHEAD_*
    variables and GIT_REFLOG_ACTION "merge …"/"pull …": ours is the local branch, theirs was pulled,
    so theirs keeps its keys. A rebase (`git pull --rebase`, `pull.rebase true`, `git rebase`) has
    its state in the repository's rebase-merge/ or rebase-apply/ folder while it runs: ours is the
    upstream branch, theirs the local commit being replayed, so ours keeps them. Anything else
    git merges with a driver applies work onto HEAD (cherry-pick, revert, stash apply and pop,
    am, checkout -m): HEAD keeps its keys and the work applied moves, as in a rebase."""
    if any(name.startswith("GITHEAD_") for name in environ):
        return False
    found = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], capture_output=True, text=True)
    if found.returncode == 0:
        git_dir = Path(found.stdout.strip())
        if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
            return True
    return not environ.get("GIT_REFLOG_ACTION", "").startswith(("merge", "pull"))


def _git_merge_file(base: Path, current: Path, other: Path) -> int:
    """git's own three-way merge of the text, with its conflict markers; >0 on conflict."""
    labels = ["-L", "ours", "-L", "base", "-L", "theirs"]
    done = subprocess.run(["git", "merge-file", *labels, str(current), str(base), str(other)], check=False)
    return 1 if done.returncode != 0 else 0


def _merged_record(base: Path, current: Path, other: Path, name: str) -> Merged | None:
    """The merged record text, or None when it cannot be merged field by field."""
    from ..memory.records import line_ending, parse_record, render_record, with_line_ending

    try:
        texts = [path.read_bytes().decode("utf-8") for path in (base, current, other)]
        old, ours, theirs = (parse_record(name, text, fast=False) for text in texts)
    except (OSError, UnicodeDecodeError, MalformedRecord):
        return None
    fields = {}
    for field in ("description", "type", "provenance", "created", "expires", "body", "extra"):
        value = three_way(getattr(old, field), getattr(ours, field), getattr(theirs, field))
        if value is CONFLICT:
            return None
        fields[field] = value
    count = (
        old.recall_count + (ours.recall_count - old.recall_count) + (theirs.recall_count - old.recall_count)
    )
    merged = ours._replace(
        **fields,
        recall_count=max(count, 0),
        last_recalled_at=later(ours.last_recalled_at, theirs.last_recalled_at),
        updated=later(ours.updated, theirs.updated),
    )
    return Merged(with_line_ending(render_record(merged), line_ending(texts[1])))


# --- document sidecars --------------------------------------------------------------------------

DERIVED = ("title", "sha256", "outline")  # made from the body: the next command makes them again


def _merged_sidecar(base: Path, current: Path, other: Path) -> Merged | None:
    """Sidecars key by key. What is derived from the body (title, sha256, outline) takes ours
    when both sides differ: the next command sees the merged body and its sidecar disagree and
    derives them again (a ready document goes back to pending, as after any edit). A summary
    both sides made differently keeps the later one's; review fields that differ conflict."""
    import json

    texts = [read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text else {} for text in texts)
    except ValueError:
        return None
    if not (isinstance(old, dict) and isinstance(ours, dict) and isinstance(theirs, dict)) or not ours:
        return None
    merged = dict(ours)
    for key in dict.fromkeys([*ours, *theirs]):
        value = three_way(old.get(key), ours.get(key), theirs.get(key))
        if value is not CONFLICT:
            merged[key] = value
        elif key in DERIVED or key in ("summary", "summary_sha256"):
            merged[key] = ours.get(key)
        else:
            return None
    return Merged(json.dumps(merged, ensure_ascii=False, indent=2) + "\n")


# --- set-up --------------------------------------------------------------------------------------


def driver_command() -> str:
    return f"{sys.executable} -m aibuddy_cli git merge-file %O %A %B %P"


class GitSetup(NamedTuple):
    repository: str
    driver: str  # the command git runs
    attributes: list[str]  # the lines of .gitattributes that route files to it
    pre_commit: dict[str, Any] | None = None  # the secrets check: {path, installed, reason}

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def register_if_in_git(root: Path) -> None:
    """At `aibuddy init`: register the driver when the vault is in a git repository already,
    unless that repository ignores the vault's folder (a vault under a project's build or
    benchmark output is not the project's content: its hook would check the project's commits)."""
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(root)], capture_output=True)
    if ignored.returncode == 0:
        return
    try:
        setup(root)
    except AibuddyError:
        pass  # not a repository (yet): `aibuddy git setup` after `git init` or a clone


def setup(root: Path) -> GitSetup:
    """Register the driver in the repository holding root, and write the attributes."""
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if found.returncode != 0:
        raise NotFound(f"{root} is not in a git repository: run git init first")
    for key, value in (("merge.aibuddy.name", DRIVER_NAME), ("merge.aibuddy.driver", driver_command())):
        done = subprocess.run(["git", "-C", str(root), "config", key, value], capture_output=True, text=True)
        if done.returncode != 0:
            raise AibuddyError(f"git config {key} failed: {done.stderr.strip()}")
    write_attributes(root)
    hook = install_secrets_check(root)
    return GitSetup(found.stdout.strip(), driver_command(), list(ATTRIBUTES), hook)


def install_secrets_check(root: Path) -> dict[str, Any]:
    """The pre-commit hook that refuses vault files holding credential-shaped values."""
    from ..redaction.scan import install_pre_commit

    return install_pre_commit(root).to_json()


HINT = "git does not know the aibuddy merge driver in this clone: run `aibuddy git setup` once"


def driver_registered(root: Path) -> bool | None:
    """Whether the git config of the clone holding root has the driver its .gitattributes names;
    None when there is nothing to register (no such attribute, not a git clone, unreadable)."""
    try:
        if "merge=aibuddy" not in (root / ".gitattributes").read_text(encoding="utf-8"):
            return None
        git = next((p / ".git" for p in (root, *root.parents) if (p / ".git").exists()), None)
        if git is None or not git.is_dir():
            return None
        return '[merge "aibuddy"]' in (git / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def setup_hint(root: Path) -> str | None:
    """A one-line hint, the first time a command runs in a clone whose git config lacks the
    driver the vault's .gitattributes names (git does not copy config into a clone)."""
    try:
        marker = root / ".aibuddy" / "git-setup-hint"
        if marker.exists() or driver_registered(root) is not False:
            return None
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("shown\n", encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return HINT
