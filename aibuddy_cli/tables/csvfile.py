"""A table's rows as CSV text: RFC 4180 quoting, UTF-8, a header of the schema's column names, rows
ordered by key, `\\n` line endings, one canonical spelling per value (see schema.cell_text). The
same rows are always the same bytes, so adding a row to a committed table is a one-line diff.
A file edited by hand keeps what it has where aibuddy changes only some rows: its column order,
spellings and blank lines, and its line ending (that of its header line: a CRLF file stays CRLF).

Reading is strict and says where: a row whose fields do not fit the header, a value that does
not fit its column, a missing or repeated key is reported with the file and line, and the file
is left as it is (the person who edited it decides what the row should be).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ..errors import InvalidInput
from .schema import TableSchema, ValueRefused, cell_text, parse_value

Row = dict[str, Any]
Span = tuple[int, int]  # a row's record in the file: its bytes [start, stop), line break included

csv.field_size_limit(1 << 24)


class MalformedTable(InvalidInput):
    """A CSV file that cannot be read as its schema says: exit 6, the file is never rewritten."""

    code = "malformed_table"


class TableMergeConflict(MalformedTable):
    """A CSV file that still holds git's conflict markers (a merge the aibuddy driver could not
    settle, or one made without it): said as such, with the lines, instead of the first row the
    markers break."""

    code = "merge_conflict"


class Layout(NamedTuple):
    """Where a rows file keeps what: its header's column order (which may differ from the
    schema's in a file edited by hand), the byte offsets of its header (after a BOM) and of its
    first row, and its line ending."""

    header: tuple[str, ...]
    start: int
    body: int
    ending: str


class _Written(list[str]):
    """csv.writer's file: what each writerow wrote (one call per row)."""

    def write(self, text: str) -> None:
        self.append(text)


def lines(cells: Iterable[Sequence[str]], ending: str = "\n") -> Iterator[str]:
    """Each row of cells as one CSV line ended by `ending`. Written as CRLF lines first: the csv
    module quotes a cell holding a line-break character only when that character is in its own
    line terminator, and a cell with an unquoted \\r or \\n would be read as two lines."""
    out = _Written()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    for row in cells:
        writer.writerow(row)
        yield out.pop()[:-2] + ending


def encode_each(
    schema: TableSchema, rows: Iterable[Row], order: Sequence[str] | None = None, ending: str = "\n"
) -> Iterator[str]:
    """Each row's CSV line, in the order given, its cells in `order` (the schema's by default)."""
    types = schema.types
    names = schema.names if order is None else order
    return lines(([cell_text(row.get(name), types[name]) for name in names] for row in rows), ending)


def encode_lines(
    schema: TableSchema, rows: Iterable[Row], order: Sequence[str] | None = None, ending: str = "\n"
) -> str:
    """The rows' CSV lines (no header), in the order given."""
    return "".join(encode_each(schema, rows, order, ending))


def encode_header(names: Sequence[str], ending: str = "\n") -> bytes:
    return next(lines([names], ending)).encode("utf-8")


def encode(schema: TableSchema, rows: Iterable[Row], ending: str = "\n") -> bytes:
    """The whole file: header, then the rows ordered by key."""
    ordered = sorted(rows, key=lambda row: row[schema.key])
    return encode_header(schema.names, ending) + encode_lines(schema, ordered, ending=ending).encode("utf-8")


def line_break(line: bytes | memoryview) -> bytes:
    """The line break a line ends with: b"\\r\\n", b"\\n", b"\\r", or b"" (the file's last line)."""
    tail = bytes(line[-2:])
    if tail == b"\r\n":
        return tail
    return tail[-1:] if tail[-1:] in (b"\n", b"\r") else b""


def line_ending(data: bytes) -> str:
    """A rows file's line ending: that of its header line ("\\n" when it has none)."""
    lf = data.find(b"\n")
    cr = data.find(b"\r", 0, len(data) if lf < 0 else lf)
    if cr >= 0:
        return "\r\n" if data[cr + 1 : cr + 2] == b"\n" else "\r"
    return "\n"


def read_layout(data: bytes, schema: TableSchema, source: str) -> Layout:
    """The file's layout, from its header line (checked against the schema)."""
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    ending = line_ending(data)
    found = data.find(ending.encode("ascii"), start)
    body = len(data) if found < 0 else found + len(ending)
    try:
        header = next(csv.reader([data[start:body].decode("utf-8")], strict=True), None)
    except (UnicodeDecodeError, csv.Error):
        header = None
    if header is None:
        raise MalformedTable(f"{source} line 1: not a header line")
    _check_header(header, schema, source)
    return Layout(tuple(header), start, body, ending)


def whole_lines(data: bytes, span: Span, layout: Layout) -> bool:
    """Whether span is whole lines of the file's rows: from a line's start to a line's end."""
    start, stop = span
    if not layout.body <= start < stop <= len(data) or data[start - 1 : start] not in (b"\n", b"\r"):
        return False
    if stop == len(data):
        return True
    return bool(line_break(data[stop - 2 : stop])) and data[stop - 1 : stop + 1] != b"\r\n"


def read_record(data: bytes, span: Span, layout: Layout, schema: TableSchema) -> Row | None:
    """The row whose record fills span, or None when span does not hold exactly one record
    (whole lines of it) that fits the schema."""
    start, stop = span
    if not whole_lines(data, span, layout):
        return None
    try:
        records = list(csv.reader(io.StringIO(data[start:stop].decode("utf-8"), newline=""), strict=True))
    except (UnicodeDecodeError, csv.Error):
        return None
    if len(records) != 1 or len(records[0]) != len(layout.header):
        return None
    types, cells = schema.types, zip(layout.header, records[0], strict=True)
    try:
        return {name: parse_value(field, types[name]) for name, field in cells}
    except ValueRefused:
        return None


class _Lines:
    """The file's lines for csv.reader, split where it splits them (\\n, \\r\\n, \\r), counting the
    bytes handed out: after each record, `offset` is where the next one starts."""

    __slots__ = ("_lines", "offset")

    def __init__(self, data: bytes, start: int) -> None:
        self._lines = iter(data[start:].splitlines(keepends=True))
        self.offset = start

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.offset += len(line)
        return line.decode("utf-8")


def decode(data: bytes, schema: TableSchema, source: str) -> list[Row]:
    """The file's rows as typed values, in file order. MalformedTable names source and line."""
    return list(read_rows(data, schema, source))


def read_rows(data: bytes, schema: TableSchema, source: str) -> Iterator[Row]:
    return (row for row, _ in read_records(data, schema, source))


def read_records(data: bytes, schema: TableSchema, source: str) -> Iterator[tuple[Row, Span]]:
    """The file's rows as typed values with where each one's record is, in file order."""
    try:
        data.decode("utf-8")  # the whole file is text: each line is then decoded as it is read
    except UnicodeDecodeError as exc:
        raise MalformedTable(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        yield from _parsed_records(data, schema, source)
    except MalformedTable:
        # Only a file that does not read is checked: a quoted cell may hold marker-like lines.
        from ..git.conflict_markers import RESOLVE_CONFLICT, conflict_lines, merge_conflicts

        conflicts = merge_conflicts(data.decode("utf-8").removeprefix("\ufeff"))
        if conflicts:
            where = conflict_lines(conflicts)
            message = f"{source}: unresolved merge conflict ({where}): {RESOLVE_CONFLICT}"
            raise TableMergeConflict(message) from None
        raise


def _parsed_records(data: bytes, schema: TableSchema, source: str) -> Iterator[tuple[Row, Span]]:
    lines = _Lines(data, len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)
    reader = csv.reader(lines, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise MalformedTable(f"{source}: empty file (a table has at least its header line)")
        _check_header(header, schema, source)
        types = [schema.types[name] for name in header]
        key_at = header.index(schema.key)
        keys: set[int] = set()
        begin = lines.offset
        for fields in reader:
            line = reader.line_num
            span = (begin, lines.offset)
            begin = lines.offset
            if not fields:
                continue  # a blank line
            if len(fields) != len(header):
                raise MalformedTable(
                    f"{source} line {line}: {len(fields)} fields where the header has {len(header)}"
                )
            row: Row = {}
            for name, type_, field in zip(header, types, fields, strict=True):
                try:
                    row[name] = parse_value(field, type_)
                except ValueRefused as exc:
                    raise MalformedTable(f"{source} line {line}, column {name}: {exc}") from None
            key = row[header[key_at]]
            if key is None:
                raise MalformedTable(f"{source} line {line}: no {schema.key} (every row needs its key)")
            if key in keys:
                raise MalformedTable(f"{source} line {line}: {schema.key} {key} is repeated")
            keys.add(key)
            yield row, span
    except csv.Error as exc:
        raise MalformedTable(f"{source} line {reader.line_num}: {exc}") from None


def _check_header(header: list[str], schema: TableSchema, source: str) -> None:
    names = schema.names
    if sorted(header) == sorted(names) and len(header) == len(names):
        return
    extra = [h for h in header if h not in names]
    missing = [n for n in names if n not in header]
    parts = []
    if extra:
        parts.append(f"columns not in the schema: {', '.join(extra)}")
    if missing:
        parts.append(f"schema columns missing: {', '.join(missing)}")
    if len(set(header)) != len(header):
        parts.append("a column is repeated")
    raise MalformedTable(f"{source} line 1: the header does not match the schema ({'; '.join(parts)})")
