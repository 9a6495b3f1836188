"""Changing some rows of a table where they are: the records of the rows replaced or deleted are
swapped for their new lines (or cut), new rows are appended, and every other byte of the CSV
stays as it was (a hand-made column order, spellings, blank lines, line endings); the index
follows in place. So a change of one row of 200,000 costs about one row plus copying the file
once (written atomically, as every write). A new column is one more empty field at the end of
every record and an ALTER TABLE in the index, not a new file or a rebuilt index.

The index knows where each row's record is (its byte span, found when it read the file). It is
trusted only as far as the file agrees: each record about to be replaced or cut must hold the
row the index has, and records must be whole lines (with only blank lines between them when
every record is rewritten). Otherwise the index missed an edit (one of the same size within the
file system's clock tick) and `StaleIndex` makes the caller read the file again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..errors import Conflict
from . import csvfile
from .csvfile import Layout, Span
from .index import IndexedTable, Placed
from .schema import ColumnSpec, TableSchema
from .state import TablesState

Row = dict[str, Any]


class StaleIndex(Conflict):
    """The index does not describe the rows file as it is now: read it again (exit 4 when that
    happens twice in a row, as when the file keeps changing while aibuddy writes it)."""

    def __init__(self, table: IndexedTable) -> None:
        super().__init__(f"table {table.ref.qualified} changed while it was being written; try again")


class Edited(NamedTuple):
    """A rows file after an edit, in pieces, and what the index needs to follow it."""

    pieces: list[bytes | memoryview]
    spans: list[Placed]  # the records written (every row's, when columns were added)
    moves: list[tuple[int, int]]  # (old offset, shift): the records from there on moved by shift
    rows: list[Row]  # the rows written anew, as they now are


class RowsEdit(NamedTuple):
    """A change of a table's rows worked out and checked against its file (`plan_rows`), nothing
    written yet: `write` writes it and brings the index along. So a caller journals the change
    between the two, and a journal that cannot be written leaves the table as it was."""

    state: TablesState
    table: IndexedTable
    schema: TableSchema
    edited: Edited
    added: Sequence[Row]
    deleted: Sequence[Row]
    new_columns: Sequence[ColumnSpec]

    def write(self) -> None:
        """Write the table's files (state.write_table) and apply the edit to the index."""
        state, table, schema = self.state, self.table, self.schema
        changed = None if schema == table.schema else schema.encode()
        rows_entry, schema_entry = state.write_table(table.ref, changed, b"".join(self.edited.pieces))
        table.schema = schema
        state.index.apply(
            table,
            (rows_entry, schema_entry),
            upserts=[*self.edited.rows, *self.added],
            deletes=[row[schema.key] for row in self.deleted],
            spans=self.edited.spans,
            moves=self.edited.moves,
            columns=self.new_columns,
        )


def plan_rows(
    state: TablesState,
    table: IndexedTable,
    schema: TableSchema,
    *,
    replaced: Sequence[tuple[Row, Row]] = (),
    deleted: Sequence[Row] = (),
    added: Sequence[Row] = (),
    new_columns: Sequence[ColumnSpec] = (),
) -> RowsEdit:
    """The table's files as they are to be: for each (row, values) of replaced, the row with
    those values set, and the deleted rows cut; or new_columns (already in schema) added, empty,
    to every row; then the added rows at the end. The rows are as the index has them, to check
    the file by (StaleIndex when it disagrees); what a replaced row keeps is what the file holds
    (SQLite, for one, reads -0.0 back as 0.0). Nothing is written until the edit's `write`."""
    ref = table.ref
    data, _ = state.store.read(ref.rows_key)
    try:
        layout = csvfile.read_layout(data, table.schema, ref.rows_key)
    except csvfile.MalformedTable:
        raise StaleIndex(table) from None
    key = schema.key
    header = (*layout.header, *(c.name for c in new_columns))
    if new_columns:
        if replaced or deleted:
            raise ValueError("a new column is added to the rows as they are")
        placed = state.index.spans(table)
        edited = widen(data, layout, placed, header) if len(placed) == table.row_count else None
    else:
        touched: dict[int, tuple[Row, Row | None]] = {old[key]: (old, values) for old, values in replaced}
        touched.update((row[key], (row, None)) for row in deleted)
        placed = state.index.spans(table, list(touched))
        edited = (
            splice(data, layout, table.schema, schema, placed, touched)
            if len(placed) == len(touched)
            else None
        )
    if edited is None:
        raise StaleIndex(table)
    append(edited, layout, schema, header, added)
    return RowsEdit(state, table, schema, edited, added, deleted, new_columns)


def splice(
    data: bytes,
    layout: Layout,
    indexed: TableSchema,
    schema: TableSchema,
    placed: Sequence[Placed],
    touched: dict[int, tuple[Row, Row | None]],
) -> Edited | None:
    """The file with the placed records of touched (key: the row as the index has it, and the
    values to set, or None to cut it) replaced or cut, every other byte as it was. None when a
    record does not hold the row the index has."""
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    spans: list[Placed] = []
    moves: list[tuple[int, int]] = []
    rows: list[Row] = []
    cursor = delta = 0
    for key, start, stop in placed:
        old, values = touched[key]
        held = _held(data, (start, stop), old, layout, indexed) if start >= cursor else None
        if held is None:
            return None
        line = b""
        if values is not None:
            rows.append({**held, **values})
            line = _line(schema, rows[-1], layout.header, csvfile.line_break(view[start:stop]))
        pieces += [view[cursor:start], line]
        if line:
            spans.append((key, start + delta, start + delta + len(line)))
        delta += len(line) - (stop - start)
        moves.append((stop, delta))
        cursor = stop
    pieces.append(view[cursor:])
    return Edited(pieces, spans, moves, rows)


def widen(data: bytes, layout: Layout, placed: Sequence[Placed], header: Sequence[str]) -> Edited | None:
    """The file with the header's new names and as many empty fields at the end of every
    record. When each record is one line (no blank lines, no line break inside a cell, one kind
    of line break), that is one bytes.replace; otherwise record by record. None when the
    records are not whole lines with only blank lines between them."""
    line = csvfile.encode_header(header, layout.ending)
    shift = len(line) - (layout.body - layout.start)
    fill = b"," * (len(header) - len(layout.header))
    pieces: list[bytes | memoryview] = [data[: layout.start], line]
    body = data[layout.body :]
    if not placed:
        return None if body.strip(b"\r\n") else Edited([*pieces, body], [], [], [])
    tiled = placed[0][1] == layout.body and placed[-1][2] == len(data)
    if (
        tiled
        and all(a[2] == b[1] for a, b in zip(placed, placed[1:], strict=False))
        and _line_each(body, layout, len(placed))
    ):
        ending = layout.ending.encode("ascii")
        widened = body.replace(ending, fill + ending) + (b"" if body.endswith(ending) else fill)
        m = len(fill)
        spans = [
            (key, start + shift + m * i, stop + shift + m * (i + 1))
            for i, (key, start, stop) in enumerate(placed)
        ]
        return Edited([*pieces, widened], spans, [], [])
    view = memoryview(data)
    spans = []
    cursor, size = layout.body, len(line) + layout.start
    for key, start, stop in placed:
        if start < cursor or (start > cursor and bytes(view[cursor:start]).strip(b"\r\n")):
            return None  # records overlap, or something but blank lines lies between them
        if not csvfile.whole_lines(data, (start, stop), layout):
            return None
        record = view[start:stop]
        end = csvfile.line_break(record)
        size += start - cursor
        widened_record = bytes(record[: len(record) - len(end)]) + fill + end
        pieces += [view[cursor:start], widened_record]
        spans.append((key, size, size + len(widened_record)))
        size += len(widened_record)
        cursor = stop
    if bytes(view[cursor:]).strip(b"\r\n"):
        return None
    pieces.append(view[cursor:])
    return Edited(pieces, spans, [], [])


def _line_each(body: bytes, layout: Layout, records: int) -> bool:
    """Whether body holds exactly `records` lines, each ended by the file's line ending (the last
    one may have none), and no other line break."""
    lf, cr = body.count(b"\n"), body.count(b"\r")
    if layout.ending == "\r\n":
        breaks = cr if lf == cr == body.count(b"\r\n") else -1
    else:
        breaks = lf if layout.ending == "\n" and not cr else cr if layout.ending == "\r" and not lf else -1
    return breaks == records - (0 if body.endswith(layout.ending.encode("ascii")) else 1)


def append(
    edited: Edited, layout: Layout, schema: TableSchema, header: Sequence[str], rows: Sequence[Row]
) -> None:
    """The rows' lines added at the end of the edited file; a last line without its line break
    gets one first."""
    if not rows:
        return
    size = sum(len(piece) for piece in edited.pieces)
    last = next((bytes(piece[-1:]) for piece in reversed(edited.pieces) if len(piece)), b"")
    if last not in (b"\n", b"\r"):
        edited.pieces.append(layout.ending.encode("ascii"))
        size += len(layout.ending)
    for row, text in zip(rows, csvfile.encode_each(schema, rows, header, layout.ending), strict=True):
        line = text.encode("utf-8")
        edited.spans.append((row[schema.key], size, size + len(line)))
        edited.pieces.append(line)
        size += len(line)


def _line(schema: TableSchema, row: Row, header: Sequence[str], end: bytes) -> bytes:
    """A row's line, in the file's column order, ended by `end` (the line break of the record
    it replaces: the file's last line may have none)."""
    text = next(csvfile.encode_each(schema, [row], header, "\n"))
    return text[:-1].encode("utf-8") + end


def _held(data: bytes, span: Span, row: Row, layout: Layout, schema: TableSchema) -> Row | None:
    """The row the record at span holds, when it is row: spelled as aibuddy writes it (compared
    as bytes), or read as equal values (in a spelling of its own); else None."""
    start, stop = span
    record = data[start:stop]
    if record[: len(record) - len(csvfile.line_break(record))] == _line(schema, row, layout.header, b""):
        return row if csvfile.whole_lines(data, span, layout) else None
    held = csvfile.read_record(data, span, layout, schema)
    return held if held == row else None
