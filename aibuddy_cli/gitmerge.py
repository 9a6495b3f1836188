"""A vault shared through git: the `aibuddy` merge driver and its set-up.

`aibuddy init` writes a `.gitattributes` that routes memory records, tables, document sidecars and
task files to the driver; `aibuddy git setup` registers it in the repository's config (git does not
copy config into a clone). Git runs `aibuddy git merge-file %O %A %B %P` for each such file both
sides changed.

A memory record merges by field: `recallCount` adds both sides' increments to the base,
`lastRecalledAt` and `updated` take the later time, every other header key and the body take the
side that changed them. When both sides changed the same one differently, the file gets git's own
conflict markers (`git merge-file`) and the driver exits non-zero, as git's merge does: a real
disagreement stays a conflict. Any other file, or one that cannot be read as it should, is merged
by `git merge-file` alone.

Rows and messages both sides added under one key or number keep the ones already shared (their
keys and numbers are in other clones) and renumber the others after them. Which side was shared
depends on what git is doing (see `replaying`): in a merge, ours (%A) is the local branch and
theirs (%B) what was pulled; in a rebase, a cherry-pick or a stash pop, ours is the branch being
built on and theirs the local work git replays onto it.
"""

from __future__ import annotations

import os
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
    "tasks/**/messages.jsonl merge=aibuddy",
    "tasks/**/task.json merge=aibuddy",
    "tasks/**/consolidation.json merge=aibuddy",
    "tasks/**/summary.json merge=aibuddy",
)
DRIVER_NAME = "aibuddy: recall telemetry and concurrent edits"


class Merged(NamedTuple):
    """A driver's result: the merged text, and whether it is free of conflict markers."""

    text: str
    clean: bool = True


def merge_file(base: Path, current: Path, other: Path, path: str, *, replaying: bool | None = None) -> int:
    """Merge other into current (in place) over base; the exit status git expects.

    replaying: whether git replays theirs onto ours (None: ask git, see `_replaying`)."""
    merged: Merged | None = None
    kind = _vault_path(path)
    folder, _, name = kind.rpartition("/")
    if kind.startswith("memory/") and name.endswith(".md"):
        merged = _merged_record(base, current, other, Path(name).stem)
    elif kind.startswith("knowledge/") and name.endswith(".meta.json"):
        merged = _merged_sidecar(base, current, other)
    elif kind.startswith(("tables/", "tasks/")):
        replay = _replaying() if replaying is None else replaying
        if kind.startswith("tables/") and name.endswith(".schema.json"):
            merged = _merged_schema(base, current, other, replay)
        elif kind.startswith("tables/") and name.endswith(".csv"):
            merged = _merged_rows(base, current, other, replay)
        elif kind.startswith("tasks/") and folder.count("/") == 2:
            merged = _merged_task_file(name, base, current, other, replay)
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


def _replaying() -> bool:
    """Whether git is replaying theirs (%B) onto ours (%A) rather than merging theirs into ours.

    A merge (`git merge`, `git pull` without rebase) names the commits it merges in GITHEAD_*
    variables and GIT_REFLOG_ACTION "merge …"/"pull …": ours is the local branch, theirs was pulled,
    so theirs keeps its keys. A rebase (`git pull --rebase`, `pull.rebase true`, `git rebase`) has
    its state in the repository's rebase-merge/ or rebase-apply/ folder while it runs: ours is the
    upstream branch, theirs the local commit being replayed, so ours keeps them. Anything else
    git merges with a driver applies work onto HEAD (cherry-pick, revert, stash apply and pop,
    am, checkout -m): HEAD keeps its keys and the work applied moves, as in a rebase."""
    environ = os.environ
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


_CONFLICT = object()
_ABSENT = object()  # a key or cell one version does not have


def _three_way(base: Any, ours: Any, theirs: Any) -> Any:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return _CONFLICT


def _later(*values: str | None) -> str | None:
    present = [value for value in values if value]
    return max(present) if present else None


def _merged_record(base: Path, current: Path, other: Path, name: str) -> Merged | None:
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
    return Merged(with_line_ending(render_record(merged), line_ending(texts[1])))


# --- tables ----------------------------------------------------------------------------------------


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _merged_names(base: list[str], kept: list[str], moved: list[str]) -> list[str]:
    """The columns of a merged table, in a stable order: those of the side that changed the
    columns (the shared side when both did), then the other side's new ones; a column one side
    deleted is gone. The schema and the CSV file merge their columns by this one rule."""
    lead, other = (moved, kept) if kept == base else (kept, moved)
    names = [name for name in lead if name in other or name not in base]
    return names + [name for name in other if name not in lead and name not in base]


def _merged_schema(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """Schemas: description and key three-way, columns by name (`_merged_names`; a column both
    sides typed differently, or one side deleted and the other changed, is a conflict), and the
    next key past both sides' new rows (the renumbered ones included)."""
    import json

    texts = [_read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text else None for text in texts)
        if not (isinstance(ours, dict) and isinstance(theirs, dict)):
            return None
        old = old if isinstance(old, dict) else {}
        kept, moved = (ours, theirs) if replay else (theirs, ours)
        merged = dict(kept)
        for key in dict.fromkeys([*kept, *moved]):
            if key in ("columns", "next_key"):
                continue
            value = _three_way(old.get(key, _ABSENT), kept.get(key, _ABSENT), moved.get(key, _ABSENT))
            if value is _CONFLICT:
                return None
            if value is _ABSENT:
                merged.pop(key, None)
            else:
                merged[key] = value
        columns = [{c["name"]: c for c in side.get("columns", [])} for side in (old, kept, moved)]
        old_columns, kept_columns, moved_columns = columns
        names = _merged_names(*(list(side) for side in columns))
        merged_columns = []
        for name in dict.fromkeys([*old_columns, *names]):
            value = _three_way(
                old_columns.get(name, _ABSENT),
                kept_columns.get(name, _ABSENT),
                moved_columns.get(name, _ABSENT),
            )
            if value is _CONFLICT or (value is _ABSENT) == (name in names):
                return None  # changed differently, or deleted on one side and changed on the other
            if value is not _ABSENT:
                merged_columns.append(value)
        merged["columns"] = sorted(merged_columns, key=lambda column: names.index(column["name"]))
        start, ahead, behind = (int(side.get("next_key", 1)) for side in (old, kept, moved))
        merged["next_key"] = max(ahead, behind, ahead + behind - start)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return Merged(json.dumps(merged, ensure_ascii=False, indent=2) + "\n")


class _Table(NamedTuple):
    header: list[str]
    rows: dict[int, list[str]]  # key -> the row's cells, in header order


def _table(path: Path) -> _Table | None:
    """A CSV file's header and rows by key; None when it cannot be merged row by row (a key
    that is not a whole number or is repeated, a row whose cells do not fit the header)."""
    import csv
    import io

    text = _read_text(path)
    if text is None:
        return None
    try:
        lines = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True))
    except csv.Error:
        return None
    header = lines[0] if lines else []
    width = len(header)
    rows: dict[int, list[str]] = {}
    count = 0
    for row in lines[1:]:
        if not row:
            continue  # a blank line
        if len(row) != width or not row[0].isdecimal():
            return None
        rows[int(row[0])] = row
        count += 1
    return _Table(header, rows) if len(rows) == count else None


def _merged_rows(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """Rows by key (the first column), cell by cell: each side's changes and deletions apply, a
    column one side lacks is unchanged there, the columns are `_merged_names`. Rows both sides
    added under one key are both kept: the shared side's keeps it, the other's is renumbered after
    the largest key, so keys already pushed stay. One cell changed differently on both sides, or a
    row one side deleted and the other changed, is a conflict: that row gets git's markers, each
    side's version of it under the merged header, and the merge exits non-zero. A value in a
    column one side deleted that the other changed cannot be kept: git's own text merge."""
    import csv
    import io

    tables = [_table(path) for path in (base, current, other)]
    if tables[0] is None or tables[1] is None or tables[2] is None:
        return None
    old, ours, theirs = tables[0], tables[1], tables[2]
    if not ours.header or not theirs.header or ours.header[0] != theirs.header[0]:
        return None
    if old.header and old.header[0] != ours.header[0]:
        return None
    kept, moved = (ours, theirs) if replay else (theirs, ours)
    header = _merged_names(old.header, kept.header, moved.header)
    every = list(dict.fromkeys([*header, *old.header]))  # the deleted columns too: checked, not written
    width = len(header)

    def aligned(table: _Table, fill: Any) -> dict[int, tuple[Any, ...]]:
        at = {name: i for i, name in enumerate(table.header)}
        if table.header == every:
            return {key: tuple(row) for key, row in table.rows.items()}
        where = [at.get(name) for name in every]
        return {key: tuple(fill if i is None else row[i] for i in where) for key, row in table.rows.items()}

    was = aligned(old, "")  # a cell of a column the base lacks is empty (a null)
    mine, yours = aligned(ours, _ABSENT), aligned(theirs, _ABSENT)
    if replay and old.header == ours.header:
        _follow_moved_rows(was, mine, yours, [every.index(name) for name in old.header[1:]])
    now, new = (mine, yours) if replay else (yours, mine)
    merged: dict[int, tuple[Any, ...]] = {}
    conflicts: dict[int, tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]] = {}
    renumbered: list[tuple[Any, ...]] = []
    empty = ("",) * len(every)
    for key in sorted({*now, *new, *was}):
        k, m, o = now.get(key), new.get(key), was.get(key)
        if o is None:  # added
            added = [_cells(row, empty) for row in (k, m) if row is not None]
            if any(any(row[width:]) for row in added):
                return None  # a new row's value in a column the other side deleted
            merged[key] = added[0]
            if len(added) == 2 and added[1] != added[0]:
                renumbered.append(added[1])
            continue
        if k is None or m is None:  # deleted on one side (or both): a conflict if the other changed it
            if k is None and m is not None and _cells(m, o) != o:
                conflicts[key] = (None, _cells(m, o))
            elif m is None and k is not None and _cells(k, o) != o:
                conflicts[key] = (_cells(k, o), None)
            continue
        cells = _merged_cells(o, k, m)
        if cells is None:
            conflicts[key] = (_cells(k, o), _cells(m, o))
        elif cells[width:] != o[width:]:
            return None  # a column one side deleted holds the other side's change
        else:
            merged[key] = cells
    largest = max([*merged, *conflicts], default=0)
    for offset, cells in enumerate(renumbered, 1):
        merged[largest + offset] = (str(largest + offset), *cells[1:])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for key in sorted([*merged, *conflicts]):
        if key in merged:
            writer.writerow(merged[key][:width])
            continue
        # ours (%A) above, theirs (%B) below, as git's own markers have them
        above, below = conflicts[key] if replay else conflicts[key][::-1]
        out.write("<<<<<<< ours\n")
        if above is not None:
            writer.writerow(above[:width])
        out.write("=======\n")
        if below is not None:
            writer.writerow(below[:width])
        out.write(">>>>>>> theirs\n")
    return Merged(out.getvalue(), clean=not conflicts)


def _cells(row: tuple[Any, ...], base: tuple[Any, ...]) -> tuple[Any, ...]:
    """A side's row with the cells of columns it lacks taken from base (unchanged there)."""
    if _ABSENT not in row:
        return row
    return tuple(b if cell is _ABSENT else cell for cell, b in zip(row, base, strict=True))


def _merged_cells(
    base: tuple[Any, ...], kept: tuple[Any, ...], moved: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """One row both sides kept, cell by cell; None when one cell was changed differently."""
    kept, moved = _cells(kept, base), _cells(moved, base)
    if kept == moved or moved == base:
        return kept
    if kept == base:
        return moved
    cells = []
    for was, one, two in zip(base, kept, moved, strict=True):
        value = _three_way(was, one, two)
        if value is _CONFLICT:
            return None
        cells.append(value)
    return tuple(cells)


def _follow_moved_rows(
    base: dict[int, tuple[Any, ...]],
    ours: dict[int, tuple[Any, ...]],
    theirs: dict[int, tuple[Any, ...]],
    content: list[int],
) -> None:
    """A rebase of several commits: replaying the first renumbered its new rows after upstream's,
    and the next commit (theirs) still edits or deletes them under their old keys (base). A base
    row that ours holds unchanged under a key the base lacks, while its own key holds another row
    in ours, moved there: base and theirs follow it to its new key (in place). content: the
    positions of the base's columns other than the key."""

    def cells(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in content)

    where: dict[tuple[Any, ...], list[int]] = {}
    for key, row in ours.items():
        if key not in base:
            where.setdefault(cells(row), []).append(key)
    for key in sorted(base):
        row = base[key]
        if key not in ours or cells(ours[key]) == cells(row) or not where.get(cells(row)):
            continue
        to = where[cells(row)].pop(0)
        base[to] = (str(to), *row[1:])
        del base[key]
        if to in theirs:  # theirs added a row under that key too: one of its new rows, moved on
            spare = max([*theirs, *ours, *base]) + 1
            theirs[spare] = (str(spare), *theirs.pop(to)[1:])
        if key in theirs:
            theirs[to] = (str(to), *theirs.pop(key)[1:])


# --- document sidecars --------------------------------------------------------------------------

DERIVED = ("title", "sha256", "outline")  # made from the body: the next command makes them again


def _merged_sidecar(base: Path, current: Path, other: Path) -> Merged | None:
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
    return Merged(json.dumps(merged, ensure_ascii=False, indent=2) + "\n")


# --- tasks -----------------------------------------------------------------------------------------


def _merged_task_file(name: str, base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    if name == "messages.jsonl":
        return _merged_log(base, current, other, replay)
    if name == "task.json":
        return _merged_task(base, current, other, replay)
    if name in ("consolidation.json", "summary.json"):
        # The consolidation watermark and the compaction cache: the shared side's, whole. Its message
        # numbers did not move; the other side's may have, so its watermark could claim messages no
        # pass saw (the renumbered side's progress is redone; the watermark itself is checked
        # against the log, see tasks.consolidation.watermark). The cache is remade when the
        # messages it covers differ.
        text = _read_text(current if replay else other)
        return None if text is None else Merged(text)
    return None


def _log(path: Path) -> list[dict[str, Any]] | None:
    """A message log's lines as JSON objects with a whole message number "n"; None otherwise."""
    import json

    text = _read_text(path)
    if text is None:
        return None
    lines = []
    for line in text.split("\n"):  # not splitlines(): a message may hold U+2028 and its kin
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or not isinstance(message.get("n"), int):
            return None
        lines.append(message)
    return lines


def _merged_log(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """A task's message log by content (a message is its line without its number): the shared
    side's messages as they are, then the other side's new ones (in neither the base nor the
    shared side), numbered on from the shared side's last. A rebase replaying a message already
    replayed does not add it twice."""
    import json
    from collections import Counter

    logs = [_log(path) for path in (base, current, other)]
    if logs[0] is None or logs[1] is None or logs[2] is None:
        return None
    old, ours, theirs = logs[0], logs[1], logs[2]
    kept, moved = (ours, theirs) if replay else (theirs, ours)

    def content(message: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in message.items() if k != "n"}, ensure_ascii=False, sort_keys=True)

    there = Counter(map(content, kept)) | Counter(map(content, old))
    number = max((message["n"] for message in kept), default=0)
    lines = [json.dumps(message, ensure_ascii=False) for message in kept]
    for message in moved:
        seen = content(message)
        if there[seen] > 0:
            there[seen] -= 1
            continue
        number += 1
        lines.append(json.dumps({**message, "n": number}, ensure_ascii=False))
    return Merged("".join(f"{line}\n" for line in lines))


def _merged_task(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """task.json, with the message log it counts (`_merged_log`): `messages` counts both sides'
    new messages, `in_use` is that of the latest one (the renumbered side's, when it added any),
    `recalled` is the union (the smaller message number, the renumbered side's numbers moved on
    as its messages were), the task is closed if either side closed it, attachments one side
    added or removed are added or removed, and every other field is three-way: a real
    disagreement (two goals, two plans) is a conflict."""
    import json

    from .tasks.service import _count

    texts = [_read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text and text.strip() else {} for text in texts)
    except ValueError:
        return None
    if not (isinstance(old, dict) and isinstance(ours, dict) and isinstance(theirs, dict)) or not ours:
        return None
    kept, moved = (ours, theirs) if replay else (theirs, ours)
    before, ahead, behind = (_count(side.get("messages")) for side in (old, kept, moved))
    before = before or 0
    merged = dict(kept)
    for key in dict.fromkeys([*kept, *moved]):
        value = _three_way(old.get(key, _ABSENT), kept.get(key, _ABSENT), moved.get(key, _ABSENT))
        if key == "messages":
            value = None if ahead is None or behind is None else max(ahead, behind, ahead + behind - before)
        elif key == "in_use":
            if behind is not None and behind > before:
                value = moved.get(key)
            elif value is _CONFLICT:
                value = kept.get(key)
        elif key == "recalled" and isinstance(kept.get(key), dict) and isinstance(moved.get(key), dict):
            shift = max((ahead or before) - before, 0)
            value = dict(kept[key])
            for record, at in moved[key].items():
                at = at + shift if isinstance(at, int) and at > before else at
                mine = value.get(record)
                value[record] = (
                    at
                    if mine is None or (isinstance(at, int) and isinstance(mine, int) and at < mine)
                    else mine
                )
        elif key == "status" and value is _CONFLICT:
            value = "closed"
        elif key == "attached" and all(_references(side.get(key)) for side in (kept, moved)):
            was = old[key] if _references(old.get(key)) else []
            value = [ref for ref in kept[key] if ref in moved[key] or ref not in was]
            value += [ref for ref in moved[key] if ref not in kept[key] and ref not in was]
        if value is _CONFLICT:
            return None
        if value is _ABSENT:
            merged.pop(key, None)
        else:
            merged[key] = value
    return Merged(json.dumps(merged, ensure_ascii=False, indent=2) + "\n")


def _references(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(ref, str) for ref in value)


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
