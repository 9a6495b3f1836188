"""A vault shared through git: the `aibuddy` merge driver and its set-up.

`aibuddy init` writes a `.gitattributes` that routes memory records to the driver; `aibuddy git
setup` registers it in the repository's config (git does not copy config into a clone). Git runs
`aibuddy git merge-file %O %A %B %P` for each such file both sides changed.

A memory record merges by field: `recallCount` adds both sides' increments to the base,
`lastRecalledAt` and `updated` take the later time, every other header key and the body take the
side that changed them. When both sides changed the same one differently, the file gets git's own
conflict markers (`git merge-file`) and the driver exits non-zero, as git's merge does: a real
disagreement stays a conflict. Any other file, or one that cannot be read as a record, is merged
by `git merge-file` alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

from .errors import AibuddyError, MalformedRecord, NotFound

ATTRIBUTES = ("memory/**/*.md merge=aibuddy",)
DRIVER_NAME = "aibuddy: recall telemetry and concurrent edits"


def merge_file(base: Path, current: Path, other: Path, path: str) -> int:
    """Merge other into current (in place) over base; the exit status git expects."""
    if path.startswith("memory/") and path.endswith(".md"):
        merged = _merged_record(base, current, other, Path(path).stem)
        if merged is not None:
            current.write_bytes(merged.encode("utf-8"))
            return 0
    return _git_merge_file(base, current, other)


def _git_merge_file(base: Path, current: Path, other: Path) -> int:
    """git's own three-way merge of the text, with its conflict markers; >0 on conflict."""
    labels = ["-L", "ours", "-L", "base", "-L", "theirs"]
    done = subprocess.run(["git", "merge-file", *labels, str(current), str(base), str(other)], check=False)
    return 1 if done.returncode != 0 else 0


_CONFLICT = object()


def _three_way(base: Any, ours: Any, theirs: Any) -> Any:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return _CONFLICT


def _later(*values: str | None) -> str | None:
    present = [value for value in values if value]
    return max(present) if present else None


def _merged_record(base: Path, current: Path, other: Path, name: str) -> str | None:
    """The merged record text, or None when it cannot be merged field by field."""
    from .memory.records import line_ending, parse_record, render_record, with_line_ending

    try:
        texts = [path.read_bytes().decode("utf-8") for path in (base, current, other)]
        old, ours, theirs = (parse_record(name, text, fast=False) for text in texts)
    except (OSError, UnicodeDecodeError, MalformedRecord):
        return None
    fields = {}
    for field in ("description", "type", "provenance", "created", "body", "extra"):
        value = _three_way(getattr(old, field), getattr(ours, field), getattr(theirs, field))
        if value is _CONFLICT:
            return None
        fields[field] = value
    count = (
        old.recall_count + (ours.recall_count - old.recall_count) + (theirs.recall_count - old.recall_count)
    )
    merged = ours._replace(
        **fields,
        recall_count=max(count, 0),
        last_recalled_at=_later(ours.last_recalled_at, theirs.last_recalled_at),
        updated=_later(ours.updated, theirs.updated),
    )
    text = render_record(merged)
    return with_line_ending(text, line_ending(texts[1])) if line_ending(texts[1]) != "\n" else text


# --- set-up --------------------------------------------------------------------------------------


def write_attributes(root: Path) -> None:
    """The vault's .gitattributes routes its merge-aware files to the driver (lines kept)."""
    path = root / ".gitattributes"
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    missing = [line for line in ATTRIBUTES if line not in existing.splitlines()]
    if missing:
        separator = "" if existing.endswith("\n") or not existing else "\n"
        path.write_text(existing + separator + "\n".join(missing) + "\n", encoding="utf-8")


def driver_command() -> str:
    return f"{sys.executable} -m aibuddy_cli git merge-file %O %A %B %P"


class GitSetup(NamedTuple):
    repository: str
    driver: str  # the command git runs
    attributes: list[str]  # the lines of .gitattributes that route files to it

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


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
    return GitSetup(found.stdout.strip(), driver_command(), list(ATTRIBUTES))
