"""The filter language of knowledge tables: Python-like boolean expressions over column names, parsed
with `ast` against a whitelist and translated to parameterized SQL. Nothing is ever evaluated as
Python, and no value is ever written into the SQL text: every literal becomes a `?` parameter, and
a column's SQL comes only from the mapping the caller gives.

    age > 30 and city == "Berlin"         "engineer" in role            "ssd" in tags
    created >= date("2024-01-01")         status in ["open", "blocked"]  not archived

Values. Literals: text, whole numbers (64-bit), finite decimals, True/False (stored 1/0), None (an
empty cell). Text with a lone surrogate (the escape "\\ud800") is refused: no UTF-8 text holds it.
Dotted names (`people.city`) name the columns of a join; no other `.` is allowed.

Comparisons. `== != < <= > >=`, chained (`1 < x < 5` means both). `==` and `!=` are Python's:
an empty cell equals None and differs from everything else, so `city != "Berlin"` includes rows
with no city. An ordering comparison with an empty cell is false (so `not (age > 30)` includes
empty ages). `x == None`, `x is None`, `x is not None` test for an empty cell; `is` takes only None.
Numbers compare with numbers, text with text; a date, datetime or time compares with another, or
with text (ISO-8601 text sorts in time order; text that parses as the column's type is normalised
first, so `at == "2024-05-01T10:30"` finds `2024-05-01T10:30:00`). A list or dict compares only
with None.

Membership. `"eng" in role`: substring of text, case-sensitive. `"ssd" in tags`: an element of a list
column. `"k" in meta`: a key of a dict column. `x in [a, b, …]` (or a tuple, at most 1,000 items):
one of them; `in []` is false. `not in` is the opposite, so it is true for an empty cell.

Refused constructs are named: "lambda is not allowed", "calling a method (.lower()) is not
allowed", "calling the result of an expression is not allowed", "<< (a bit operator)", ….

Logic and arithmetic. `and or not` give true/false (never an operand, unlike Python). In a boolean
position a value counts as true as in Python: a non-zero number, non-empty text, list or dict, any
date; an empty cell is false. `+ - * / // %` and unary `- +` on numbers; `/` always divides as
decimals, `//` and `%` round towards minus infinity as Python's do; a division by zero gives an
empty value. `+` of two texts joins them. `**` and bit operators are refused.
`a if cond else b` is a choice (SQL CASE).

Functions (by bare name, positional arguments only): date("2024-05-01"), datetime("2024-05-01T10:30"),
time("10:30") take one text literal, checked now; today() is the current local date; lower(x),
upper(x) (ASCII letters only, as SQLite's); len(x) counts the characters of text, the items of a
list or the keys of a dict; abs(x); round(x) gives a whole number and round(x, n) n decimals
(halves round away from zero, unlike Python); coalesce(a, b, …) is the first non-empty value.

Bounds: at most 10,000 characters, 100 levels of nesting and 2,000 syntax nodes; text literals of
at most 10,000 characters. SQLite's own parser takes less nesting (about 20 levels of `and`/`or`,
10 of `in` over a list column): the SQL is tried on a scratch database, and what SQLite would refuse
is refused here. Anything else is a FilterError naming the line and column.
"""

from __future__ import annotations

import ast
import math
import re
import sqlite3
import string
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, time
from typing import Any, NamedTuple, NoReturn

from ..errors import InvalidInput
from .schema import COLUMN_TYPES, INT_RANGE, SURROGATE_REFUSED, has_surrogate

__all__ = ["COLUMN_TYPES", "Column", "Compiled", "FilterError", "compile_expression", "compile_filter"]

MAX_LENGTH = 10_000
MAX_DEPTH = 100
MAX_NODES = 2_000
MAX_TEXT = 10_000
MAX_IN_ITEMS = 1_000
MAX_SQL = 200_000  # `//` and `%` repeat their operands: this bounds what nesting them can build
MAX_PARAMS = 10_000
MAX_LISTED = 30
SQL_MARGIN = 20  # parentheses standing in for the statement a caller puts the SQL in

NUMBERS = ("int", "float", "bool")
TEMPORAL: dict[str, Callable[[str], date | datetime | time]] = {
    "date": date.fromisoformat,
    "datetime": datetime.fromisoformat,
    "time": time.fromisoformat,
}
FUNCTIONS = ("abs", "coalesce", "date", "datetime", "len", "lower", "round", "time", "today", "upper")
REFUSED = {
    ast.Subscript: "indexing (x[...])",
    ast.Slice: "a slice",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Lambda: "lambda",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.NamedExpr: "assignment (:=)",
    ast.Starred: "unpacking (*)",
    ast.Dict: "a dict {...}",
    ast.Set: "a set {...}",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.List: "a list [...] (only allowed after 'in')",
    ast.Tuple: "a tuple (only allowed after 'in')",
}
REFUSED_OPERATORS = {
    ast.Pow: "** (power)",
    ast.MatMult: "@ (matrix multiplication)",
    ast.BitAnd: "& (a bit operator)",
    ast.BitOr: "| (a bit operator)",
    ast.BitXor: "^ (a bit operator)",
    ast.LShift: "<< (a bit operator)",
    ast.RShift: ">> (a bit operator)",
}
ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
ORDERING = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_FORMATTER = string.Formatter()
# The items of a JSON cell {c}. Read through a subquery of its own: written as json_each({c}) it would
# resolve a column named like one of json_each's own (key, value, json, …) to that one instead.
_EACH = "(SELECT {c} AS doc) AS _cell, json_each(_cell.doc)"


class Column(NamedTuple):
    """A name an expression may use: the SQL that reads it (quoted by the caller) and its type."""

    sql: str
    type: str  # one of COLUMN_TYPES


class FilterError(InvalidInput):
    """A refused expression; the message says where: 'filter: line 1, column 9: …'."""

    code = "invalid_filter"


class Compiled(NamedTuple):
    sql: str  # an SQL expression with ? placeholders
    params: list[Any]  # in placeholder order
    type: str | None  # the expression's type when known


class _Sql(NamedTuple):
    sql: str
    params: list[Any]
    type: str | None  # a column type, "null" for the None literal, None when unknown
    predicate: bool = False  # always 0 or 1, never NULL


def compile_filter(expression: str, columns: Mapping[str, Column], *, what: str = "filter") -> Compiled:
    """A boolean expression as SQL for a WHERE clause (never NULL: 0 or 1)."""
    result = _compile(expression, columns, what, as_filter=True)
    return Compiled(result.sql, result.params, "bool")


def compile_expression(
    expression: str, columns: Mapping[str, Column], *, what: str = "expression"
) -> Compiled:
    """Any value expression as SQL (a derived column: `price * quantity`, `lower(name)`)."""
    result = _compile(expression, columns, what, as_filter=False)
    return Compiled(result.sql, result.params, None if result.type == "null" else result.type)


def _compile(expression: str, columns: Mapping[str, Column], what: str, as_filter: bool) -> _Sql:
    compiler = _Compiler(expression, columns, what)
    tree = compiler.parse()

    def build(with_columns: Mapping[str, Column]) -> _Sql:
        translator = _Compiler(expression, with_columns, what)
        value = translator.compile(tree)
        return translator.truth(tree, value) if as_filter else value

    try:
        result = build(columns)
        # SQLite's own parser gives up on deep nesting (`parser stack overflow` from ~10 nested
        # subqueries): try the SQL on a scratch database now, so that is a refusal, not a crash.
        probe = build({name: Column("NULL", column.type) for name, column in columns.items()})
    except RecursionError:
        compiler.fail_at(0, "too deeply nested")
    scratch = sqlite3.connect(":memory:")
    try:
        wrapped = "(" * SQL_MARGIN + probe.sql + ")" * SQL_MARGIN
        scratch.execute(f"EXPLAIN SELECT 1 WHERE {wrapped}", probe.params)
    except sqlite3.OperationalError as exc:
        compiler.fail_at(0, f"too complex for SQLite ({exc})")
    finally:
        scratch.close()
    return result


def _too_deep(text: str) -> int | None:
    """Where bracket nesting passes MAX_DEPTH, outside string literals (f-strings count), if it does:
    checked before parsing because deep nesting can exhaust the parser itself."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        char = text[i]
        if char == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if char in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else char
            start = i
            while start > 0 and text[start - 1].isalpha():
                start -= 1
            counted = "f" in text[start:i].lower()
            i += len(quote)
            while i < n and not text.startswith(quote, i) and not (len(quote) == 1 and text[i] == "\n"):
                if text[i] == "\\":
                    i += 2
                    continue
                if counted and text[i] in "([{":
                    depth += 1
                    if depth > MAX_DEPTH:
                        return i
                i += 1
            i += len(quote)
            continue
        if char in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                return i
        elif char in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return None


class _Compiler:
    """One expression's translation; every refusal goes through fail() with a position."""

    def __init__(self, expression: str, columns: Mapping[str, Column], what: str) -> None:
        self.expression = expression
        self.columns = columns
        self.what = what
        self.lines = re.split(r"\r\n|\r|\n", expression)

    # --- errors -----------------------------------------------------------------------------------

    def fail_at(self, index: int, problem: str) -> NoReturn:
        line = self.expression.count("\n", 0, index) + 1
        column = index - (self.expression.rfind("\n", 0, index) + 1) + 1
        raise FilterError(f"{self.what}: line {line}, column {column}: {problem}")

    def fail(self, node: ast.AST, problem: str) -> NoReturn:
        lineno, offset = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        column = len(line.encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "replace")) + 1
        raise FilterError(f"{self.what}: line {lineno}, column {column}: {problem}")

    def unknown(self, node: ast.AST, name: str) -> NoReturn:
        known = sorted(self.columns)
        listed = ", ".join(known[:MAX_LISTED]) + (", …" if len(known) > MAX_LISTED else "")
        self.fail(node, f"unknown column {name!r} (columns: {listed or 'none'})")

    # --- parsing and bounds -------------------------------------------------------------------------

    def parse(self) -> ast.expr:
        text = self.expression
        if not isinstance(text, str) or not text.strip():
            self.fail_at(0, f"the {self.what} is empty")
        if len(text) > MAX_LENGTH:
            self.fail_at(MAX_LENGTH, f"longer than {MAX_LENGTH:,} characters")
        for index, char in enumerate(text):
            if char == "\0" or "\ud800" <= char <= "\udfff":
                self.fail_at(index, "not valid text (a NUL or a lone surrogate)")
        deep = _too_deep(text)
        if deep is not None:
            self.fail_at(deep, f"nested more than {MAX_DEPTH} levels deep")
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            line, column = exc.lineno or 1, exc.offset or 1
            raise FilterError(f"{self.what}: line {line}, column {column}: {exc.msg}") from None
        except (RecursionError, MemoryError, ValueError):
            self.fail_at(0, "too deeply nested or too complex")
        stack: list[tuple[ast.AST, int, ast.AST]] = [(tree.body, 1, tree.body)]
        count = 0
        while stack:
            node, depth, where = stack.pop()
            where = node if hasattr(node, "lineno") else where
            count += 1
            if count > MAX_NODES:
                self.fail(where, f"too complex (more than {MAX_NODES:,} syntax nodes)")
            if depth > MAX_DEPTH:
                self.fail(where, f"nested more than {MAX_DEPTH} levels deep")
            stack.extend((child, depth + 1, where) for child in ast.iter_child_nodes(node))
        return tree.body

    # --- building SQL -------------------------------------------------------------------------------

    def make(
        self, node: ast.AST, template: str, type_: str | None, predicate: bool = False, **parts: _Sql
    ) -> _Sql:
        """SQL from a template whose {fields} are parts; a part used twice brings its params twice."""
        sql: list[str] = []
        params: list[Any] = []
        for text, field, _, _ in _FORMATTER.parse(template):
            sql.append(text)
            if field is not None:
                sql.append(parts[field].sql)
                params.extend(parts[field].params)
        return self.checked(node, _Sql("".join(sql), params, type_, predicate))

    def join(
        self, node: ast.AST, items: Sequence[_Sql], sep: str, type_: str | None, predicate: bool
    ) -> _Sql:
        sql = "(" + sep.join(item.sql for item in items) + ")"
        return self.checked(node, _Sql(sql, [p for item in items for p in item.params], type_, predicate))

    def checked(self, node: ast.AST, result: _Sql) -> _Sql:
        if len(result.sql) > MAX_SQL or len(result.params) > MAX_PARAMS:
            self.fail(node, "too complex (the SQL it needs is too large)")
        return result

    def truth(self, node: ast.AST, value: _Sql) -> _Sql:
        """A value in a boolean position, true as in Python; an empty cell is false."""
        if value.predicate:
            return value
        if value.type in NUMBERS:
            template = "coalesce({x} <> 0, 0)"
        elif value.type == "str":
            template = "coalesce(length({x}) > 0, 0)"
        elif value.type == "list":
            template = "coalesce(json_array_length({x}) > 0, 0)"
        elif value.type == "dict":
            template = "coalesce(length(json({x})) > 2, 0)"  # compact, an empty one is `{}`
        elif value.type in TEMPORAL or value.type == "null":
            template = "({x} IS NOT NULL)"
        else:
            template = "(CASE WHEN {x} THEN 1 ELSE 0 END)"
        return self.make(node, template, "bool", True, x=value)

    def numeric(self, node: ast.AST, value: _Sql, operation: str) -> str | None:
        if value.type not in (*NUMBERS, None):
            shown = "None" if value.type == "null" else f"a {value.type} value"
            self.fail(node, f"{operation} needs numbers, not {shown}")
        return "int" if value.type == "bool" else value.type

    # --- nodes --------------------------------------------------------------------------------------

    def compile(self, node: ast.AST) -> _Sql:
        if isinstance(node, ast.Constant):
            return self.literal(node, node.value)
        if isinstance(node, ast.Name):
            if node.id not in self.columns:
                self.unknown(node, node.id)
            return self.column(node.id)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BoolOp):
            parts = [self.truth(value, self.compile(value)) for value in node.values]
            return self.join(node, parts, " AND " if isinstance(node.op, ast.And) else " OR ", "bool", True)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.IfExp):
            test = self.truth(node.test, self.compile(node.test))
            body, orelse = self.compile(node.body), self.compile(node.orelse)
            template = "(CASE WHEN {test} THEN {body} ELSE {orelse} END)"
            type_, predicate = _common([body, orelse]), body.predicate and orelse.predicate
            return self.make(node, template, type_, predicate, test=test, body=body, orelse=orelse)
        self.fail(node, f"{REFUSED.get(type(node), type(node).__name__)} is not allowed")

    def column(self, name: str) -> _Sql:
        column = self.columns[name]
        return _Sql(column.sql, [], column.type if column.type in COLUMN_TYPES else None)

    def attribute(self, node: ast.Attribute) -> _Sql:
        """Only a join's dotted column name (`people.city`); any other attribute is refused."""
        if isinstance(node.value, ast.Name) and not node.attr.startswith("_"):
            name = f"{node.value.id}.{node.attr}"
            if name in self.columns:
                return self.column(name)
            if any(key.startswith(f"{node.value.id}.") for key in self.columns):
                self.unknown(node, name)
        self.fail(node, f"attribute access (.{node.attr}) is not allowed")

    def literal(self, node: ast.AST, value: Any) -> _Sql:
        if value is None:
            return _Sql("?", [None], "null")
        if isinstance(value, bool):
            return _Sql("?", [int(value)], "bool")
        if isinstance(value, int):
            if not INT_RANGE[0] <= value <= INT_RANGE[1]:
                self.fail(node, "the number is out of range (64-bit)")
            return _Sql("?", [value], "int")
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(node, "the number is too large")
            return _Sql("?", [value], "float")
        if isinstance(value, str):
            if len(value) > MAX_TEXT:
                self.fail(node, f"a text longer than {MAX_TEXT:,} characters")
            if has_surrogate(value):  # an escape such as "\ud800": no UTF-8 text has it
                self.fail(node, SURROGATE_REFUSED)
            return _Sql("?", [value], "str")
        kind = {bytes: "a bytes literal", complex: "a complex number"}.get(type(value), "... (Ellipsis)")
        self.fail(node, f"{kind} is not allowed")

    def unary(self, node: ast.UnaryOp) -> _Sql:
        operand = node.operand
        if isinstance(node.op, ast.Not):
            return self.make(node, "(NOT {x})", "bool", True, x=self.truth(operand, self.compile(operand)))
        if isinstance(node.op, ast.Invert):
            self.fail(node, "~ (a bit operator) is not allowed")
        number = operand.value if isinstance(operand, ast.Constant) else None
        if isinstance(number, int | float) and not isinstance(number, bool):  # -9223372036854775808 fits
            return self.literal(node, -number if isinstance(node.op, ast.USub) else number)
        value = self.compile(operand)
        type_ = self.numeric(node, value, "a sign")
        return self.make(node, "(- {x})" if isinstance(node.op, ast.USub) else "{x}", type_, x=value)

    def binary(self, node: ast.BinOp) -> _Sql:
        symbol = ARITHMETIC.get(type(node.op))
        if symbol is None:
            self.fail(node, f"{REFUSED_OPERATORS.get(type(node.op), 'this operator')} is not allowed")
        a, b = self.compile(node.left), self.compile(node.right)
        if symbol == "+" and a.type == b.type == "str":
            return self.make(node, "({a} || {b})", "str", a=a, b=b)
        types = {self.numeric(node, a, f"'{symbol}'"), self.numeric(node, b, f"'{symbol}'")}
        type_ = None if None in types else "float" if "float" in types else "int"
        if symbol == "/":
            return self.make(node, "(CAST({a} AS REAL) / {b})", "float", a=a, b=b)
        if symbol in "+-*":
            return self.make(node, f"({{a}} {symbol} {{b}})", type_, a=a, b=b)
        if type_ == "int":  # SQLite's % truncates towards zero; this rounds towards minus infinity
            # (never a % b + b: that overflows past 2**63, into a float)
            mod = self.make(
                node,
                "(CASE WHEN ({a} % {b}) <> 0 AND (({a} % {b}) < 0) <> ({b} < 0)"
                " THEN ({a} % {b}) + {b} ELSE {a} % {b} END)",
                "int",
                a=a,
                b=b,
            )
            if symbol == "%":
                return mod
            return self.make(node, "(({a} - {mod}) / {b})", "int", a=a, b=b, mod=mod)
        # Decimals: SQLite's % works on integers only, and floor() is not always compiled in.
        q = self.make(node, "(CAST({a} AS REAL) / {b})", "float", a=a, b=b)
        floor = self.make(node, "(CAST({q} AS INTEGER) - ({q} < CAST({q} AS INTEGER)))", "int", q=q)
        if symbol == "//":
            return self.make(node, "CAST({f} AS REAL)", "float", f=floor)
        return self.make(node, "({a} - {b} * {f})", type_, a=a, b=b, f=floor)

    def compare(self, node: ast.Compare) -> _Sql:
        parts = []
        left_node, left = node.left, self.compile(node.left)
        for index, (op, right_node) in enumerate(zip(node.ops, node.comparators, strict=True)):
            if isinstance(op, ast.In | ast.NotIn):
                found = self.membership(left_node, left, right_node)
                if isinstance(op, ast.NotIn):
                    found = self.make(left_node, "(NOT {x})", "bool", True, x=found)
                parts.append(found)
                if index == len(node.ops) - 1:
                    break
                right = self.compile(right_node)  # chained on (a list is refused here)
            else:
                right = self.compile(right_node)
                parts.append(self.comparison(op, left_node, left, right_node, right))
            left_node, left = right_node, right
        return parts[0] if len(parts) == 1 else self.join(node, parts, " AND ", "bool", True)

    def comparison(self, op: ast.cmpop, a_node: ast.AST, a: _Sql, b_node: ast.AST, b: _Sql) -> _Sql:
        node = a_node
        if isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) and "null" in (a.type, b.type):
            value = b if a.type == "null" else a
            template = "({x} IS NULL)" if isinstance(op, ast.Is | ast.Eq) else "({x} IS NOT NULL)"
            return self.make(node, template, "bool", True, x=value)
        if isinstance(op, ast.Is | ast.IsNot):
            self.fail(node, "'is' compares only with None (use == to compare values)")
        a, b = self.coerce(a_node, a, b.type), self.coerce(b_node, b, a.type)
        if "null" in (a.type, b.type):
            self.fail(node, "None can only be compared with ==, != or is")
        if not _comparable(a.type, b.type):
            collection = {a.type, b.type} & {"list", "dict"}
            hint = " (test a list or dict with 'in', len() or == None)" if collection else ""
            self.fail(node, f"cannot compare {a.type} with {b.type}{hint}")
        if isinstance(op, ast.Eq | ast.NotEq):
            template = "({a} IS {b})" if isinstance(op, ast.Eq) else "({a} IS NOT {b})"
            return self.make(node, template, "bool", True, a=a, b=b)
        if a.type == b.type == "datetime":
            # In time order whatever their UTC offsets (text sorts 10:30+02:00 after 09:00Z):
            # julianday first (to the millisecond), then the text (same offset: time order).
            order = ORDERING[type(op)]
            template = f"coalesce((julianday({{a}}), {{a}}) {order} (julianday({{b}}), {{b}}), 0)"
            return self.make(node, template, "bool", True, a=a, b=b)
        return self.make(node, f"coalesce({{a}} {ORDERING[type(op)]} {{b}}, 0)", "bool", True, a=a, b=b)

    def coerce(self, node: ast.AST, value: _Sql, other: str | None) -> _Sql:
        """A text literal compared with a date, datetime or time, normalised when it parses as one."""
        if other in TEMPORAL and isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return _Sql("?", [TEMPORAL[other](node.value).isoformat()], other)
            except ValueError:
                pass
        return value

    def membership(self, node: ast.AST, item: _Sql, container_node: ast.AST) -> _Sql:
        if isinstance(container_node, ast.List | ast.Tuple):
            return self.one_of(node, item, container_node.elts)
        container = self.compile(container_node)
        if container.type == "list":
            if item.type in ("list", "dict"):
                self.fail(node, f"a {item.type} cannot be an element to look for")
            if item.type == "null":  # NULL IN (…) is never true: a null item is found by its type
                template = "EXISTS (SELECT 1 FROM " + _EACH + " WHERE type = 'null')"
            else:  # (a nested list's value is its JSON text: never what a text looks for)
                scalars = " WHERE type NOT IN ('array', 'object')"
                template = "coalesce({x} IN (SELECT value FROM " + _EACH + scalars + "), 0)"
        elif container.type in ("str", "dict"):
            if item.type not in ("str", None):
                shown = "None" if item.type == "null" else f"a {item.type} value"
                wanted = "a text inside a text" if container.type == "str" else "a key (text) in a dict"
                self.fail(node, f"'in' looks for {wanted}, not {shown}")
            if container.type == "str":
                template = "coalesce(instr({c}, {x}) > 0, 0)"
            else:
                template = "coalesce({x} IN (SELECT key FROM " + _EACH + "), 0)"
        else:
            shown = "a value of unknown type" if container.type is None else f"a {container.type} value"
            self.fail(node, f"'in' needs a text, list or dict, or a list [...], on its right, not {shown}")
        return self.make(node, template, "bool", True, x=item, c=container)

    def one_of(self, node: ast.AST, item: _Sql, elements: list[ast.expr]) -> _Sql:
        if len(elements) > MAX_IN_ITEMS:
            self.fail(node, f"a list after 'in' has at most {MAX_IN_ITEMS:,} items")
        values, has_none = [], False
        for element in elements:
            value = self.coerce(element, self.compile(element), item.type)
            if value.type == "null":
                has_none = True
                continue
            if not _comparable(item.type, value.type):
                self.fail(element, f"cannot compare {item.type} with {value.type}")
            values.append(value)
        parts = []
        if has_none:
            parts.append(self.make(node, "({x} IS NULL)", "bool", True, x=item))
        if values:
            listed = self.join(node, values, ", ", None, False)
            parts.append(self.make(node, "coalesce({x} IN {items}, 0)", "bool", True, x=item, items=listed))
        return self.join(node, parts, " OR ", "bool", True) if parts else _Sql("0", [], "bool", True)

    def call(self, node: ast.Call) -> _Sql:
        func = node.func
        if not isinstance(func, ast.Name):
            self.fail(node, _refused_call(func))
        if func.id not in FUNCTIONS:
            self.fail(node, f"function {func.id}() is not allowed (functions: {', '.join(FUNCTIONS)})")
        name, args = func.id, node.args
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in args):
            self.fail(node, f"{name}() takes positional arguments only")
        low, high = {"today": (0, 0), "round": (1, 2), "coalesce": (2, 100)}.get(name, (1, 1))
        if not low <= len(args) <= high:
            counts = str(low) if low == high else f"{low} to {high}"
            self.fail(node, f"{name}() takes {counts} argument{'' if high == 1 else 's'}, not {len(args)}")
        if name == "today":
            return _Sql("?", [date.today().isoformat()], "date")
        if name in TEMPORAL:
            arg = args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                self.fail(node, f"{name}() takes one text literal, like {name}({_EXAMPLES[name]!r})")
            try:
                return _Sql("?", [TEMPORAL[name](arg.value).isoformat()], name)
            except ValueError:
                shown = arg.value if len(arg.value) <= 40 else arg.value[:39] + "…"
                self.fail(arg, f"{shown!r} is not a valid {name} (use {_EXAMPLES[name]})")
        values = [self.compile(arg) for arg in args]
        x = values[0]
        if name == "coalesce":
            listed = self.join(node, values, ", ", None, False)
            return self.make(node, "coalesce{args}", _common(values), args=listed)
        if name in ("lower", "upper"):
            if x.type not in ("str", None):
                self.fail(node, f"{name}() needs a text, not a {x.type} value")
            return self.make(node, f"{name}({{x}})", "str", x=x)
        if name == "len":
            template = {
                "str": "length({c})",
                "list": "json_array_length({c})",
                "dict": "(CASE WHEN {c} IS NULL THEN NULL ELSE (SELECT count(*) FROM " + _EACH + ") END)",
            }.get(x.type or "")
            if template is None:
                self.fail(node, f"len() needs a text, list or dict, not {x.type or 'an unknown type'}")
            return self.make(node, template, "int", c=x)
        type_ = self.numeric(node, x, f"{name}()")
        if name == "abs":
            return self.make(node, "abs({x})", type_, x=x)
        if len(args) == 1:
            return self.make(node, "CAST(round({x}) AS INTEGER)", "int", x=x)
        digits = args[1]
        if not (isinstance(digits, ast.Constant) and type(digits.value) is int and 0 <= digits.value <= 15):
            self.fail(digits, "round(x, n) takes n as a whole number from 0 to 15")
        return self.make(node, "round({x}, {n})", "float", x=x, n=values[1])


def _refused_call(func: ast.expr) -> str:
    """Why calling func (anything but a bare function name) is refused, naming what it is."""
    if isinstance(func, ast.Lambda):
        return "lambda is not allowed"
    if isinstance(func, ast.Attribute):
        hint = f"; write {func.attr}(x)" if func.attr in FUNCTIONS else ""
        return f"calling a method (.{func.attr}()) is not allowed{hint}"
    return "calling the result of an expression is not allowed (only functions are called, by name)"


_EXAMPLES = {"date": "2024-05-01", "datetime": "2024-05-01T10:30:00", "time": "10:30"}


def _comparable(a: str | None, b: str | None) -> bool:
    """Whether two types may be compared: numbers with numbers, texts, dates and times as ISO text."""
    if a is None or b is None or "null" in (a, b) or (a in NUMBERS and b in NUMBERS):
        return True
    if "list" in (a, b) or "dict" in (a, b):
        return False
    if a == b or {a, b} == {"date", "datetime"}:
        return True
    return (a in TEMPORAL and b == "str") or (b in TEMPORAL and a == "str")


def _common(values: Sequence[_Sql]) -> str | None:
    """The type of a value that is one of several (coalesce, a choice): shared, or None."""
    types = {value.type for value in values} - {"null"}
    if types and types <= set(NUMBERS):
        return "float" if "float" in types else "int" if types != {"bool"} else "bool"
    return types.pop() if len(types) == 1 else None
