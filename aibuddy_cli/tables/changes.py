"""Changing tables: create, add, update and delete rows, rename and delete tables, and the column
operations. Every change holds the tables lock, checks everything before it writes (a refused
value writes nothing of that call), works out what it will change, appends that and what it was
asked to the journal (.aibuddy/logs/tables.jsonl), and only then writes the files, atomically,
keeping the index in step: a journal that cannot be written leaves the tables as they were, and
every change made is journaled (a write that fails after its line gets a "failed" line).
A change of rows, and a new empty column, touch only those rows' lines (see edits.py); the
other column operations rewrite every row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Generic, NamedTuple, Required, TypedDict, TypeVar

from ..errors import Conflict, InvalidInput, ModelUnavailable, NotFound, Option
from ..jsonvalues import to_json
from . import csvfile
from .access import TableRef
from .edits import RowsEdit, StaleIndex, plan_rows
from .filters import compile_expression
from .index import IndexedTable, from_sql
from .schema import (
    COLUMN_TYPES,
    DEFAULT_KEY,
    INT_RANGE,
    MAX_COLUMNS,
    ColumnSpec,
    ColumnSpecJson,
    TableSchema,
    ValueRefused,
    as_json,
    carry,
    check_lossy,
    check_name,
    infer_type,
    parse_row,
    parse_value,
    same_value,
)
from .state import TableInfo, TablesState, bounded, undone_on_failure

Row = dict[str, Any]
Item = TypeVar("Item")  # what a bounded list holds
MAX_REPORTED = 50  # values a transform could not convert, listed in its answer
MAX_NAMED = 10  # values a refusal names in its message


class ValuesNotKept(InvalidInput):
    """A change that would lose or alter values it was not asked to: refused as a whole (exit 6),
    nothing written, naming the rows and values, unless the caller asked for a lossy conversion."""

    code = "values_not_kept"


class BoundedJson(TypedDict, Generic[Item]):
    """A list too long for a journal line (state.bounded): its length and its first items."""

    count: int
    first: list[Item]


class BeforeJson(TypedDict):
    key: int
    values: Row  # the values the row had in the columns the update set


class NotConvertedValueJson(TypedDict):
    key: int
    value: Any  # the value as JSON
    reason: str


class NotConvertedJson(TypedDict):
    count: int
    values: list[NotConvertedValueJson]  # the first MAX_REPORTED


class ChangedJson(TypedDict, total=False):
    """What a change did, in its operation's own keys: each operation (`Change.op`) gives some
    of these (a TypedDict per operation would be exact, but `op` is a plain string and one
    shape keeps the journal's reader simple); every key is declared, none is extra."""

    schema: TableSchema  # create_table, delete_table
    csv: str  # delete_table: the rows file it removed (or where it is kept)
    new: str  # rename_table, rename_column
    added: int  # add_rows
    keys: list[int] | BoundedJson[int]  # add_rows: the keys given
    new_columns: list[ColumnSpecJson]  # add_rows
    matched: int  # update_rows, copy_column
    updated: int  # update_rows
    before: list[BeforeJson] | BoundedJson[BeforeJson]  # update_rows
    deleted: int  # delete_rows
    rows: list[Row] | BoundedJson[Row]  # delete_rows
    column: str  # the column operations
    type: str
    expression: str
    not_converted: NotConvertedJson  # create_derived_column, transform_column
    lossy: str
    was: str  # transform_column: the column's type before
    to_table: str  # copy_column
    values: int  # vectorize_column: the values embedded


class ChangeJson(ChangedJson, total=False):
    op: Required[str]
    table: Required[str]


class Change(NamedTuple):
    """What one operation did, as its answer and its journal line (which also has `kept`: the
    keys of the rows it changed and the values it removed or replaced, when the answer does not
    list them, and `asked`: what the operation was asked to do, the line's args)."""

    op: str
    table: str
    changed: ChangedJson
    kept: dict[str, Any] | None = None
    asked: dict[str, Any] | None = None

    def to_json(self) -> ChangeJson:
        return {"op": self.op, "table": self.table, **self.changed}


class Changes(NamedTuple):
    """Several operations' answers: the tables deleted, a column moved."""

    changes: list[Change]


Reshaped = tuple[Change, TableSchema]  # what a column operation did, and the table's new schema
Planned = TypeVar("Planned")  # what a change works out before it writes (the change, its edit)


class TableChanges:
    def __init__(self, state: TablesState) -> None:
        self.state = state

    # --- tables --------------------------------------------------------------------------------

    def create(
        self, name: str, description: str = "", key: str = DEFAULT_KEY, columns: Sequence[ColumnSpec] = ()
    ) -> TableInfo:
        ref = self.state.access.parse(name)
        description = self._screened(description, "create", ref.qualified, "the description")
        schema = TableSchema.new(description, key, columns)
        with self.state.lock():
            if self.state.store.exists(ref.schema_key) or self.state.store.exists(ref.rows_key):
                raise Conflict(f"table {ref.qualified} exists")
            columns_asked = [c.to_json() for c in columns]
            asked = {"name": name, "description": description, "key": key, "columns": columns_asked}

            def write() -> None:
                self.state.store.write(ref.schema_key, schema.encode(), create=True)
                with undone_on_failure(lambda: self.state.store.delete(ref.schema_key)):
                    self.state.store.write(ref.rows_key, csvfile.encode(schema, []), create=True)

            change = Change("create_table", ref.qualified, {"schema": to_json(schema)}, asked=asked)
            self._applied(change, write)
        return TableInfo(ref, schema, 0)

    def rename(self, old: str, new: str) -> Change:
        """A table under a new name, in the same folder (NAME, or the folder's full reference)."""
        ref = self.state.access.parse(old)
        target = self.state.access.parse(new) if "/" in new else ref.renamed(new)
        if target.folder != ref.folder:
            raise InvalidInput("a table is renamed within its folder: copy its rows to move it elsewhere")
        with self.state.lock():
            self.state.schema(ref)
            if self.state.store.exists(target.schema_key) or self.state.store.exists(target.rows_key):
                raise Conflict(f"table {target.qualified} exists")
            change = Change("rename_table", ref.qualified, {"new": target.qualified})

            def write() -> None:
                self.state.store.move(ref.rows_key, target.rows_key)
                with undone_on_failure(lambda: self.state.store.move(target.rows_key, ref.rows_key)):
                    self.state.store.move(ref.schema_key, target.schema_key)
                self.state.index.forget(ref)

            self._applied(change._replace(asked={"new": new}), write)
        return change

    def delete(self, specs: Sequence[str]) -> list[Change]:
        """Delete tables; the journal keeps their schema and, when small, their rows' text."""
        refs = [self.state.access.parse(spec) for spec in specs]
        changes = []
        with self.state.lock():
            found = [(ref, *self.state.schema(ref)) for ref in refs]  # all exist before any goes
            for ref, schema, _ in found:
                try:
                    data, _ = self.state.store.read(ref.rows_key)
                except NotFound:
                    data = b""
                kept = (
                    data.decode("utf-8", "replace")
                    if len(data) <= 1 << 20
                    else f"({len(data)} bytes, kept in {self.state.keep_removed('csv', data)})"
                )
                change = Change("delete_table", ref.qualified, {"schema": to_json(schema), "csv": kept})

                def write(ref: TableRef = ref, data: bytes = data) -> None:
                    schema_data, _ = self.state.store.read(ref.schema_key)
                    self.state.store.delete(ref.schema_key)
                    with undone_on_failure(lambda: self.state.store.write(ref.schema_key, schema_data)):
                        if data or self.state.store.exists(ref.rows_key):
                            self.state.store.delete(ref.rows_key)
                    self.state.index.forget(ref)

                self._applied(change._replace(asked={"tables": list(specs)}), write)
                changes.append(change)
        return changes

    # --- rows ----------------------------------------------------------------------------------

    def add_rows(self, spec: str, rows: Sequence[Mapping[str, Any]], *, from_text: bool = False) -> Change:
        """Rows appended with new keys. A column the table lacks is created with the type its
        values suggest (from_text: the values are CSV text). Nothing is written when any value
        does not fit its column."""
        if not rows:
            raise InvalidInput("no rows to add")
        with self.state.lock():
            table = self.state.open(spec)
            rows = self._screened(rows, "add", spec, "a row")
            change, edit = self._retried(table, lambda table: self._add(table, rows, from_text))
            asked: dict[str, Any] = {"rows": rows, **({"from_text": True} if from_text else {})}
            self._applied(change._replace(asked=asked), edit.write)
        return change

    def _add(
        self, table: IndexedTable, rows: Sequence[Mapping[str, Any]], from_text: bool
    ) -> tuple[Change, RowsEdit]:
        schema = table.schema
        new_columns = self._new_columns(schema, rows, from_text)
        if schema.key in {name for row in rows for name in row}:
            raise InvalidInput(
                f"the key column {schema.key} is assigned by aibuddy; leave it out of the rows"
            )
        grown = schema.with_columns([*schema.columns, *new_columns])
        types = grown.types
        parsed = [parse_row(row, types, number) for number, row in enumerate(rows, 1)]
        start = max(schema.next_key, self._max_key(table) + 1)
        if start + len(parsed) - 1 > INT_RANGE[1]:
            raise InvalidInput(
                f"table {table.ref.qualified}: no key is left for {len(parsed)} row(s) (the next key "
                f"{start} is past the largest, {INT_RANGE[1]}: check next_key in {table.ref.schema_key})"
            )
        for offset, row in enumerate(parsed):
            row[schema.key] = start + offset
        grown = grown._replace(next_key=start + len(parsed))
        edit = plan_rows(self.state, table, grown, added=parsed, new_columns=new_columns)
        keys = [row[schema.key] for row in parsed]
        change = Change(
            "add_rows",
            table.ref.qualified,
            {"added": len(keys), "keys": bounded(keys), "new_columns": [c.to_json() for c in new_columns]},
        )
        return change, edit

    def _retried(self, table: IndexedTable, work: Callable[[IndexedTable], Planned]) -> Planned:
        """work(table); once more on the table read again from its file when the index turns out
        to have missed an edit of it (edits.StaleIndex, raised before anything is written; a
        second one is the caller's, exit 4)."""
        try:
            return work(table)
        except StaleIndex:
            self.state.index.forget(table.ref)
            return work(self.state.open(table.ref))

    def _screened(self, values: Any, verb: str, spec: str, part: str) -> Any:
        """Values a model chose (consolidation, `table update`/`refactor`) with credential-shaped
        values redacted; a person's own (the CLI, MCP tools) kept, with a warning."""
        from ..redaction.detect import screen

        source = self.state.source
        automatic = source != "cli"
        what = f"{source}, {part} of {spec}" if automatic else f"table {verb} {spec}: {part}"
        return screen(values, automatic=automatic, warnings=self.state.warnings, what=what)

    def _new_columns(
        self, schema: TableSchema, rows: Sequence[Mapping[str, Any]], from_text: bool
    ) -> list[ColumnSpec]:
        known = set(schema.names)
        names: dict[str, None] = {}
        for number, row in enumerate(rows, 1):
            if not isinstance(row, Mapping):
                raise InvalidInput(f"row {number}: a row is an object of column names and values")
            for name in row:
                if name not in known:
                    names[check_name(name)] = None
        if len(known) + len(names) > MAX_COLUMNS:
            raise InvalidInput(f"a table has at most {MAX_COLUMNS} columns")
        return [
            ColumnSpec(name, infer_type((row.get(name) for row in rows), from_text=from_text))
            for name in names
        ]

    def update_rows(self, spec: str, where: str, values: Mapping[str, Any]) -> Change:
        """The rows where `where` holds get `values`; the journal keeps the values they had."""
        if not values:
            raise InvalidInput("no values to set")
        with self.state.lock():
            table = self.state.open(spec)
            values = self._screened(values, "update-rows", spec, "a value")
            change, edit = self._retried(table, lambda table: self._update(table, where, values))
            if edit is not None:
                self._applied(change._replace(asked={"where": where, "set": values}), edit.write)
        return change

    def _update(
        self, table: IndexedTable, where: str, values: Mapping[str, Any]
    ) -> tuple[Change, RowsEdit | None]:
        schema = table.schema
        if schema.key in values:
            raise InvalidInput(f"the key column {schema.key} is assigned by aibuddy and cannot be set")
        for name in values:
            schema.column(name)
        try:
            new = {name: parse_value(value, schema.types[name]) for name, value in values.items()}
        except ValueRefused as exc:
            raise InvalidInput(Option("set"), f": {exc}") from None
        matched = self._matching(table, where)
        replaced: list[tuple[Row, Row]] = []
        before: list[dict[str, Any]] = []
        for row in matched:
            # (same_value: [1] is not [True], 1 is not 1.0, 0.0 is not -0.0 in a cell)
            old = {
                name: row.get(name)
                for name, value in new.items()
                if not same_value(row.get(name), value, schema.types[name])
            }
            if old:
                before.append({"key": row[schema.key], "values": old})
                replaced.append((row, new))
        change = Change(
            "update_rows",
            table.ref.qualified,
            {"matched": len(matched), "updated": len(before), "before": bounded(before)},
        )
        if not replaced:
            return change, None
        edit = plan_rows(self.state, table, schema, replaced=replaced)
        keys = [entry["key"] for entry in before]
        return change._replace(kept={"keys": bounded(keys), "before": self.state.removed(before)}), edit

    def delete_rows(self, spec: str, where: str) -> Change:
        with self.state.lock():
            table = self.state.open(spec)
            change, edit = self._retried(table, lambda table: self._delete(table, where))
            if edit is not None:
                self._applied(change._replace(asked={"where": where}), edit.write)
        return change

    def _delete(self, table: IndexedTable, where: str) -> tuple[Change, RowsEdit | None]:
        deleted = self._matching(table, where)
        change = Change(
            "delete_rows", table.ref.qualified, {"deleted": len(deleted), "rows": bounded(deleted)}
        )
        if not deleted:
            return change, None
        edit = plan_rows(self.state, table, table.schema, deleted=deleted)
        keys = [row[table.schema.key] for row in deleted]
        return change._replace(kept={"keys": bounded(keys), "rows": self.state.removed(deleted)}), edit

    def _matching(self, table: IndexedTable, where: str) -> list[Row]:
        """The rows where `where` holds, as the index has them, by key."""
        if not where or not where.strip():
            raise InvalidInput('a filter is required (write "True" to mean every row)')
        clause, params = table.where(where)
        return self.state.index.select(table, clause, params)

    def _computed(self, table: IndexedTable, expression: str) -> tuple[dict[int, Any], str | None]:
        """An expression's value for every row, by key, and the type the expression has."""
        compiled = compile_expression(expression, table.columns())
        found = self.state.index.query(
            f'SELECT "{table.schema.key}", {compiled.sql} FROM {table.rows}', compiled.params
        )
        return dict(found), compiled.type

    def _max_key(self, table: IndexedTable) -> int:
        found = self.state.index.query(f'SELECT max("{table.schema.key}") FROM {table.rows}')[0][0]
        return int(found or 0)

    # --- columns -------------------------------------------------------------------------------

    def add_column(self, spec: str, column: str, type_: str, description: str = "") -> Change:
        """An empty column: one more empty field at the end of each row's line."""
        check_name(column)
        if type_ not in COLUMN_TYPES:
            raise InvalidInput(f"unknown type {type_!r}: use {', '.join(COLUMN_TYPES)}")
        added = ColumnSpec(column, type_, description)

        def add(table: IndexedTable) -> tuple[Change, RowsEdit]:
            if column in table.schema.types:
                raise Conflict(f"column {column} exists in {table.ref.qualified}")
            if len(table.schema.columns) >= MAX_COLUMNS:
                raise InvalidInput(f"a table has at most {MAX_COLUMNS} columns")
            schema = table.schema.with_columns([*table.schema.columns, added])
            edit = plan_rows(self.state, table, schema, new_columns=[added])
            return Change("create_empty_column", table.ref.qualified, {"column": column, "type": type_}), edit

        with self.state.lock():
            change, edit = self._retried(self.state.open(spec), add)
            asked = {"column": column, "type": type_, **({"description": description} if description else {})}
            self._applied(change._replace(asked=asked), edit.write)
        return change

    def derive_column(
        self,
        spec: str,
        column: str,
        expression: str,
        type_: str | None = None,
        lossy: str | None = None,
    ) -> Change:
        """A new column computed from the others (`price * quantity`, `lower(name)`). A value
        the chosen type cannot hold exactly refuses the change, unless `lossy` says what to do."""
        check_name(column)
        check_lossy(lossy)

        def derive(table: IndexedTable, rows: list[Row]) -> Reshaped:
            if column in table.schema.types:
                raise Conflict(f"column {column} exists in {table.ref.qualified}")
            found, computed_type = self._computed(table, expression)
            chosen = type_ or _derived_type(computed_type, found.values())
            if chosen not in COLUMN_TYPES:
                raise InvalidInput(f"unknown type {chosen!r}: use {', '.join(COLUMN_TYPES)}")
            values = {k: _from_expression(v, computed_type) for k, v in found.items()}
            failed, _ = self._fill(table, rows, column, chosen, values, lossy, "derived")
            schema = table.schema.with_columns([*table.schema.columns, ColumnSpec(column, chosen)])
            detail: ChangedJson = {
                "column": column,
                "type": chosen,
                "expression": expression,
                "not_converted": failed,
            }
            if lossy:
                detail["lossy"] = lossy
            return Change("create_derived_column", table.ref.qualified, detail), schema

        asked = {"column": column, "expression": expression, **_given(type=type_, lossy=lossy)}
        return self._reshape(spec, derive, asked)

    def delete_column(self, spec: str, column: str) -> Change:
        """A column removed; the journal keeps its values (by key)."""

        def drop(table: IndexedTable, rows: list[Row]) -> Reshaped:
            spec_ = self._own_column(table, column)
            key = table.schema.key
            removed = []
            for row in rows:
                value = row.pop(column, None)
                if value is not None:
                    removed.append({"key": row[key], "value": value})
            schema = table.schema.with_columns([c for c in table.schema.columns if c.name != column])
            detail: ChangedJson = {"column": column, "type": spec_.type}
            kept = {"column_spec": spec_.to_json(), "values": self.state.removed(removed)}
            return Change("delete_column", table.ref.qualified, detail, kept), schema

        return self._reshape(spec, drop, {"column": column})

    def rename_column(self, spec: str, old: str, new: str) -> Change:
        check_name(new)

        def rename(table: IndexedTable, rows: list[Row]) -> Reshaped:
            self._own_column(table, old)
            if new in table.schema.types:
                raise Conflict(f"column {new} exists in {table.ref.qualified}")
            for row in rows:
                row[new] = row.pop(old, None)
            columns = [c._replace(name=new) if c.name == old else c for c in table.schema.columns]
            detail: ChangedJson = {"column": old, "new": new}
            return Change("rename_column", table.ref.qualified, detail), table.schema.with_columns(columns)

        return self._reshape(spec, rename, {"column": old, "new": new})

    def transform_column(
        self,
        spec: str,
        column: str,
        type_: str | None = None,
        expression: str | None = None,
        lossy: str | None = None,
    ) -> Change:
        """A column's values converted to another type, or replaced by an expression's values.
        Each value must convert exactly (149.0 to 149; not 79.5 to a whole number, not "0042" to
        42): else the change is refused as a whole, naming the rows and values, and nothing is
        written. `lossy` asks for it anyway: "round" takes the nearest value of the type,
        "drop" empties what does not convert exactly; those values are listed in the answer
        and the journal keeps every value the change replaced."""
        if type_ is None and expression is None:
            raise InvalidInput("give a new type, an expression, or both")
        check_lossy(lossy)

        def transform(table: IndexedTable, rows: list[Row]) -> Reshaped:
            current = self._own_column(table, column)
            chosen = type_ or current.type
            if chosen not in COLUMN_TYPES:
                raise InvalidInput(f"unknown type {chosen!r}: use {', '.join(COLUMN_TYPES)}")
            key = table.schema.key
            if expression is not None:
                found, computed_type = self._computed(table, expression)
                values = {k: _from_expression(v, computed_type) for k, v in found.items()}
            else:
                values = {row[key]: (row.get(column), current.type) for row in rows}
            failed, before = self._fill(table, rows, column, chosen, values, lossy, "transformed")
            columns = [c._replace(type=chosen) if c.name == column else c for c in table.schema.columns]
            detail: ChangedJson = {
                "column": column,
                "type": chosen,
                "was": current.type,
                "not_converted": failed,
            }
            if expression is not None:
                detail["expression"] = expression
            if lossy:
                detail["lossy"] = lossy
            replaced = before and (lossy or expression is not None)
            kept = {"before": self.state.removed(before)} if replaced else None
            schema = table.schema.with_columns(columns)
            return Change("transform_column", table.ref.qualified, detail, kept), schema

        asked = {"column": column, **_given(type=type_, expression=expression, lossy=lossy)}
        return self._reshape(spec, transform, asked)

    def copy_column(
        self, spec: str, column: str, to_table: str, *, move: bool = False, lossy: str | None = None
    ) -> list[Change]:
        """A column copied (or moved) to another table, row by row where the keys are equal. A
        move that would leave values behind (rows the other table lacks) is refused, naming
        them, unless lossy is "drop" (the journal keeps the column's values either way)."""
        if check_lossy(lossy) == "round":
            raise InvalidInput('a move keeps values or, with lossy "drop", drops those it cannot place')
        with self.state.lock():
            source = self.state.open(spec)
            spec_ = self._own_column(source, column)
            target = self.state.open(to_table)
            if target.ref == source.ref:
                raise InvalidInput("copy a column to another table")
            if column in target.schema.types:
                raise Conflict(f"column {column} exists in {target.ref.qualified}")
            key = source.schema.key
            values = {row[key]: row.get(column) for row in self.state.read_rows(source.ref, source.schema)}
            target_rows = self.state.read_rows(target.ref, target.schema)
            matched = 0
            for row in target_rows:
                row[column] = values.get(row[target.schema.key])
                matched += row[target.schema.key] in values
            if move and lossy is None:
                placed = {row[target.schema.key] for row in target_rows}
                left = [(k, v) for k, v in values.items() if v is not None and k not in placed]
                if left:
                    raise ValuesNotKept(
                        f"not moved: {len(left)} value(s) of {column} have no row in {target.ref.qualified} "
                        f"({_named([(k, v, 'no such key there') for k, v in left], key)}); nothing "
                        'changed. Copy the column instead, or ask for lossy "drop" to leave them out'
                    )
            grown = target.schema.with_columns([*target.schema.columns, spec_])
            changes = [
                Change(
                    "copy_column",
                    source.ref.qualified,
                    {"column": column, "to_table": target.ref.qualified, "matched": matched},
                )
            ]
            asked = {"column": column, "to_table": to_table, **_given(move=move or None, lossy=lossy)}
            write = partial(self._write, target.ref, grown, target_rows)
            self._applied(changes[0]._replace(asked=asked), write)
        if move:
            changes.append(self.delete_column(spec, column))
        return changes

    def vectorize_column(self, spec: str, column: str) -> Change:
        """Mark a text or list column for semantic search and embed its values now (the
        `embedding` role; exit 7 without one, or when it fails: then nothing changes)."""
        from ..models.calls import ModelCall
        from . import vectors

        call = ModelCall("embedding", self.state.vault.config.models, self.state.settings)
        if not call.configured:
            raise ModelUnavailable(
                "vectorizing needs an embedding model: set [models] embedding (AIBUDDY_MODEL_EMBEDDING)"
            )
        with self.state.lock():
            table = self.state.open(spec)
            current = self._own_column(table, column)
            if current.type not in ("str", "list"):
                raise InvalidInput(
                    f"only text and list columns can be vectorized; {column} is {current.type}"
                )
            found = self.state.index.query(f'SELECT "{column}" FROM {table.rows}')
            texts = [
                t for (value,) in found if (t := vectors.cell_text(table.decode([value], [column])[column]))
            ]
            made = call(lambda settings: len(vectors.vectors(self.state, settings, texts)), warnings=None)
            if made is None:
                raise ModelUnavailable(f"{column} not vectorized: {call.failure}")
            columns = [c._replace(vectorized=True) if c.name == column else c for c in table.schema.columns]
            schema = table.schema.with_columns(columns)
            change = Change("vectorize_column", table.ref.qualified, {"column": column, "values": made})

            def write() -> None:
                schema_entry = self.state.store.write(table.ref.schema_key, schema.encode())
                table.schema = schema
                self.state.index.apply(table, (self.state.rows_entry(table.ref), schema_entry))

            self._applied(change._replace(asked={"column": column}), write)
        return change

    # --- shared steps --------------------------------------------------------------------------

    @staticmethod
    def _own_column(table: IndexedTable, column: str) -> ColumnSpec:
        found = table.schema.column(column)
        if column == table.schema.key:
            raise InvalidInput(f"{column} is the key column: it cannot be changed")
        return found

    @staticmethod
    def _fill(
        table: IndexedTable,
        rows: list[Row],
        column: str,
        type_: str,
        values: Mapping[int, tuple[Any, str]],
        lossy: str | None,
        what: str,
    ) -> tuple[NotConvertedJson, list[dict[str, Any]]]:
        """Set column in rows from values by key ((value, its type)), carried over to type_
        (see schema.carry). Returns what was not carried over exactly (with lossy) and the
        values the column had where they changed. ValuesNotKept, naming the values, when one
        cannot be carried over exactly and lossy is None; nothing is set then."""
        key = table.schema.key
        failed: list[NotConvertedValueJson] = []
        refused: list[tuple[Any, Any, str]] = []
        before: list[dict[str, Any]] = []
        carried: dict[int, Any] = {}
        for row in rows:
            value, source = values.get(row[key], (None, type_))
            try:
                result = carry(value, source, type_, lossy)
            except ValueRefused as exc:
                refused.append((row[key], value, str(exc)))
                continue
            carried[row[key]] = result.value
            if result.lost is not None:
                failed.append({"key": row[key], "value": as_json(value), "reason": result.lost})
        if refused:
            how = (
                'no nearest value exists for them; lossy "drop" empties them'
                if lossy == "round"
                else 'ask for a lossy conversion: "round" to the nearest value, "drop" to empty them'
            )
            raise ValuesNotKept(
                f"not {what}: {len(refused)} value(s) of {table.ref.qualified} cannot become {type_} "
                f"exactly ({_named(refused, key)}); nothing changed. To convert anyway, {how}"
            )
        for row in rows:
            old, new = row.get(column), carried[row[key]]
            if column in table.schema.types and not _same(old, new):
                before.append({"key": row[key], "value": old})
            row[column] = new
        return {"count": len(failed), "values": failed[:MAX_REPORTED]}, before

    def _reshape(
        self, spec: str, reshape: Callable[[IndexedTable, list[Row]], Reshaped], asked: dict[str, Any]
    ) -> Change:
        """A schema change over every row: reshape(table, rows) -> (what changed, new schema)."""
        with self.state.lock():
            table = self.state.open(spec)
            rows = self.state.read_rows(table.ref, table.schema)
            change, schema = reshape(table, rows)
            self._applied(change._replace(asked=asked), partial(self._write, table.ref, schema, rows))
        return change

    def _write(self, ref: TableRef, schema: TableSchema, rows: list[Row]) -> None:
        """The table's files rewritten, every row in the schema's order (the file's line ending
        kept); the next read rebuilds the table's index."""
        ending = csvfile.line_ending(self.state.store.read(ref.rows_key)[0])
        self.state.write_table(ref, schema.encode(), csvfile.encode(schema, rows, ending))

    def _applied(self, change: Change, write: Callable[[], None]) -> None:
        """The change journaled, then made by write(): when the journal cannot be written, nothing
        is (the error says so); when write() fails, its line is followed by a "failed" one."""
        changed = {**change.changed, **(change.kept or {})}
        line = self.state.journal(change.op, change.table, change.asked or {}, changed)
        try:
            write()
        except Exception as error:
            self.state.journal_failure(line, error)
            raise


def _given(**options: Any) -> dict[str, Any]:
    """The options a call was given (not None), for its journal line."""
    return {name: value for name, value in options.items() if value is not None}


def _from_expression(value: Any, type_: str | None) -> tuple[Any, str]:
    """An SQL result as a column value and its type (SQLite has no booleans or lists)."""
    if value is None:
        return None, type_ or "str"
    if type_ in COLUMN_TYPES and type_ != "str":
        try:
            converted = from_sql(value, type_)
        except (ValueError, TypeError):
            converted = None
        if isinstance(converted, _PYTHON_TYPES[type_]) and (type_ == "bool") == isinstance(converted, bool):
            return converted, type_
    if isinstance(value, bool):
        return value, "bool"
    if isinstance(value, int):
        return value, "int"
    if isinstance(value, float):
        return value, "float"
    return str(value), "str"


_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": float,
    "bool": bool,
    "date": str,
    "datetime": str,
    "time": str,
    "list": list,
    "dict": dict,
}


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _named(values: Sequence[tuple[Any, Any, str]], key: str) -> str:
    """The first few (key, value, why) of a refusal, for its message."""
    shown = "; ".join(
        f"{key} {k}: {_shown(v)} ({why})" for k, v, why in values[:MAX_NAMED]
    )
    return shown + (f"; and {len(values) - MAX_NAMED} more" if len(values) > MAX_NAMED else "")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _derived_type(compiled: str | None, values: Any) -> str:
    if compiled in COLUMN_TYPES:
        return compiled
    sample = [v for v in values if v is not None]
    return infer_type(sample, from_text=False) if sample else "str"
