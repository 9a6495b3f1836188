"""What the table operations share: the user's view of the tables, the store, the derived index,
one lock for every table write, the journal, and reading a table's schema and rows."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from ..clock import utc_now
from ..errors import AibuddyError, NotFound, as_aibuddy_error
from ..store.cache_db import rebuild_if_corrupt
from ..store.files import Entry, Store
from ..vault import Vault
from .access import SUFFIX_SCHEMA, TableAccess, TableRef
from .index import IndexedTable, TableIndex
from .schema import ColumnSpecJson, TableSchema

if TYPE_CHECKING:
    from ..settings import Settings
    from .csvfile import Span

JOURNAL = ".aibuddy/logs/tables.jsonl"
REMOVED = ".aibuddy/logs/removed"  # what a change removed, when too much for its journal line
MAX_JOURNALED = 1000  # rows or keys one journal line lists; beyond, their count
MAX_REMOVED_BYTES = 1 << 20  # the removed values one journal line holds; beyond, they go to a file
MAX_ASKED_ITEMS = 20  # items of a list or an object (rows, values) a line's args show; the rest counted
MAX_ASKED_TEXT = 200  # characters of a text a line's args show


class TableInfoJson(TypedDict):
    table: str
    description: str
    key: str
    columns: list[ColumnSpecJson]
    rows: int


class TableInfo(NamedTuple):
    ref: TableRef
    schema: TableSchema
    rows: int

    def to_json(self) -> TableInfoJson:
        return {
            "table": self.ref.qualified,
            "description": self.schema.description,
            "key": self.schema.key,
            "columns": [c.to_json() for c in self.schema.columns],
            "rows": self.rows,
        }


class TablesState:
    def __init__(
        self,
        vault: Vault,
        user: str,
        store: Store,
        warnings: list[str],
        settings: Settings,
        *,
        index: TableIndex | None = None,
        run: str | None = None,
        source: str = "cli",
    ) -> None:
        """index: a handle to share (default: one of its own). run, source: what the journal lines
        name: the natural-language run they belong to, and "cli" or that run's kind."""
        self.vault = vault
        self.user = user
        self.store = store
        self.warnings = warnings
        self.settings = settings  # for the embedding role
        self.access = TableAccess(user, vault.config.teams)
        self.index = TableIndex(vault.tables_index_path()) if index is None else index
        self.run = run
        self.source = source

    def derive(self, store: Store, *, run: str | None, source: str) -> TablesState:
        """This state for one run of changes (a natural-language run, a consolidation pass): over
        store, its journal lines naming the run and the source, with the same sink, environment
        and index handle (closed with this state, not that one)."""
        return TablesState(
            self.vault, self.user, store, self.warnings, self.settings,
            index=self.index, run=run, source=source,
        )

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

    def read_records(self, ref: TableRef, schema: TableSchema) -> Iterator[tuple[dict[str, Any], Span]]:
        """The rows with where each one's record is in the file (for the index)."""
        from . import csvfile

        data, _ = self.store.read(ref.rows_key)
        return csvfile.read_records(data, schema, ref.rows_key)

    @rebuild_if_corrupt("index")
    def open(self, spec: str | TableRef) -> IndexedTable:
        """A table the user may use, its index brought up to date with its files."""
        ref = spec if isinstance(spec, TableRef) else self.access.parse(spec)
        schema, schema_entry = self.schema(ref)
        rows_entry = self.rows_entry(ref)
        files = (rows_entry, schema_entry)
        return self.index.ensure(ref, schema, files, lambda: self.read_records(ref, schema))

    def write_table(self, ref: TableRef, schema: bytes | None, rows: bytes) -> tuple[Entry, Entry]:
        """A table's files written: its schema (None: as it is), then its rows. When the rows
        cannot be written, the schema is put back as it was (so a full disk leaves the table
        as it was, not half changed). The rows' entry and the schema's."""
        if schema is None:
            return self.store.write(ref.rows_key, rows), self.store.stat(ref.schema_key)
        old, _ = self.store.read(ref.schema_key)
        schema_entry = self.store.write(ref.schema_key, schema)
        with undone_on_failure(lambda: self.store.write(ref.schema_key, old)):
            rows_entry = self.store.write(ref.rows_key, rows)
        return rows_entry, schema_entry

    def refs(self) -> Iterator[TableRef]:
        """Every table the user may see, by folder (their own first, then their teams'), by name."""
        for folder in self.access.folders():
            for entry in sorted(self.store.scan(folder.folder, SUFFIX_SCHEMA), key=lambda e: e.name):
                yield folder._replace(name=entry.name[: -len(SUFFIX_SCHEMA)])

    # --- the journal ------------------------------------------------------------------------

    def journal(self, op: str, table: str, args: dict[str, Any], changed: dict[str, Any]) -> dict[str, Any]:
        """One operation appended to .aibuddy/logs/tables.jsonl before it is made: what it was
        asked (args: redacted and cut to size, see `asked`) and what it changes. An automatic
        run's line is redacted whole; a person's keeps the values their change removes, as they
        are. The line, as written; a journal that cannot be written is an error that says the
        change was not made (the caller makes none)."""
        if self.source != "cli":  # an automatic run's line: no credential-shaped value in the log
            from ..redaction.detect import redacted

            changed = redacted(changed)
        line = {
            "at": utc_now(),
            "user": self.user,
            "source": self.source,
            "run": self.run,
            "op": op,
            "table": table,
            "args": asked(args),
            "changed": changed,
        }
        self._log(JOURNAL, line)
        return line

    def journal_failure(self, line: Mapping[str, Any], error: BaseException) -> None:
        """After `journal(...)` gave line, the change itself failed: a line saying so (op
        "failed", naming the op and the time of the line it follows, and the error). Best
        effort: when even this cannot be written, a warning says the journal's line stands."""
        from ..errors import describe_failure

        reason = describe_failure(error) if isinstance(error, Exception) else type(error).__name__
        failed = {
            **{key: line[key] for key in ("user", "source", "run", "table")},
            "at": utc_now(),
            "op": "failed",
            "args": {"op": line["op"], "at": line["at"]},
            "changed": {"error": " ".join(reason.split())},
        }
        try:
            self._log(JOURNAL, failed)
        except AibuddyError as exc:
            said = f"{line['op']} {line['table']}".strip()
            self.warnings.append(f"{JOURNAL} says {said} was made, but it failed ({exc.message})")

    def _log(self, key: str, line: Mapping[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        try:
            self.store.append(key, text.encode("utf-8"))
        except OSError as exc:
            raise not_logged(key, exc) from exc

    def removed(self, items: list[Any]) -> Any:
        """What a change removed (rows, values), for its journal line: whole when short, else
        its count and first items, the whole list kept in a file under .aibuddy/logs/removed/."""
        data = "".join(json.dumps(item, ensure_ascii=False, default=str) + "\n" for item in items)
        small = len(data) <= MAX_REMOVED_BYTES
        if len(items) <= MAX_JOURNALED and small:
            return items
        first = {"first": items[:MAX_JOURNALED]} if small else {}  # too many, not too large
        return {"count": len(items), **first, "kept": self.keep_removed("jsonl", data.encode("utf-8"))}

    def keep_removed(self, suffix: str, data: bytes) -> str:
        """data kept in a new file under .aibuddy/logs/removed/ (a log: redacted for an automatic
        run, as its journal line is; undo restores from its own snapshot); its key."""
        import secrets

        if self.source != "cli":
            from ..redaction.detect import redact

            data = redact(data.decode("utf-8", "surrogateescape"))[0].encode("utf-8", "surrogateescape")
        key = f"{REMOVED}/{utc_now().replace(':', '')}-{secrets.token_hex(4)}.{suffix}"
        try:
            self.store.write(key, data, create=True)
        except OSError as exc:
            raise not_logged(key, exc) from exc
        return key


@contextmanager
def undone_on_failure(undo: Callable[[], Any]) -> Iterator[None]:
    """The block's failure undoes the step before it (best effort: what the block could not do,
    undo may not either), so a change that fails leaves its table as it was."""
    try:
        yield
    except BaseException:
        with suppress(AibuddyError, OSError):
            undo()
        raise


def not_logged(key: str, error: OSError) -> AibuddyError:
    """A journal (or a file of what a change removes) the file system refuses, as the error of the
    change, which is not made: its code and exit code are the file system's (a full disk: 1,
    a read-only one: 5)."""
    found = as_aibuddy_error(error)
    return type(found)(f"nothing changed: the table journal cannot be written ({key}: {found.message})")


def bounded(items: list[Any]) -> Any:
    """A list for the journal: whole when short, else its length and its first items."""
    if len(items) <= MAX_JOURNALED:
        return items
    return {"count": len(items), "first": items[:MAX_JOURNALED]}


def asked(value: Any) -> Any:
    """What a change was asked (its filter, values, rows, names) for its journal line, redacted
    and cut to size: each list or object to MAX_ASKED_ITEMS items, then each text to
    MAX_ASKED_TEXT characters (after redaction: a credential cut first could be too short to be
    seen), what is left out counted ("…and 5 more"), so a line stays small whatever the call held."""
    from ..redaction.detect import redacted

    return _cut(redacted(_cut(value, texts=False)), texts=True)


def _cut(value: Any, *, texts: bool) -> Any:
    """value with its lists and objects cut (texts=False) or its texts (texts=True)."""
    if isinstance(value, str):
        over = len(value) - MAX_ASKED_TEXT
        return f"{value[:MAX_ASKED_TEXT]}…and {over} more characters" if texts and over > 0 else value
    limit = None if texts else MAX_ASKED_ITEMS
    if isinstance(value, Mapping):
        items = list(value.items())
        shown = {str(key): _cut(item, texts=texts) for key, item in items[:limit]}
        if len(items) > len(shown):
            shown["…"] = f"and {len(items) - len(shown)} more"
        return shown
    if isinstance(value, list | tuple):
        listed = [_cut(item, texts=texts) for item in value[:limit]]
        if len(value) > len(listed):
            listed.append(f"…and {len(value) - len(listed)} more")
        return listed
    return value


class TableList(NamedTuple):
    """`table list` and the tables_overview tool: every table the user may see."""

    user: str
    tables: list[TableInfo]
