"""The derived SQLite index of the vault's tables: one SQL table of typed rows per table file, an
FTS5 table over its text columns for `table search`, and where each row's record is in the CSV
file (its byte span), so a change of a few rows rewrites only their lines.

A cache under .aibuddy/ like the others: each use compares the table's two files (rows and
schema) with the signature stored here and rebuilds that table from the CSV when they differ,
so an edit by hand or by `git pull` is picked up by the next command; deleting it loses
nothing. aibuddy's own writes update it in place (`apply`) instead of rebuilding, a new column
included (ALTER TABLE).
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..errors import Busy, InvalidInput
from ..store.cache_db import CacheDB, cannot_write, files_digest, is_contention, is_corrupt, to_signed
from ..store.files import Entry
from ..text import index_text
from .access import TableRef
from .schema import ColumnSpec, TableSchema, json_text

if TYPE_CHECKING:
    from .csvfile import Span
    from .filters import Column

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE tables (
    id INTEGER PRIMARY KEY,
    rows_key TEXT NOT NULL UNIQUE,
    signature INTEGER NOT NULL,
    columns TEXT NOT NULL,
    row_count INTEGER NOT NULL
);
CREATE TABLE vectors (hash TEXT PRIMARY KEY, vector BLOB NOT NULL)
"""

SQL_TYPES = {"int": "INTEGER", "float": "REAL", "bool": "INTEGER"}  # the others are TEXT
TEXT_TYPES = ("str", "list", "dict")  # what table search reads

Row = dict[str, Any]
Placed = tuple[int, int, int]  # a row's key and its record's span in the CSV file (start, stop)


def to_sql(value: Any, type_: str) -> Any:
    if value is None:
        return None
    if type_ == "bool":
        return 1 if value else 0
    if type_ in ("list", "dict"):
        return json_text(value)
    return value


def from_sql(value: Any, type_: str) -> Any:
    if value is None:
        return None
    if type_ == "bool":
        return bool(value)
    if type_ in ("list", "dict"):
        return json.loads(value)
    if type_ == "float":
        return float(value)
    return value


def search_text(row: Row, schema: TableSchema) -> str:
    """What table search matches a row by: its text, list and object cells, tokenised as in kb search."""
    parts = []
    for column in schema.columns:
        value = row.get(column.name)
        if value is not None and column.type in TEXT_TYPES:
            parts.append(value if column.type == "str" else json_text(value))
    return index_text(" ".join(parts))


class IndexedTable:
    """One table as the index holds it: its SQL names and the columns an expression may use."""

    def __init__(
        self, ref: TableRef, schema: TableSchema, table_id: int, row_count: int, signature: int
    ) -> None:
        self.ref = ref
        self.schema = schema
        self.rows = f"rows_{table_id}"
        self.fts = f"fts_{table_id}"
        self.spans = f"spans_{table_id}"
        self.row_count = row_count
        self.signature = signature  # of the files the index held when this was opened

    def columns(self) -> dict[str, Column]:
        """The names an expression over this table may use."""
        from .filters import Column  # the filter language: imported when an expression is compiled

        return {c.name: Column(f'"{c.name}"', c.type) for c in self.schema.columns}

    def where(self, expression: str | None, what: str = "filter") -> tuple[str, list[Any]]:
        """The SQL WHERE clause of a filter over this table and its parameters ("" without one)."""
        if not expression:
            return "", []
        from .filters import compile_filter

        compiled = compile_filter(expression, self.columns(), what=what)
        return f" WHERE {compiled.sql}", list(compiled.params)

    def decode(self, values: Sequence[Any], names: Sequence[str]) -> Row:
        types = self.schema.types
        return {name: from_sql(value, types[name]) for name, value in zip(names, values, strict=True)}


class TableIndex(CacheDB):
    schema = _SCHEMA
    version = SCHEMA_VERSION
    tables = ("meta", "tables", "vectors")

    def _drop(self, table_id: int) -> None:
        for kind in ("rows", "fts", "spans"):
            self.db.execute(f"DROP TABLE IF EXISTS {kind}_{table_id}")

    def ensure(
        self,
        ref: TableRef,
        schema: TableSchema,
        files: tuple[Entry, Entry],
        load: Callable[[], Iterable[tuple[Row, Span]]],
    ) -> IndexedTable:
        """The table's rows in the index, rebuilt from load() (rows and their spans) when its
        files changed."""
        signature = to_signed(files_digest(files))
        layout = _layout(schema)
        found = self.db.execute(
            "SELECT id, signature, columns, row_count FROM tables WHERE rows_key = ?", (ref.rows_key,)
        ).fetchone()
        if found is not None and found[1] == signature and found[2] == layout:
            return IndexedTable(ref, schema, found[0], found[3], signature)
        loaded = list(load())  # read (and checked) before the write transaction
        rows = [row for row, _ in loaded]
        with self.write():
            if found is not None:
                self._drop(found[0])
                self.db.execute("DELETE FROM tables WHERE id = ?", (found[0],))
            cursor = self.db.execute(
                "INSERT INTO tables (rows_key, signature, columns, row_count) VALUES (?, ?, ?, 0)",
                (ref.rows_key, signature, layout),
            )
            table_id = int(cursor.lastrowid or 0)
            table = IndexedTable(ref, schema, table_id, 0, signature)
            self._create(table)
            self._insert(table, rows)
            key = schema.key
            self._place(table, ((row[key], *span) for row, span in loaded))
            table.row_count = len(rows)
            self.db.execute("UPDATE tables SET row_count = ? WHERE id = ?", (len(rows), table_id))
        return table

    def _create(self, table: IndexedTable) -> None:
        # A table of the same id may be left from an index of an older version: made anew.
        for name in (table.rows, table.fts, table.spans):
            self.db.execute(f"DROP TABLE IF EXISTS {name}")
        columns = ", ".join(
            f'"{c.name}" {SQL_TYPES.get(c.type, "TEXT")}'
            + (" PRIMARY KEY" if c.name == table.schema.key else "")
            for c in table.schema.columns
        )
        self.db.execute(f"CREATE TABLE {table.rows} ({columns})")
        tokenize = "tokenize = 'porter unicode61 remove_diacritics 2'"
        self.db.execute(f"CREATE VIRTUAL TABLE {table.fts} USING fts5(text, {tokenize})")
        spans = "key INTEGER PRIMARY KEY, start INTEGER NOT NULL, stop INTEGER NOT NULL"
        self.db.execute(f"CREATE TABLE {table.spans} ({spans})")

    def _place(self, table: IndexedTable, placed: Iterable[Placed]) -> None:
        self.db.executemany(f"INSERT OR REPLACE INTO {table.spans} VALUES (?, ?, ?)", placed)

    def _insert(self, table: IndexedTable, rows: Iterable[Row]) -> None:
        schema = table.schema
        columns = schema.columns
        names = ", ".join(f'"{c.name}"' for c in columns)
        marks = ", ".join("?" for _ in columns)
        rows = list(rows)
        self.db.executemany(
            f"INSERT OR REPLACE INTO {table.rows} ({names}) VALUES ({marks})",
            ([to_sql(row.get(c.name), c.type) for c in columns] for row in rows),
        )
        if any(c.type in TEXT_TYPES for c in columns):
            self.db.executemany(
                f"INSERT INTO {table.fts} (rowid, text) VALUES (?, ?)",
                ((row[schema.key], search_text(row, schema)) for row in rows),
            )

    def apply(
        self,
        table: IndexedTable,
        files: tuple[Entry, Entry],
        *,
        upserts: Iterable[Row] = (),
        deletes: Iterable[int] = (),
        spans: Sequence[Placed] = (),
        moves: Sequence[tuple[int, int]] = (),
        columns: Sequence[ColumnSpec] = (),
    ) -> None:
        """aibuddy's own change to a table it indexed, so the next command does not rebuild: rows
        added, replaced or deleted, the spans of the records written, the records after each
        change moved (`moves`: (offset, shift), every span from offset on, up to the next
        offset, moves by shift), columns added (table.schema already has them: then `spans`
        holds every row's), and the files' new signature."""
        upserts = list(upserts)
        gone = [*deletes, *(row[table.schema.key] for row in upserts)]
        signature = to_signed(files_digest(files))
        with self.write():
            stored = self.db.execute("SELECT signature FROM tables WHERE rows_key = ?", (table.ref.rows_key,))
            if stored.fetchone() != (table.signature,):
                return  # read again from the files meanwhile (by a reader in another process)
            for column in columns:  # O(1) in SQLite: the rows keep their pages
                sql_type = SQL_TYPES.get(column.type, "TEXT")
                self.db.execute(f'ALTER TABLE {table.rows} ADD COLUMN "{column.name}" {sql_type}')
            if columns:
                self.db.execute(f"DELETE FROM {table.spans}")
            for start in range(0, len(gone), 500):
                chunk = gone[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                self.db.execute(f'DELETE FROM {table.rows} WHERE "{table.schema.key}" IN ({marks})', chunk)
                self.db.execute(f"DELETE FROM {table.fts} WHERE rowid IN ({marks})", chunk)
                self.db.execute(f"DELETE FROM {table.spans} WHERE key IN ({marks})", chunk)
            self._insert(table, upserts)
            if not columns:
                self._move(table, moves)
            self._place(table, spans)
            count = self.db.execute(f"SELECT count(*) FROM {table.spans}").fetchone()[0]
            table.row_count = count
            self.db.execute(
                "UPDATE tables SET signature = ?, columns = ?, row_count = ? WHERE rows_key = ?",
                (signature, _layout(table.schema), count, table.ref.rows_key),
            )
            table.signature = signature

    def _move(self, table: IndexedTable, moves: Sequence[tuple[int, int]]) -> None:
        """Shift the spans of the records after each changed one (one pass over the spans)."""
        if not any(shift for _, shift in moves):
            return
        spans = table.spans
        if len(moves) == 1:
            at, shift = moves[0]
            self.db.execute(
                f"UPDATE {spans} SET start = start + ?, stop = stop + ? WHERE start >= ?", (shift, shift, at)
            )
            return
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS moves (at INTEGER PRIMARY KEY, shift INTEGER)")
        self.db.execute("DELETE FROM temp.moves")
        self.db.executemany("INSERT INTO temp.moves (at, shift) VALUES (?, ?)", moves)
        moved = f"(SELECT shift FROM temp.moves WHERE at <= {spans}.start ORDER BY at DESC LIMIT 1)"
        self.db.execute(
            f"UPDATE {spans} SET start = start + {moved}, stop = stop + {moved} WHERE start >= ?",
            (min(at for at, _ in moves),),
        )

    def select(self, table: IndexedTable, clause: str = "", params: Sequence[Any] = ()) -> list[Row]:
        """The rows a WHERE clause (IndexedTable.where) selects, as typed values, by key."""
        names = table.schema.names
        selected = ", ".join(f'"{name}"' for name in names)
        order = f' ORDER BY "{table.schema.key}"'
        found = self.query(f"SELECT {selected} FROM {table.rows}{clause}{order}", params)
        return [table.decode(values, names) for values in found]

    def spans(self, table: IndexedTable, keys: Sequence[int] | None = None) -> list[Placed]:
        """Where the records of the rows of keys (of every row without keys) are, in file order."""
        if keys is None:  # by key, which is file order in a file aibuddy wrote: sorted fast
            every: list[Placed] = self.db.execute(f"SELECT * FROM {table.spans}").fetchall()
            return sorted(every, key=itemgetter(1))
        found: list[Placed] = []
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            found += self.db.execute(f"SELECT * FROM {table.spans} WHERE key IN ({marks})", chunk)
        return sorted(found, key=itemgetter(1))

    def forget(self, ref: TableRef) -> None:
        """Drop a table that was renamed or deleted."""
        self.forget_key(ref.rows_key)

    def forget_key(self, rows_key: str) -> None:
        """Drop the table of a rows file (it is rebuilt from the file on next use)."""
        found = self.db.execute("SELECT id FROM tables WHERE rows_key = ?", (rows_key,)).fetchone()
        if found is None:
            return
        with self.write():
            self._drop(found[0])
            self.db.execute("DELETE FROM tables WHERE id = ?", (found[0],))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read of the index; an expression SQLite cannot evaluate (an integer overflow) is
        the caller's input, a held database is "busy"."""
        try:
            return self.db.execute(sql, list(params)).fetchall()
        except sqlite3.OperationalError as error:
            if is_contention(error):
                raise Busy(f"the tables index is busy ({error}); try again") from None
            if is_corrupt(error) or cannot_write(error):
                raise
            raise InvalidInput(f"the expression cannot be evaluated: {error}") from None

    # --- embeddings, by the hash of the model and the text -------------------------------------

    def stored_vectors(self, hashes: Sequence[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            for digest, blob in self.db.execute(
                f"SELECT hash, vector FROM vectors WHERE hash IN ({marks})", chunk
            ):
                found[digest] = list(array("f", blob))
        return found

    def store_vectors(self, vectors: Mapping[str, Sequence[float]]) -> None:
        with self.write():
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors (hash, vector) VALUES (?, ?)",
                ((digest, array("f", vector).tobytes()) for digest, vector in vectors.items()),
            )


def _layout(schema: TableSchema) -> str:
    """The column layout the SQL table was made for: a change of names or types rebuilds it (as
    does an index made before it held the rows' spans, which had no "spans" mark)."""
    return "spans:" + json.dumps([[c.name, c.type] for c in schema.columns], separators=(",", ":"))
