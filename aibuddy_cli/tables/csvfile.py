"""A table's rows as CSV text: RFC 4180 quoting, UTF-8, a header of the schema's column names, rows
ordered by key, `\\n` line endings, one canonical spelling per value (see schema.cell_text). The
same rows are always the same bytes, so adding a row to a committed table is a one-line diff.

Reading is strict and says where: a row whose fields do not fit the header, a value that does
not fit its column, a missing or repeated key is reported with the file and line, and the file
is left as it is (the person who edited it decides what the row should be).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import InvalidInput
from .schema import TableSchema, ValueRefused, cell_text, parse_value

Row = dict[str, Any]

csv.field_size_limit(1 << 24)


class MalformedTable(InvalidInput):
    """A CSV file that cannot be read as its schema says: exit 6, the file is never rewritten."""

    code = "malformed_table"


class TableMergeConflict(MalformedTable):
    """A CSV file that still holds git's conflict markers (a merge the aibuddy driver could not
    settle, or one made without it): said as such, with the lines, instead of the first row the
    markers break."""

    code = "merge_conflict"


def _writer(out: io.StringIO) -> Any:
    return csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)


def encode_lines(schema: TableSchema, rows: Iterable[Row]) -> str:
    """The rows' CSV lines (no header), in the order given."""
    out = io.StringIO()
    writer = _writer(out)
    columns = schema.columns
    for row in rows:
        writer.writerow([cell_text(row.get(c.name), c.type) for c in columns])
    return out.getvalue()


def encode(schema: TableSchema, rows: Iterable[Row]) -> bytes:
    """The whole file: header, then the rows ordered by key."""
    out = io.StringIO()
    _writer(out).writerow(schema.names)
    ordered = sorted(rows, key=lambda row: row[schema.key])
    return (out.getvalue() + encode_lines(schema, ordered)).encode("utf-8")


def decode(data: bytes, schema: TableSchema, source: str) -> list[Row]:
    """The file's rows as typed values, in file order. MalformedTable names source and line."""
    return list(read_rows(data, schema, source))


def read_rows(data: bytes, schema: TableSchema, source: str) -> Iterator[Row]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedTable(f"{source}: not UTF-8 text (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        yield from _parsed_rows(text, schema, source)
    except MalformedTable:
        # Only a file that does not read is checked: a quoted cell may hold marker-like lines.
        from ..memory.records import RESOLVE_CONFLICT, conflict_lines, merge_conflicts

        conflicts = merge_conflicts(text)
        if conflicts:
            where = conflict_lines(conflicts)
            raise TableMergeConflict(
                f"{source}: unresolved merge conflict ({where}): {RESOLVE_CONFLICT}"
            ) from None
        raise


def _parsed_rows(text: str, schema: TableSchema, source: str) -> Iterator[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise MalformedTable(f"{source}: empty file (a table has at least its header line)")
        _check_header(header, schema, source)
        types = [schema.types[name] for name in header]
        key_at = header.index(schema.key)
        keys: set[int] = set()
        for fields in reader:
            line = reader.line_num
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
            yield row
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
