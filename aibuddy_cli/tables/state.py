"""What the table operations share: the user's view of the tables, the store, the derived index,
one lock for every table write, the journal, and reading a table's schema and rows."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from ..cache_db import rebuild_if_corrupt
from ..clock import utc_now
from ..errors import NotFound
from ..storage import Entry, Store
from ..vault import Vault
from .access import SUFFIX_SCHEMA, TableAccess, TableRef
from .index import IndexedTable, TableIndex
from .schema import TableSchema

JOURNAL = ".aibuddy/logs/tables.jsonl"
REMOVED = ".aibuddy/logs/removed"  # what a change removed, when too much for its journal line
MAX_JOURNALED = 1000  # rows or keys one journal line lists; beyond, their count


class TableInfo(NamedTuple):
    ref: TableRef
    schema: TableSchema
    rows: int

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.ref.qualified,
            "description": self.schema.description,
            "key": self.schema.key,
            "columns": [c.to_json() for c in self.schema.columns],
            "rows": self.rows,
        }


class TablesState:
    def __init__(
        self, vault: Vault, user: str, store: Store, warnings: list[str], environ: Mapping[str, str]
    ) -> None:
        self.vault = vault
        self.user = user
        self.store = store
        self.warnings = warnings
        self.environ = environ  # for the embedding role
        self.access = TableAccess(user, vault.config.teams)
        self.index = TableIndex(vault.tables_index_path())
        self.run: str | None = None  # the natural-language run the journal lines belong to
        self.source = "cli"

    def close(self) -> None:
        self.index.close()

    def lock(self) -> AbstractContextManager[None]:
        """The one lock of every table write (rows, schema, journal) in this vault."""
        return self.store.lock("tables")

    # --- reading a table -------------------------------------------------------------------

    def schema(self, ref: TableRef) -> tuple[TableSchema, Entry]:
        try:
            data, entry = self.store.read(ref.schema_key)
        except NotFound:
            raise NotFound(f"no table {ref.qualified!r}") from None
        return TableSchema.decode(data, ref.schema_key), entry

    def rows_entry(self, ref: TableRef) -> Entry:
        try:
            return self.store.stat(ref.rows_key)
        except NotFound:
            raise NotFound(
                f"table {ref.qualified}: {ref.rows_key} is missing (the schema has no rows file)"
            ) from None

    def read_rows(self, ref: TableRef, schema: TableSchema) -> list[dict[str, Any]]:
        from . import csvfile

        data, _ = self.store.read(ref.rows_key)
        return csvfile.decode(data, schema, ref.rows_key)

    @rebuild_if_corrupt("index")
    def open(self, spec: str | TableRef) -> IndexedTable:
        """A table the user may use, its index brought up to date with its files."""
        ref = spec if isinstance(spec, TableRef) else self.access.parse(spec)
        schema, schema_entry = self.schema(ref)
        rows_entry = self.rows_entry(ref)
        return self.index.ensure(ref, schema, (rows_entry, schema_entry), lambda: self.read_rows(ref, schema))

    def refs(self) -> Iterator[TableRef]:
        """Every table the user may see, by folder (their own first, then their teams'), by name."""
        for folder in self.access.folders():
            for entry in sorted(self.store.scan(folder.folder, SUFFIX_SCHEMA), key=lambda e: e.name):
                yield folder._replace(name=entry.name[: -len(SUFFIX_SCHEMA)])

    # --- the journal ------------------------------------------------------------------------

    def journal(self, op: str, table: str, args: dict[str, Any], changed: dict[str, Any]) -> None:
        """One applied operation, with what it changed, appended to .aibuddy/logs/tables.jsonl."""
        line = {
            "at": utc_now(),
            "user": self.user,
            "source": self.source,
            "run": self.run,
            "op": op,
            "table": table,
            "args": args,
            "changed": changed,
        }
        if self.source != "cli":  # an automatic run's line: no credential-shaped value in the log
            from ..redaction import redacted

            line = redacted(line)
        self.store.append(JOURNAL, (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode("utf-8"))

    def removed(self, items: list[Any]) -> Any:
        """What a change removed (rows, values), for its journal line: whole when short, else
        its count and first items, the whole list kept in a file under .aibuddy/logs/removed/."""
        if len(items) <= MAX_JOURNALED:
            return items
        data = "".join(json.dumps(item, ensure_ascii=False, default=str) + "\n" for item in items)
        return {**bounded(items), "kept": self.keep_removed("jsonl", data.encode("utf-8"))}

    def keep_removed(self, suffix: str, data: bytes) -> str:
        """data kept in a new file under .aibuddy/logs/removed/ (a log: redacted for an automatic
        run, as its journal line is; undo restores from its own snapshot); its key."""
        import secrets

        if self.source != "cli":
            from ..redaction import redact

            data = redact(data.decode("utf-8", "surrogateescape"))[0].encode("utf-8", "surrogateescape")
        key = f"{REMOVED}/{utc_now().replace(':', '')}-{secrets.token_hex(4)}.{suffix}"
        self.store.write(key, data, create=True)
        return key


def bounded(items: list[Any]) -> Any:
    """A list for the journal: whole when short, else its length and its first items."""
    if len(items) <= MAX_JOURNALED:
        return items
    return {"count": len(items), "first": items[:MAX_JOURNALED]}


class TableList(NamedTuple):
    """`table list` and the tables_overview tool: every table the user may see."""

    user: str
    tables: list[TableInfo]

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "tables": [t.to_json() for t in self.tables]}
