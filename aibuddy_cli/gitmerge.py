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

ATTRIBUTES = (
    "memory/**/*.md merge=aibuddy",
    "memory/**/.history/*.jsonl merge=union",  # previous versions of auto records: keep both sides'
    "tables/**/*.csv merge=aibuddy",
    "tables/**/*.schema.json merge=aibuddy",
    "knowledge/**/*.meta.json merge=aibuddy",
)
DRIVER_NAME = "aibuddy: recall telemetry and concurrent edits"


def merge_file(base: Path, current: Path, other: Path, path: str) -> int:
    """Merge other into current (in place) over base; the exit status git expects."""
    merged: str | None = None
    if path.startswith("memory/") and path.endswith(".md"):
        merged = _merged_record(base, current, other, Path(path).stem)
    elif path.startswith("tables/") and path.endswith(".schema.json"):
        merged = _merged_schema(base, current, other)
    elif path.startswith("tables/") and path.endswith(".csv"):
        merged = _merged_rows(base, current, other)
    elif path.startswith("knowledge/") and path.endswith(".meta.json"):
        merged = _merged_sidecar(base, current, other)
    if merged is None:
        return _git_merge_file(base, current, other)
    current.write_bytes(merged.encode("utf-8"))
    return 0


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
    return with_line_ending(render_record(merged), line_ending(texts[1]))


# --- tables ----------------------------------------------------------------------------------------


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _merged_schema(base: Path, current: Path, other: Path) -> str | None:
    """Schemas: description and key three-way, columns by name (one side's new column is added,
    a column both sides typed differently is a conflict), the next key the larger."""
    import json

    texts = [_read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text else None for text in texts)
        if not (isinstance(ours, dict) and isinstance(theirs, dict)):
            return None
        old = old if isinstance(old, dict) else {}
        merged = dict(ours)
        for key in ("description", "key"):
            value = _three_way(old.get(key), ours.get(key), theirs.get(key))
            if value is _CONFLICT:
                return None
            merged[key] = value
        columns = {c["name"]: c for c in ours["columns"]}
        old_columns = {c["name"]: c for c in old.get("columns", [])}
        for column in theirs["columns"]:
            mine = columns.get(column["name"])
            if mine is None:
                if column["name"] not in old_columns:  # theirs added it; a column ours deleted stays deleted
                    columns[column["name"]] = column
            elif mine != column:
                value = _three_way(old_columns.get(column["name"]), mine, column)
                if value is _CONFLICT:
                    return None
                columns[column["name"]] = value
        merged["columns"] = list(columns.values())
        merged["next_key"] = max(int(ours["next_key"]), int(theirs["next_key"]))
    except (ValueError, KeyError, TypeError):
        return None
    return json.dumps(merged, ensure_ascii=False, indent=2) + "\n"


def _merged_rows(base: Path, current: Path, other: Path) -> str | None:
    """Rows by key (the first column): each side's changes and deletions apply; rows both sides
    added under one key are kept both, the merging side's (ours) renumbered after the largest
    key, so keys already pushed stay; the same row changed differently on both sides is a
    conflict. Columns are the union."""
    import csv
    import io

    tables = []
    for path in (base, current, other):
        text = _read_text(path)
        if text is None:
            return None
        rows = list(csv.reader(io.StringIO(text, newline="")))
        tables.append((rows[0], rows[1:]) if rows else ([], []))
    (old_header, _), (our_header, _), (their_header, _) = tables
    if not our_header or not their_header or our_header[0] != their_header[0]:
        return None
    header = [*our_header, *(c for c in their_header if c not in our_header and c not in old_header)]

    def keyed(table: tuple[list[str], list[list[str]]]) -> dict[str, dict[str, str]]:
        names, rows = table
        return {row[0]: dict(zip(names, row, strict=False)) for row in rows if row}

    old, ours, theirs = (keyed(table) for table in tables)
    merged: dict[str, dict[str, str]] = {}
    renumbered: list[dict[str, str]] = []
    for key in dict.fromkeys([*ours, *theirs]):
        a, b, o = ours.get(key), theirs.get(key), old.get(key)
        if key in old:
            value = _three_way(o, a, b)
            if value is _CONFLICT:
                return None
            if value is not None:
                merged[key] = value
        elif a is not None and b is not None and a != b:
            merged[key] = b  # the keys others already have stay; the merging side's row moves
            renumbered.append(a)
        else:
            merged[key] = a if a is not None else b  # type: ignore[assignment]
    try:
        largest = max((int(key) for key in merged), default=0)
    except ValueError:
        return None
    for offset, row in enumerate(renumbered, 1):
        row = {**row, header[0]: str(largest + offset)}
        merged[row[header[0]]] = row
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for key in sorted(merged, key=int):
        writer.writerow([merged[key].get(column, "") for column in header])
    return out.getvalue()


# --- document sidecars --------------------------------------------------------------------------

DERIVED = ("title", "sha256", "outline")  # made from the body: the next command makes them again


def _merged_sidecar(base: Path, current: Path, other: Path) -> str | None:
    """Sidecars key by key. What is derived from the body (title, sha256, outline) takes ours
    when both sides differ: the next command sees the merged body and its sidecar disagree and
    derives them again (a ready document goes back to pending, as after any edit). A summary
    both sides made differently keeps the later one's; review fields that differ conflict."""
    import json

    texts = [_read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text else {} for text in texts)
    except ValueError:
        return None
    if not (isinstance(old, dict) and isinstance(ours, dict) and isinstance(theirs, dict)) or not ours:
        return None
    merged = dict(ours)
    for key in dict.fromkeys([*ours, *theirs]):
        value = _three_way(old.get(key), ours.get(key), theirs.get(key))
        if value is not _CONFLICT:
            merged[key] = value
        elif key in DERIVED or key in ("summary", "summary_sha256"):
            merged[key] = ours.get(key)
        else:
            return None
    return json.dumps(merged, ensure_ascii=False, indent=2) + "\n"


# --- set-up --------------------------------------------------------------------------------------


def write_attributes(root: Path) -> None:
    """The vault's .gitattributes routes its merge-aware files to the driver (lines kept)."""
    from .vault import add_lines

    add_lines(root / ".gitattributes", ATTRIBUTES)


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
    from .scan import install_pre_commit

    return install_pre_commit(root).to_json()


HINT = "git does not know the aibuddy merge driver in this clone: run `aibuddy git setup` once"


def setup_hint(root: Path) -> str | None:
    """A one-line hint, the first time a command runs in a clone whose git config lacks the
    driver the vault's .gitattributes names (git does not copy config into a clone)."""
    try:
        if "merge=aibuddy" not in (root / ".gitattributes").read_text(encoding="utf-8"):
            return None
        marker = root / ".aibuddy" / "git-setup-hint"
        if marker.exists():
            return None
        git = next((p / ".git" for p in (root, *root.parents) if (p / ".git").exists()), None)
        if (
            git is None
            or not git.is_dir()
            or '[merge "aibuddy"]' in (git / "config").read_text(encoding="utf-8")
        ):
            return None
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("shown\n", encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return HINT
