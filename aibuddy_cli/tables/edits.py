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
    """A rows file after an edit, and what the index needs to follow it."""

    data: bytes
    spans: dict[int, Span]  # the records written (every row's, when columns were added)
    moves: list[tuple[int, int]]  # (old offset, shift): the records from there on moved by shift


def write_rows(
    state: TablesState,
    table: IndexedTable,
    schema: TableSchema,
    *,
    replaced: Sequence[tuple[Row, Row]] = (),
    deleted: Sequence[Row] = (),
    added: Sequence[Row] = (),
    new_columns: Sequence[ColumnSpec] = (),
) -> None:
    """Write the table's files with each (old, new) of replaced replaced, deleted rows cut, rows
    added at the end, and new_columns (already in schema) added, empty, to every other row; the
    index follows. The old and deleted rows are as the index holds them, to check the file by."""
    ref = table.ref
    data, _ = state.store.read(ref.rows_key)
    try:
        layout = csvfile.read_layout(data, table.schema, ref.rows_key)
    except csvfile.MalformedTable:
        raise StaleIndex(table) from None
    key = schema.key
    touched: dict[int, tuple[Row, Row | None]] = {old[key]: (old, new) for old, new in replaced}
    touched.update((row[key], (row, None)) for row in deleted)
    placed = state.index.spans(table, None if new_columns else list(touched))
    if len(placed) != (table.row_count if new_columns else len(touched)):
        raise StaleIndex(table)
    edited = edit(data, layout, table, schema, placed, touched, added, new_columns)
    if edited is None:
        raise StaleIndex(table)
    schema_entry = (
        state.store.stat(ref.schema_key)
        if schema == table.schema
        else state.store.write(ref.schema_key, schema.encode())
    )
    rows_entry = state.store.write(ref.rows_key, edited.data)
    table.schema = schema
    upserts = [*(new for _, new in replaced), *added]
    state.index.apply(
        table,
        (rows_entry, schema_entry),
        upserts=upserts,
        deletes=[row[key] for row in deleted],
        spans=edited.spans,
        moves=edited.moves,
        columns=new_columns,
    )


def edit(
    data: bytes,
    layout: Layout,
    table: IndexedTable,
    schema: TableSchema,
    placed: Sequence[Placed],
    touched: dict[int, tuple[Row, Row | None]],
    added: Sequence[Row],
    new_columns: Sequence[ColumnSpec],
) -> Edited | None:
    """The file's new bytes: the placed records in touched replaced (new row) or cut (None),
    the other placed ones widened by new_columns, the added rows appended. None when the file
    does not hold what the index says."""
    view = memoryview(data)
    header = (*layout.header, *(c.name for c in new_columns))
    pieces: list[bytes | memoryview] = []
    spans: dict[int, Span] = {}
    moves: list[tuple[int, int]] = []
    cursor = delta = 0
    if new_columns:
        line = csvfile.encode_header(header, layout.ending)
        pieces += [view[: layout.start], line]
        cursor, delta = layout.body, len(line) - (layout.body - layout.start)
    fill = b"," * len(new_columns)
    for key, start, stop in placed:
        if start < cursor or (new_columns and bytes(view[cursor:start]).strip(b"\r\n")):
            return None  # records overlap, or something but blank lines lies between them
        pieces.append(view[cursor:start])
        record = view[start:stop]
        end = csvfile.line_break(record)
        if key in touched:
            old, new = touched[key]
            if not _holds(data, (start, stop), old, layout, table.schema):
                return None
            line = b"" if new is None else _line(schema, new, header, end)
        elif csvfile.whole_lines(data, (start, stop), layout):
            line = bytes(record[: len(record) - len(end)]) + fill + end
        else:
            return None
        if line:
            spans[key] = (start + delta, start + delta + len(line))
        pieces.append(line)
        delta += len(line) - (stop - start)
        moves.append((stop, delta))
        cursor = stop
    if new_columns and bytes(view[cursor:]).strip(b"\r\n"):
        return None
    pieces.append(view[cursor:])
    if added:
        size = len(data) + delta
        last = next((bytes(piece[-1:]) for piece in reversed(pieces) if len(piece)), b"")
        if last not in (b"\n", b"\r"):  # a last line without its line break gets one first
            pieces.append(layout.ending.encode("ascii"))
            size += len(layout.ending)
        for row, text in zip(added, csvfile.encode_each(schema, added, header, layout.ending), strict=True):
            line = text.encode("utf-8")
            spans[row[schema.key]] = (size, size + len(line))
            pieces.append(line)
            size += len(line)
    return Edited(b"".join(pieces), spans, moves)


def _line(schema: TableSchema, row: Row, header: Sequence[str], end: bytes) -> bytes:
    """A replaced row's line, in the file's column order, ended as the record it replaces was
    (the file's last line may have no line break)."""
    text = next(csvfile.encode_each(schema, [row], header, "\n"))
    return text[:-1].encode("utf-8") + end


def _holds(data: bytes, span: Span, row: Row, layout: Layout, schema: TableSchema) -> bool:
    """Whether the record at span is row: spelled as aibuddy writes it (compared as bytes), or
    read as the same values (a spelling of its own)."""
    start, stop = span
    record = data[start:stop]
    if record[: len(record) - len(csvfile.line_break(record))] == _line(schema, row, layout.header, b""):
        return csvfile.whole_lines(data, span, layout)
    return csvfile.read_record(data, span, layout, schema) == row
