"""The derived SQLite index of the vault's tables: one SQL table of typed rows per table file, and
an FTS5 table over its text columns for `table search`.

A cache under .aibuddy/ like the others: each use compares the table's two files (rows and
schema) with the signature stored here and rebuilds that table from the CSV when they differ,
so an edit by hand or by `git pull` is picked up by the next command; deleting it loses
nothing. aibuddy's own writes update it in place (`apply`) instead of rebuilding.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cache_db import CacheDB, cannot_write, files_digest, is_contention, is_corrupt, to_signed
from ..errors import Busy, InvalidInput
from ..storage import Entry
from ..text import index_text
from .access import TableRef
from .schema import TableSchema, json_text

if TYPE_CHECKING:
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

    def __init__(self, ref: TableRef, schema: TableSchema, table_id: int, row_count: int) -> None:
        self.ref = ref
        self.schema = schema
        self.rows = f"rows_{table_id}"
        self.fts = f"fts_{table_id}"
        self.row_count = row_count

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
        self.db.execute(f"DROP TABLE IF EXISTS rows_{table_id}")
        self.db.execute(f"DROP TABLE IF EXISTS fts_{table_id}")

    def ensure(
        self,
        ref: TableRef,
        schema: TableSchema,
        files: tuple[Entry, Entry],
        load: Callable[[], Iterable[Row]],
    ) -> IndexedTable:
        """The table's rows in the index, rebuilt from load() when its files changed."""
        signature = to_signed(files_digest(files))
        layout = _layout(schema)
        found = self.db.execute(
            "SELECT id, signature, columns, row_count FROM tables WHERE rows_key = ?", (ref.rows_key,)
        ).fetchone()
        if found is not None and found[1] == signature and found[2] == layout:
            return IndexedTable(ref, schema, found[0], found[3])
        rows = list(load())  # read (and checked) before the write transaction
        with self.write():
            if found is not None:
                self._drop(found[0])
                self.db.execute("DELETE FROM tables WHERE id = ?", (found[0],))
            cursor = self.db.execute(
                "INSERT INTO tables (rows_key, signature, columns, row_count) VALUES (?, ?, ?, 0)",
                (ref.rows_key, signature, layout),
            )
            table_id = int(cursor.lastrowid or 0)
            table = IndexedTable(ref, schema, table_id, 0)
            self._create(table)
            self._insert(table, rows)
            table.row_count = len(rows)
            self.db.execute("UPDATE tables SET row_count = ? WHERE id = ?", (len(rows), table_id))
        return table

    def _create(self, table: IndexedTable) -> None:
        # A table of the same id may be left from an index of an older version: made anew.
        self.db.execute(f"DROP TABLE IF EXISTS {table.rows}")
        self.db.execute(f"DROP TABLE IF EXISTS {table.fts}")
        columns = ", ".join(
            f'"{c.name}" {SQL_TYPES.get(c.type, "TEXT")}'
            + (" PRIMARY KEY" if c.name == table.schema.key else "")
            for c in table.schema.columns
        )
        self.db.execute(f"CREATE TABLE {table.rows} ({columns})")
        tokenize = "tokenize = 'porter unicode61 remove_diacritics 2'"
        self.db.execute(f"CREATE VIRTUAL TABLE {table.fts} USING fts5(text, {tokenize})")

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
    ) -> None:
        """aibuddy's own change to a table it indexed: rows added, replaced or deleted, and the
        files' new signature, so the next command does not rebuild."""
        upserts = list(upserts)
        gone = [*deletes, *(row[table.schema.key] for row in upserts)]
        with self.write():
            for start in range(0, len(gone), 500):
                chunk = gone[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                self.db.execute(f'DELETE FROM {table.rows} WHERE "{table.schema.key}" IN ({marks})', chunk)
                self.db.execute(f"DELETE FROM {table.fts} WHERE rowid IN ({marks})", chunk)
            self._insert(table, upserts)
            count = self.db.execute(f"SELECT count(*) FROM {table.rows}").fetchone()[0]
            table.row_count = count
            self.db.execute(
                "UPDATE tables SET signature = ?, row_count = ? WHERE rows_key = ?",
                (to_signed(files_digest(files)), count, table.ref.rows_key),
            )

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
    """The column layout the SQL table was made for: a change of names or types rebuilds it."""
    return json.dumps([[c.name, c.type] for c in schema.columns], separators=(",", ":"))
