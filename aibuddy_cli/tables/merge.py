"""Tables merged by the git driver: a schema by its keys and columns, the rows file by key and
cell. Rows both sides added under one key keep the shared side's key and move the other's after
the largest (see app.merge_driver.replaying for which side was shared)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from ..git.merging import ABSENT, CONFLICT, Merged, read_text, settle, three_way


def merged_names(base: list[str], kept: list[str], moved: list[str]) -> list[str]:
    """The columns of a merged table, in a stable order: those of the side that changed the
    columns (the shared side when both did), then the other side's new ones; a column one side
    deleted is gone. The schema and the CSV file merge their columns by this one rule."""
    lead, other = (moved, kept) if kept == base else (kept, moved)
    names = [name for name in lead if name in other or name not in base]
    return names + [name for name in other if name not in lead and name not in base]


def merged_schema(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """Schemas: description and key three-way, columns by name (`merged_names`; a column both
    sides typed differently, or one side deleted and the other changed, is a conflict), and the
    next key past both sides' new rows (the renumbered ones included)."""
    import json

    texts = [read_text(path) for path in (base, current, other)]
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
            value = three_way(old.get(key, ABSENT), kept.get(key, ABSENT), moved.get(key, ABSENT))
            if not settle(merged, key, value):
                return None
        columns = [{c["name"]: c for c in side.get("columns", [])} for side in (old, kept, moved)]
        old_columns, kept_columns, moved_columns = columns
        names = merged_names(*(list(side) for side in columns))
        merged_columns = []
        for name in dict.fromkeys([*old_columns, *names]):
            value = three_way(
                old_columns.get(name, ABSENT),
                kept_columns.get(name, ABSENT),
                moved_columns.get(name, ABSENT),
            )
            if value is CONFLICT or (value is ABSENT) == (name in names):
                return None  # changed differently, or deleted on one side and changed on the other
            if value is not ABSENT:
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

    text = read_text(path)
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


def merged_rows(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """Rows by key (the first column), cell by cell: each side's changes and deletions apply, a
    column one side lacks is unchanged there, the columns are `merged_names`. Rows both sides
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
    header = merged_names(old.header, kept.header, moved.header)
    every = list(dict.fromkeys([*header, *old.header]))  # the deleted columns too: checked, not written
    width = len(header)

    def aligned(table: _Table, fill: Any) -> dict[int, tuple[Any, ...]]:
        at = {name: i for i, name in enumerate(table.header)}
        if table.header == every:
            return {key: tuple(row) for key, row in table.rows.items()}
        where = [at.get(name) for name in every]
        return {key: tuple(fill if i is None else row[i] for i in where) for key, row in table.rows.items()}

    was = aligned(old, "")  # a cell of a column the base lacks is empty (a null)
    mine, yours = aligned(ours, ABSENT), aligned(theirs, ABSENT)
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
    if ABSENT not in row:
        return row
    return tuple(b if cell is ABSENT else cell for cell, b in zip(row, base, strict=True))


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
        value = three_way(was, one, two)
        if value is CONFLICT:
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
