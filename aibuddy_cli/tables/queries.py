"""Reading tables: list, show, filter, reduce, search, join. Nothing here writes a table file; it
is all the read-only `table ask` loop may reach.

Every query runs as parameterized SQL over the derived index (filters compiled by filters.py);
rows come back typed, ordered by key, and bounded (`[tables] max_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from ..errors import InvalidInput
from ..text import query_terms
from .index import IndexedTable
from .schema import INT_RANGE, METRICS
from .state import TableInfo, TablesState

MAX_NAMED_TABLES = 3  # the tables a filter that fits none names, each with why
_OVERFLOW = "{metric}({column}) is beyond the range of a floating-point number"
NUMERIC_METRICS = ("sum", "mean", "median", "var", "std")
NUMERIC_TYPES = ("int", "float", "bool")
_SQL_METRICS = {
    "count": "count({})",
    "sum": "total({})",
    "mean": "avg({})",
    "min": "min({})",
    "max": "max({})",
}

if TYPE_CHECKING:
    from ..models.calls import ModelSettings

Row = dict[str, Any]  # a row's values by column name: the columns are the table's, so any keys


class GroupJson(TypedDict):
    group: Row  # the grouping columns' values
    values: Row  # the metric of each column


class ReductionJson(TypedDict):
    table: str
    metric: str
    columns: list[str]
    filter: str | None
    group_by: list[str]
    groups: list[GroupJson]


class SearchHitJson(TypedDict):
    table: str
    match: str  # "lexical" or "embedding"
    score: float
    row: Row


class RowSet(NamedTuple):
    table: str
    columns: list[str]
    total: int  # rows that match, before offset and limit
    rows: list[Row]


class Skipped(NamedTuple):
    """A table `table filter` over every table left out: the filter or --columns does not fit it."""

    table: str
    reason: str


class FilterResult(NamedTuple):
    filter: str | None
    offset: int
    limit: int
    tables: list[RowSet]
    skipped: Sequence[Skipped] = ()


class Reduction(NamedTuple):
    table: str
    metric: str
    columns: list[str]
    filter: str | None
    group_by: list[str]
    groups: list[tuple[Row, Row]]  # (group values, metric per column)

    def to_json(self) -> ReductionJson:
        return {
            "table": self.table,
            "metric": self.metric,
            "columns": self.columns,
            "filter": self.filter,
            "group_by": self.group_by,
            "groups": [{"group": group, "values": values} for group, values in self.groups],
        }


class SearchHit(NamedTuple):
    table: str
    # BM25 (lexical), or the summed cosine similarity (embedding); when both kinds are in one
    # result (some tables searched by meaning, others by words), the fused rank score instead
    score: float
    row: Row
    match: str = "lexical"  # or "embedding"

    def to_json(self) -> SearchHitJson:
        return {"table": self.table, "match": self.match, "score": self.score, "row": self.row}


RRF_K = 60  # reciprocal-rank fusion's usual constant (as memory recall's)


def fused_hits(rankings: list[list[SearchHit]], limit: int) -> list[SearchHit]:
    """Hits ranked by several kinds of score (cosine, BM25) on one scale: each ranking gives its
    place p the score 1 / (RRF_K + p); the best `limit`, their score that fused one."""
    fused: list[tuple[float, int, SearchHit]] = []
    for ranking in rankings:
        fused += [(1 / (RRF_K + place), place, hit) for place, hit in enumerate(ranking, 1)]
    fused.sort(key=lambda item: (-item[0], item[1], item[2].table))
    return [hit._replace(score=round(score, 6)) for score, _, hit in fused[:limit]]


class SearchResult(NamedTuple):
    query: str
    method: str  # "lexical", or "embedding" when vectorized columns ranked the rows
    hits: list[SearchHit]


class JoinResult(NamedTuple):
    left: str
    right: str
    on: str
    columns: list[str]
    total: int
    rows: list[Row]


class TableQueries:
    def __init__(self, state: TablesState) -> None:
        self.state = state

    @property
    def max_rows(self) -> int:
        return int(self.state.vault.config.tables.max_rows)

    def _limit(self, limit: int | None, default: int = 100) -> int:
        chosen = default if limit is None else limit
        if chosen < 1:
            raise InvalidInput("the limit must be at least 1")
        return min(chosen, self.max_rows)

    # --- tables ------------------------------------------------------------------------------

    def list_tables(self) -> list[TableInfo]:
        """Every table the user may see; a damaged one is a warning, the others are listed."""
        tables = []
        for ref in self.state.refs():
            try:
                table = self.state.open(ref)
            except InvalidInput as exc:
                self.state.warnings.append(f"{ref.qualified} left out: {exc.message}")
                continue
            tables.append(TableInfo(ref, table.schema, table.row_count))
        return tables

    def show(self, spec: str) -> TableInfo:
        table = self.state.open(spec)
        return TableInfo(table.ref, table.schema, table.row_count)

    # --- filter --------------------------------------------------------------------------------

    def filter(
        self,
        tables: Sequence[str] = (),
        where: str | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
        sort: str | None = None,
    ) -> FilterResult:
        """Rows matching where (every row without it) of each table named (all visible ones
        when none is), ordered by key (or by the column `sort` names, descending with a leading
        "-", then by key), the key column first.

        A filter or column list that does not fit a table (a column it lacks, a type it cannot
        compare) is an error naming that table. Over every table (none named) such a table is
        skipped instead, with a warning and in `skipped`; when it fits none, that is the error."""
        if offset < 0:
            raise InvalidInput("the offset must be 0 or more")
        if offset > INT_RANGE[1]:
            raise InvalidInput(f"the offset must be at most {INT_RANGE[1]}")
        limit = self._limit(limit)
        opened = [self.state.open(spec) for spec in tables] or [
            self.state.open(ref) for ref in self.state.refs()
        ]
        where = where if where and where.strip() else None
        prepared: list[tuple[IndexedTable, list[str], str, list[Any]]] = []
        skipped: list[Skipped] = []
        refusals: list[InvalidInput] = []
        for table in opened:
            try:
                names = self._columns(table, columns)
                clause, params = table.where(where)
                if sort:
                    table.schema.column(sort.removeprefix("-"))  # InvalidInput: no such column
            except InvalidInput as exc:
                if tables:
                    raise _naming(exc, table) from None
                refusals.append(exc)
                skipped.append(Skipped(table.ref.qualified, exc.message))
                continue
            prepared.append((table, names, clause, params))
        if refusals and not prepared:  # it fits no table: the same refusal everywhere is not theirs
            if len({exc.message for exc in refusals}) == 1:
                raise refusals[0]
            listed = "; ".join(f"table {table}: {reason}" for table, reason in skipped[:MAX_NAMED_TABLES])
            more = len(skipped) - MAX_NAMED_TABLES
            listed += f"; and {more} more" if more > 0 else ""
            raise _like(refusals[0], f"no table fits the filter and columns given ({listed})")
        for table_name, reason in skipped:
            self.state.warnings.append(f"table filter: {table_name} skipped: {reason}")
        rowsets = [self._filter_one(*found, limit, offset, sort) for found in prepared]
        return FilterResult(where, offset, limit, rowsets, skipped)

    def _filter_one(
        self,
        table: IndexedTable,
        names: list[str],
        clause: str,
        params: list[Any],
        limit: int,
        offset: int,
        sort: str | None = None,
    ) -> RowSet:
        key = table.schema.key
        selected = ", ".join(f'"{n}"' for n in names)
        # One scan: the count of all matches rides on each row returned (a window function).
        # (A column name is the schema's, checked above: quoted, it is no SQL of a person's.)
        by = f'"{sort.removeprefix("-")}" {"DESC" if sort.startswith("-") else "ASC"}, ' if sort else ""
        order = f'ORDER BY {by}"{key}" LIMIT ? OFFSET ?'
        found = self.state.index.query(
            f"SELECT {selected}, count(*) OVER () FROM {table.rows}{clause} {order}", [*params, limit, offset]
        )
        if found:
            total = found[0][-1]
        else:  # past the end, or nothing matches
            total = (
                self.state.index.query(f"SELECT count(*) FROM {table.rows}{clause}", params)[0][0]
                if offset
                else 0
            )
        return RowSet(table.ref.qualified, names, total, [table.decode(r[:-1], names) for r in found])

    @staticmethod
    def _columns(table: IndexedTable, columns: Sequence[str] | None) -> list[str]:
        if not columns:
            return table.schema.names
        for name in columns:
            table.schema.column(name)
        key = table.schema.key
        return [key, *dict.fromkeys(c for c in columns if c != key)]

    # --- reduce --------------------------------------------------------------------------------

    def reduce(
        self,
        spec: str,
        metric: str,
        columns: Sequence[str],
        where: str | None = None,
        group_by: Sequence[str] = (),
    ) -> Reduction:
        if metric not in METRICS:
            raise InvalidInput(f"unknown metric {metric!r}: use {', '.join(METRICS)}")
        if not columns:
            raise InvalidInput("name at least one column to reduce")
        table = self.state.open(spec)
        for name in [*columns, *group_by]:
            column = table.schema.column(name)
            if name in columns and metric in NUMERIC_METRICS and column.type not in NUMERIC_TYPES:
                raise InvalidInput(f"{metric} needs a numeric column; {name} is {column.type}")
        columns, group_by = list(dict.fromkeys(columns)), list(dict.fromkeys(group_by))
        where = where if where and where.strip() else None
        clause, params = table.where(where)
        groups_sql = ", ".join(f'"{g}"' for g in group_by)
        if metric in _SQL_METRICS:
            types = table.schema.types
            aggregates = ", ".join(_aggregate(metric, types[c]).format(f'"{c}"') for c in columns)
            select = f"{groups_sql}, {aggregates}" if group_by else aggregates
            tail = f" GROUP BY {groups_sql} ORDER BY {groups_sql}" if group_by else ""
            found = self.state.index.query(f"SELECT {select} FROM {table.rows}{clause}{tail}", params)
            groups = [
                (
                    table.decode(row[: len(group_by)], group_by),
                    {
                        c: self._sql_value(table, metric, c, v)
                        for c, v in zip(columns, row[len(group_by) :], strict=True)
                    },
                )
                for row in found
            ]
        else:
            groups = self._python_reduce(table, metric, columns, group_by, clause, params)
        for _, values in groups:
            for name, value in values.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise InvalidInput(_OVERFLOW.format(metric=metric, column=name))
        return Reduction(table.ref.qualified, metric, columns, where, group_by, groups)

    @staticmethod
    def _sql_value(table: IndexedTable, metric: str, column: str, value: Any) -> Any:
        if value is None or metric in ("count", "mean"):
            return value
        type_ = table.schema.types[column]
        if metric == "sum":
            return int(value) if type_ in ("int", "bool") else float(value)
        return table.decode([value], [column])[column]  # min, max: the column's own type

    def _python_reduce(
        self,
        table: IndexedTable,
        metric: str,
        columns: list[str],
        group_by: list[str],
        clause: str,
        params: list[Any],
    ) -> list[tuple[Row, Row]]:
        """median, var, std and mode, over the values SQL selects (NULLs left out)."""
        names = [*group_by, *columns]
        order = ", ".join(f'"{g}"' for g in group_by) or f'"{table.schema.key}"'
        selected = ", ".join(f'"{n}"' for n in names)
        found = self.state.index.query(
            f"SELECT {selected} FROM {table.rows}{clause} ORDER BY {order}", params
        )
        width = len(group_by)
        groups = []
        for group, members in groupby(found, key=lambda row: tuple(row[:width])):
            rows = list(members)
            values = {}
            for at, column in enumerate(columns, width):
                present = [row[at] for row in rows if row[at] is not None]
                try:
                    values[column] = _metric(metric, present, table, column)
                except OverflowError:  # statistics' exact sums do not fit a float again
                    raise InvalidInput(_OVERFLOW.format(metric=metric, column=column)) from None
            groups.append((table.decode(group, group_by), values))
        if not group_by and not groups:
            groups = [({}, {column: None for column in columns})]
        return groups

    # --- search --------------------------------------------------------------------------------

    def search(
        self, query: str | Sequence[str], tables: Sequence[str] = (), limit: int | None = None
    ) -> SearchResult:
        """Rows ranked by how well they match. In a table with a vectorized column, and with the
        embedding role configured, by the cosine similarity of their embeddings to the query's
        (to each of several reference texts, summed); otherwise, or when the model fails (a
        warning), by BM25 over their text, list and object cells (English and CJK, as kb search)."""
        references = [query] if isinstance(query, str) else [str(text) for text in query]
        references = [text for text in references if text.strip()]
        if not references:
            raise InvalidInput("the search query is empty")
        shown = references[0] if len(references) == 1 else " | ".join(references)
        limit = self._limit(limit, 10)
        opened = [self.state.open(spec) for spec in tables] or [
            self.state.open(ref) for ref in self.state.refs()
        ]
        semantic = [t for t in opened if any(c.vectorized for c in t.schema.columns)]
        hits: list[SearchHit] = []
        if semantic:
            from ..models.calls import ModelCall

            found = ModelCall("embedding", self.state.vault.config.models, self.state.settings)(
                lambda settings: self._semantic(settings, references, semantic, limit),
                warnings=self.state.warnings,
                fallback="searched their words instead",
            )
            if found is not None:
                hits += found
                opened = [t for t in opened if t not in semantic]
        method = "embedding" if hits else "lexical"
        words = self._lexical(" ".join(references), opened, limit)
        if hits and words:  # two kinds of score: one scale, by rank
            return SearchResult(shown, method, fused_hits([hits, words], limit))
        return SearchResult(shown, method, (hits + words)[:limit])

    def _lexical(self, query: str, tables: list[IndexedTable], limit: int) -> list[SearchHit]:
        terms = query_terms(query)
        if not terms:
            return []
        hits: list[SearchHit] = []
        for table in tables:
            ranked = self._bm25(table, terms, limit)
            rows = self._rows_by_key(table, [key for key, _ in ranked])
            found = [(key, score) for key, score in ranked if key in rows]
            hits += [SearchHit(table.ref.qualified, round(score, 4), rows[key]) for key, score in found]
        hits.sort(key=lambda hit: -hit.score)
        return hits

    def _bm25(self, table: IndexedTable, terms: list[str], limit: int) -> list[tuple[int, float]]:
        """The best `limit` matching rows (key, BM25 score), best first; a match scores above 0.

        FTS5's bm25() weighs a term by log((N - n + 0.5) / (n + 0.5)) and clamps that to 1e-6 when
        the term is in half the rows or more: in a small table, or for a common word, every match
        then scores about 0 (a one-row table: exactly 0.0 once rounded). So each term is matched
        on its own, FTS5's weight divided out of its score (what remains is the term's frequency
        and length part, with FTS5's stemming and phrases), and the weight Lucene uses put in,
        log(1 + (N - n + 0.5) / (n + 0.5)), which is positive and falls as the term gets common."""
        fts = table.fts
        indexed = self.state.index.query(f"SELECT count(*) FROM {fts}")[0][0]
        parts: list[str] = []
        params: list[Any] = []
        for term in terms:
            rows = self.state.index.query(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", [term])[0][0]
            if not rows:
                continue
            odds = (indexed - rows + 0.5) / (rows + 0.5)
            parts.append(f"SELECT rowid, bm25({fts}) * ? AS score FROM {fts} WHERE {fts} MATCH ?")
            params += [-math.log1p(odds) / max(math.log(odds), 1e-6), term]
        if not parts:
            return []
        # LIMIT -1 keeps SQLite from flattening one term's SELECT into the GROUP BY, where bm25()
        # cannot run ("unable to use function bm25 in the requested context").
        found = self.state.index.query(
            f"SELECT rowid, sum(score) AS total FROM ({' UNION ALL '.join(parts)} LIMIT -1)"
            " GROUP BY rowid ORDER BY total DESC, rowid LIMIT ?",
            [*params, limit],
        )
        return [(key, score) for key, score in found]

    def _semantic(
        self, settings: ModelSettings, references: list[str], tables: list[IndexedTable], limit: int
    ) -> list[SearchHit]:
        from . import vectors

        hits: list[SearchHit] = []
        for table in tables:
            ranked = vectors.rank(self.state, settings, references, table, limit)
            rows = self._rows_by_key(table, [key for _, key in ranked])
            hits += [
                SearchHit(table.ref.qualified, round(score, 4), rows[key], "embedding")
                for score, key in ranked
                if key in rows
            ]
        hits.sort(key=lambda hit: -hit.score)
        return hits

    def _rows_by_key(self, table: IndexedTable, keys: list[int]) -> dict[int, Row]:
        names = table.schema.names
        selected = ", ".join(f'"{n}"' for n in names)
        marks = ", ".join("?" for _ in keys) or "NULL"
        found = self.state.index.query(
            f'SELECT {selected} FROM {table.rows} WHERE "{table.schema.key}" IN ({marks})', keys
        )
        rows = [table.decode(row, names) for row in found]
        return {row[table.schema.key]: row for row in rows}

    # --- join ----------------------------------------------------------------------------------

    def join(
        self,
        left: str,
        right: str,
        on: str,
        where: str | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> JoinResult:
        """Rows of two tables paired where `on` holds (`left.col == right.col`; the tables may
        also be named by their names), with the columns named `table.column`."""
        return self._join(left, right, on, where, columns, self._limit(limit), None)

    def search_join(self, left: str, right: str, on: str, query: str, k: int | None = None) -> JoinResult:
        """The left table's best matches for query (as `search`), paired with the right's rows."""
        found = self.search(query, [left], k)
        a = self.state.open(left)
        keys = [hit.row[a.schema.key] for hit in found.hits]
        return self._join(left, right, on, None, None, self.max_rows, keys)

    def _join(
        self,
        left: str,
        right: str,
        on: str,
        where: str | None,
        columns: Sequence[str] | None,
        limit: int,
        left_keys: Sequence[int] | None,
    ) -> JoinResult:
        from .filters import Column, compile_filter

        a, b = self.state.open(left), self.state.open(right)
        # Each side is named by its table's name, or left/right (always; the only names when the
        # two tables have the same name); in SQL the aliases l and r.
        distinct = a.ref.name != b.ref.name
        sides = [("l", "left", a), ("r", "right", b)]
        label = {alias: table.ref.name if distinct else generic for alias, generic, table in sides}
        available = {
            f"{qualifier}.{c.name}": Column(f'{alias}."{c.name}"', c.type)
            for alias, generic, table in sides
            for qualifier in {generic, label[alias]}
            for c in table.schema.columns
        }
        condition = compile_filter(on, available, what="on")
        clause, params = f" ON {condition.sql}", list(condition.params)
        conditions = []
        if where and where.strip():
            compiled = compile_filter(where, available, what="filter")
            conditions.append(compiled.sql)
            params += compiled.params
        if left_keys is not None:
            conditions.append(f'l."{a.schema.key}" IN ({", ".join("?" for _ in left_keys) or "NULL"})')
            params += list(left_keys)
        if conditions:
            clause += " WHERE " + " AND ".join(f"({c})" for c in conditions)
        all_columns = [
            (f"{label[alias]}.{c.name}", alias, c.name, table)
            for alias, _, table in sides
            for c in table.schema.columns
        ]
        if columns:
            wanted = {name: i for i, name in enumerate(columns)}
            picked = [c for c in all_columns if c[0] in wanted]
            unknown = [name for name in columns if name not in {c[0] for c in all_columns}]
            if unknown:
                raise InvalidInput(f"no column {unknown[0]!r} in the join (columns are named table.column)")
            picked.sort(key=lambda c: wanted[c[0]])
        else:
            picked = all_columns
        selected = ", ".join(f'{alias}."{name}"' for _, alias, name, _ in picked)
        source = f"{a.rows} l JOIN {b.rows} r{clause}"
        total = self.state.index.query(f"SELECT count(*) FROM {source}", params)[0][0]
        order = f'l."{a.schema.key}", r."{b.schema.key}"'
        found = self.state.index.query(
            f"SELECT {selected} FROM {source} ORDER BY {order} LIMIT ?", [*params, limit]
        )
        rows = [
            {
                label_: t.decode([value], [name])[name]
                for (label_, _, name, t), value in zip(picked, row, strict=True)
            }
            for row in found
        ]
        return JoinResult(a.ref.qualified, b.ref.qualified, on, [c[0] for c in picked], total, rows)


def _naming(error: InvalidInput, table: IndexedTable) -> InvalidInput:
    """error with the table it is about named first."""
    return _like(error, f"table {table.ref.qualified}: {error.message}")


def _like(error: InvalidInput, message: str) -> InvalidInput:
    """An error of error's kind (its code: invalid_filter or invalid_input) saying message."""
    from .filters import FilterError

    return FilterError(message) if isinstance(error, FilterError) else InvalidInput(message)


def _aggregate(metric: str, type_: str) -> str:
    """The SQL of a metric over a column: a whole-number sum adds exactly (total() adds floats)."""
    if metric == "sum" and type_ in ("int", "bool"):
        return "coalesce(sum({}), 0)"
    return _SQL_METRICS[metric]


def _metric(metric: str, values: list[Any], table: IndexedTable, column: str) -> Any:
    import statistics  # ~7 ms to import: only for the metrics SQL has no function for

    if not values:
        return None
    if metric == "mode":
        return table.decode([statistics.multimode(values)[0]], [column])[column]
    if metric == "median" and all(isinstance(v, int) for v in values):  # exact, past 2**53 too
        from fractions import Fraction

        middle = statistics.median(sorted(Fraction(v) for v in values))
        return int(middle) if middle.denominator == 1 else float(middle)
    numbers = [float(v) for v in values]
    if metric == "median":
        return statistics.median(numbers)
    if len(numbers) < 2:
        return None  # the sample variance of one value is undefined
    variance = statistics.variance(numbers)
    return variance if metric == "var" else math.sqrt(variance)
