"""The filter language of knowledge tables: what expressions select in a real SQLite table, and what
they may never do (run code, reach attributes, put a value into the SQL text, exhaust the parser)."""

from __future__ import annotations

import ast
import builtins
import json
import random
import sqlite3
from collections.abc import Iterator
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import pytest

import aibuddy_cli.tables.filters as filters_module
from aibuddy_cli.errors import ExitCode
from aibuddy_cli.tables.filters import Column, FilterError, compile_expression, compile_filter

TYPES = {
    "name": "str",
    "age": "int",
    "price": "float",
    "done": "bool",
    "born": "date",
    "at": "datetime",
    "alarm": "time",
    "tags": "list",
    "meta": "dict",
    "city": "str",
    "role": "str",
    "qty": "int",
}
COLUMNS = {name: Column(f'"{name}"', type_) for name, type_ in TYPES.items()}
SQL_TYPES = {"int": "INTEGER", "float": "REAL", "bool": "INTEGER"}

# Rowids 1..8. Row 4 is empty but for its name; dates are ISO text as the table stores them.
ROWS: list[dict[str, Any]] = [
    dict(name="Alice", age=34, price=9.5, done=True, born="1990-05-01", at="2024-05-01T10:30:00",
         alarm="07:00:00", tags=["ssd", "fast"], meta={"k": 1, "color": "red"}, city="Berlin",
         role="senior engineer", qty=2),
    dict(name="Bob", age=28, price=20.0, done=False, born="1996-01-15", at="2024-01-02T08:00:00",
         alarm="06:30:00", tags=["hdd"], meta={"color": "blue"}, city="Paris", role="designer", qty=1),
    dict(name="王伟", age=45, price=3.25, done=True, born="1979-12-31", at="2023-12-31T23:59:59",
         alarm="22:15:00", tags=["ssd"], meta={}, city="北京", role="engineer", qty=4),
    dict(name="Dana"),
    dict(name="eve", age=0, price=-7.5, done=False, born="2000-02-29", at="2024-02-29T12:00:00",
         alarm="12:00:00", tags=[], meta={"k": None}, city="Berlin", role="Engineer", qty=3),
    dict(name="Frank O'Hara", age=61, price=100.0, done=True, born="1963-07-04", at="2024-07-04T00:00:00",
         alarm="00:00:00", tags=["ssd", "hdd", "nvme"], meta={"k": 2, "nested": {"a": 1}}, city="berlin",
         role="staff engineer", qty=10),
    dict(name="Gus", age=-3, price=0.0, done=False, born="2010-10-10", at="2024-03-01T09:15:00",
         alarm="09:15:00", tags=[1, 2, "3"], meta={"k": "v"}, city="Paris", qty=0),
    dict(name="周报格式", age=30, price=12.75, done=True, born="2024-01-01", at="2024-01-01T00:00:00",
         alarm="23:59:59", tags=["周报"], meta={"周": 1}, city="東京", role="engineer 工程师", qty=5),
]  # fmt: skip
ALL = set(range(1, len(ROWS) + 1))


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    declared = ", ".join(f'"{name}" {SQL_TYPES.get(type_, "TEXT")}' for name, type_ in TYPES.items())
    connection.execute(f"CREATE TABLE t ({declared})")
    for row in ROWS:
        values = [_to_sql(row.get(name), type_) for name, type_ in TYPES.items()]
        connection.execute(f"INSERT INTO t VALUES ({', '.join('?' * len(TYPES))})", values)
    yield connection
    connection.close()


def _to_sql(value: Any, type_: str) -> Any:
    if value is None:
        return None
    if type_ == "bool":
        return int(value)
    if type_ in ("list", "dict"):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def selected(db: sqlite3.Connection, expression: str) -> set[int]:
    compiled = compile_filter(expression, COLUMNS)
    assert compiled.type == "bool"
    return {rowid for (rowid,) in db.execute(f"SELECT rowid FROM t WHERE {compiled.sql}", compiled.params)}


# --- the oracle: Python itself, in this test only, over the rows' Python values ------------------


class _Empty:
    """An empty cell as the language documents it: equal only to None, never ordered, false, and
    empty again through arithmetic and functions."""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, _Empty)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def _false(self, other: object) -> bool:
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _false

    def __bool__(self) -> bool:
        return False

    def __contains__(self, item: object) -> bool:
        return False

    def _empty(self, *args: object) -> _Empty:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _empty
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _empty
    __neg__ = __pos__ = __abs__ = __round__ = _empty


EMPTY = _Empty()


def _unless_empty(function: Any) -> Any:
    return lambda value, *rest: EMPTY if value is EMPTY else function(value, *rest)


ORACLE_NAMES = {
    "__builtins__": {},
    "date": lambda text: date.fromisoformat(text).isoformat(),
    "datetime": lambda text: datetime.fromisoformat(text).isoformat(),
    "time": lambda text: time.fromisoformat(text).isoformat(),
    "today": lambda: date.today().isoformat(),
    "lower": _unless_empty(str.lower),
    "upper": _unless_empty(str.upper),
    "len": _unless_empty(len),
    "abs": abs,
    "round": round,
    "coalesce": lambda *values: next((v for v in values if v is not EMPTY and v is not None), None),
}


def oracle_values(expression: str) -> list[Any]:
    code = compile(ast.parse(expression, mode="eval"), "<oracle>", "eval")
    values = []
    for row in ROWS:
        cells = {name: EMPTY if row.get(name) is None else row[name] for name in TYPES}
        values.append(eval(code, dict(ORACLE_NAMES), cells))
    return values


def oracle(expression: str) -> set[int]:
    return {rowid for rowid, value in enumerate(oracle_values(expression), 1) if value}


# Python decides these; `None` below means "ask the oracle".
ORACLE_CASES = [
    'age > 30 and city == "Berlin"',
    "age > 30",
    "age >= 30",
    "age < 30",
    "age <= 0",
    "not (age > 30)",
    "1 < age < 40",
    "0 <= age < 35 <= qty * 10",
    "age == 28.0",
    "price > 9",
    'name == "Bob"',
    'name != "Bob"',
    'city != "Berlin"',
    'age > 30 or name == "Dana"',
    '"engineer" in role',
    '"Engineer" in role',
    '"engineer" not in role',
    '"周" in name',
    '"ssd" in tags',
    '"ssd" not in tags',
    '"周报" in tags',
    "2 in tags",
    '"2" in tags',
    "True in tags",
    '"k" in meta',
    '"周" in meta',
    '"k" not in meta',
    "tags",
    "not tags",
    "meta",
    "tags and meta",
    "done",
    "not done",
    "done == True",
    "done == False",
    "done != 1",
    'born >= date("1990-01-01")',
    'born < "1990-01-01"',
    'born == date("2000-02-29")',
    'at >= date("2024-02-01")',
    'at < datetime("2024-01-02T08:00")',
    'alarm < time("08:00")',
    "born < today()",
    "age in [28, 45, None]",
    "age not in [28, 45]",
    'city in ("Berlin", "Paris")',
    'role in ["designer", None]',
    "age in []",
    "age not in []",
    'name + "!" == "Bob!"',
    'lower(city) == "berlin"',
    'upper(name) == "EVE"',
    "abs(price) > 5",
    "round(price) == 10",
    "round(price / 3, 2) == 3.17",
    "coalesce(age, 0) < 30",
    "price * 2 > age",
    "price / 4 > 2",
    "age % 7 == 4",
    "age // 10 == -1",
    "price // 2 == -4",
    "price % 2 == 0.5",
    "-age > 0",
    "+price > 50",
    '("big" if price > 50 else "small") == "small"',
    "len(tags) >= 2",
    "len(name) == 2",
    "len(meta) == 0",
    "len(role) > 8",
    '"ssd" in tags and not done or "e" in name',
    "not (done or qty > 3)",
    "age + qty * 2 - 1 > 40",
]
HAND_CASES = [
    ("age is None", {4}),
    ("age is not None", ALL - {4}),
    ("age == None", {4}),
    ("None == age", {4}),
    ("tags != None", ALL - {4}),
    ("role is None", {4, 7}),
    ('at == "2024-05-01T10:30"', {1}),  # text that parses as a datetime is normalised
    ('at == "2024-05-01 10:30:00"', {1}),
    ('born >= "2024"', {8}),  # text that does not parse compares as ISO text
    ("not (price > 0)", {4, 5, 7}),
    ('city != "Berlin" and city != "Paris"', {3, 4, 6, 8}),
    ("age in [None]", {4}),
    ("age not in [None]", ALL - {4}),
    ("None in tags", set()),
]


def test_the_oracle_cases_are_many_and_varied() -> None:
    assert len(ORACLE_CASES) + len(HAND_CASES) >= 40
    assert len({frozenset(oracle(e)) for e in ORACLE_CASES}) > 25, "the cases should not all select alike"


@pytest.mark.parametrize("expression", ORACLE_CASES)
def test_a_filter_selects_what_python_would(db: sqlite3.Connection, expression: str) -> None:
    assert selected(db, expression) == oracle(expression)


@pytest.mark.parametrize(("expression", "expected"), HAND_CASES)
def test_empty_cells_and_normalised_dates(
    db: sqlite3.Connection, expression: str, expected: set[int]
) -> None:
    assert selected(db, expression) == expected


def test_what_names_the_filter_and_the_result_is_never_null(db: sqlite3.Connection) -> None:
    compiled = compile_filter("not (age > 30)", COLUMNS, what="--where")
    values = [v for (v,) in db.execute(f"SELECT {compiled.sql} FROM t", compiled.params)]
    assert set(values) == {0, 1}


# --- values -------------------------------------------------------------------------------------


EXPRESSIONS = [
    ("price * qty", "float"),
    ("lower(name)", "str"),
    ("upper(city)", "str"),
    ("len(tags)", "int"),
    ("len(meta)", "int"),
    ("round(price / 3, 2)", "float"),
    ("round(price)", "int"),
    ('name + " from " + city', "str"),
    ("age // 4", "int"),
    ("age % 4", "int"),
    ("price % 2", "float"),
    ("price // 3", "float"),
    ("abs(age) + 1", "int"),
    ('coalesce(city, "nowhere")', "str"),
    ('"a" if done else "b"', "str"),
    ("age > 30", "bool"),
    ("qty / 4", "float"),
    ("-price", "float"),
    ("done", "bool"),
]


@pytest.mark.parametrize(("expression", "type_"), EXPRESSIONS)
def test_an_expression_computes_what_python_would(
    db: sqlite3.Connection, expression: str, type_: str
) -> None:
    compiled = compile_expression(expression, COLUMNS)
    assert compiled.type == type_
    got = [v for (v,) in db.execute(f"SELECT {compiled.sql} FROM t ORDER BY rowid", compiled.params)]
    expected = [None if v is EMPTY else v for v in oracle_values(expression)]
    if type_ == "float":
        assert got == pytest.approx(expected, nan_ok=False)
    else:
        assert got == expected


def test_expression_examples_by_hand(db: sqlite3.Connection) -> None:
    def values(expression: str) -> list[Any]:
        compiled = compile_expression(expression, COLUMNS)
        return [v for (v,) in db.execute(f"SELECT {compiled.sql} FROM t ORDER BY rowid", compiled.params)]

    assert values("price * qty")[:4] == [19.0, 20.0, 13.0, None]
    assert values("len(tags)")[:5] == [2, 1, 1, None, 0]
    assert values('name + "!"')[2] == "王伟!"
    assert values("round(price / 3, 2)")[0] == 3.17
    assert values('date("2024-05-01")')[0] == "2024-05-01"
    assert values("7 // -2")[0] == -4 and values("-7 % 3")[0] == 2 and values("1 / 0")[0] is None
    assert values("coalesce(None, None, 1)")[0] == 1


def test_dates_times_and_literals_become_canonical_parameters() -> None:
    compiled = compile_filter('at < datetime("2024-05-01T10:30") and alarm > time("07:05")', COLUMNS)
    # (a datetime is ordered by julianday, then text: its parameter comes twice)
    assert compiled.params == ["2024-05-01T10:30:00", "2024-05-01T10:30:00", "07:05:00"]
    assert compile_filter("age > -9223372036854775808", COLUMNS).params == [-(2**63)]
    assert compile_expression("None", COLUMNS).type is None
    assert compile_expression("today()", COLUMNS).params == [date.today().isoformat()]


# --- parameters, never text ---------------------------------------------------------------------


def test_a_literal_holding_sql_is_only_a_parameter(db: sqlite3.Connection) -> None:
    injected = "x' OR 1=1 --"
    compiled = compile_filter(f'name == {injected!r} or city == \'a" OR "1"="1\'', COLUMNS)
    assert injected not in compiled.sql and "1=1" not in compiled.sql and "OR 1" not in compiled.sql
    assert compiled.params == [injected, 'a" OR "1"="1']
    assert selected(db, f"name == {injected!r}") == set()
    assert selected(db, 'name == "Frank O\'Hara"') == {6}


@pytest.mark.parametrize("expression", ORACLE_CASES)
def test_no_value_reaches_the_sql_text(expression: str) -> None:
    compiled = compile_filter(expression, COLUMNS)
    assert compiled.sql.count("?") == len(compiled.params)
    for param in compiled.params:
        if isinstance(param, str) and len(param) >= 3:
            assert param not in compiled.sql


def test_columns_named_like_json_each_columns_are_still_read() -> None:
    """json_each has columns key, value, json, …: a table's own columns of those names must win."""
    db = sqlite3.connect(":memory:")
    names = {"value": "list", "key": "str", "json": "dict", "atom": "str", "doc": "dict"}
    db.execute(f"CREATE TABLE t ({', '.join(f'{chr(34)}{n}{chr(34)} TEXT' for n in names)})")
    db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ('["a","b"]', "b", '{"k":1}', "k", "{}"))
    db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ('["c"]', "z", '{"q":1,"r":2}', "zz", '{"a":1}'))
    columns = {name: Column(f'"{name}"', type_) for name, type_ in names.items()}
    expected = {
        '"a" in value': [1],
        "key in value": [1],
        "key not in value": [2],
        "atom in json": [1],
        "len(json) == 2": [2],
        '"a" in doc': [2],
        "doc": [2],
        "len(doc) == 0": [1],
    }
    for expression, rows in expected.items():
        compiled = compile_filter(expression, columns)
        got = [r for (r,) in db.execute(f"SELECT rowid FROM t WHERE {compiled.sql}", compiled.params)]
        assert got == rows, expression


# --- joins --------------------------------------------------------------------------------------


JOINED = {
    "people.id": Column('p."id"', "int"),
    "people.city": Column('p."city"', "str"),
    "orders.person_id": Column('o."person_id"', "int"),
    "orders.amount": Column('o."amount"', "float"),
    "orders.items": Column('o."items"', "list"),
}


def test_dotted_names_read_the_joined_tables() -> None:
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE people ("id" INTEGER, "city" TEXT)')
    db.execute('CREATE TABLE orders ("person_id" INTEGER, "amount" REAL, "items" TEXT)')
    db.executemany("INSERT INTO people VALUES (?, ?)", [(1, "Berlin"), (2, "Paris"), (3, "Berlin")])
    db.executemany(
        "INSERT INTO orders VALUES (?, ?, ?)",
        [(1, 5.0, '["ssd"]'), (1, 50.0, '["hdd"]'), (2, 70.0, '["ssd"]'), (3, 12.0, "[]"), (9, 99.0, None)],
    )
    on = compile_filter("people.id == orders.person_id", JOINED, what="on")
    assert on.sql == '(p."id" IS o."person_id")' and on.params == []
    where_text = 'people.city == "Berlin" and (orders.amount > 10 or "ssd" in orders.items)'
    where = compile_filter(where_text, JOINED)
    assert 'p."city"' in where.sql and 'o."amount"' in where.sql and 'o."items"' in where.sql
    sql = f"SELECT o.rowid FROM people AS p JOIN orders AS o ON {on.sql} WHERE {where.sql} ORDER BY o.rowid"
    assert [r for (r,) in db.execute(sql, on.params + where.params)] == [1, 2, 4]


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("people.nope == 1", "unknown column 'people.nope'"),
        ("people == 1", "unknown column 'people'"),
        ("city == 1", "unknown column 'city'"),
        ("people.__dict__", "attribute access"),
        ("people.city.upper", "attribute access"),
        ("shops.city == 1", "attribute access"),
    ],
)
def test_only_known_dotted_names_are_allowed(expression: str, says: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(expression, JOINED, what="on")
    assert caught.value.message.startswith("on: line 1, column 1: ")
    assert says in caught.value.message


def test_an_unknown_name_lists_the_columns_sorted_and_at_most_thirty() -> None:
    many = {f"c{n:02d}": Column(f'"c{n:02d}"', "int") for n in range(40, 0, -1)}
    with pytest.raises(FilterError) as caught:
        compile_filter("c01 > 1 and salary > 3", many)
    message = caught.value.message
    assert message.startswith("filter: line 1, column 13: unknown column 'salary' (columns: c01, c02, ")
    assert "c30, …" in message and "c31" not in message


# --- hostile input ------------------------------------------------------------------------------


def hostile(sentinel: Path) -> list[str]:
    target = str(sentinel)
    return [
        f'__import__("os").system("touch {target}")',
        "().__class__.__bases__[0].__subclasses__()",
        f'open({target!r}, "w").write("x")',
        'open("/etc/passwd").read()',
        'eval("1")',
        'exec("x")',
        f'exec("open({target!r}, \\"w\\")")',
        'compile("1", "", "eval")',
        'getattr(age, "__class__")',
        'setattr(age, "x", 1)',
        "age.__class__",
        "age.__class__.__mro__",
        "[x for x in age]",
        "{x for x in tags}",
        "(x for x in tags)",
        "lambda: 1",
        "(lambda: 1)()",
        "age[0]",
        'name["__class__"]',
        "tags[::-1]",
        'f"{age}"',
        '"%s" % age',
        "(x := 1)",
        "*age",
        "lower(*name)",
        "coalesce(**meta)",
        "{1: 2}",
        "{**meta}",
        "{1}",
        "9 ** 9 ** 9 ** 9",
        '"a" * 10 ** 9',
        '"a" * 100',
        '"' + "a" * 20_000 + '"',
        "(" * 1000 + "age" + ")" * 1000,
        "[" * 1000,
        "lower(" * 150 + "name" + ")" * 150,
        "not " * 10_000 + "age",
        "not " * 2_400 + "age",
        "-" * 5_000 + "1",
        "+".join(["age"] * 300),
        "coalesce(" + ", ".join(["age"] * 1_100) + ")",
        "age in [" + "1, " * 1_001 + "]",
        "age // " * 40 + "age",
        "age and (",
        "age; age",
        "import os",
        "x = 1",
        "del age",
        "assert age",
        "",
        "   \n  ",
        'b"x"',
        "1j",
        "...",
        "age is 1",
        'name is not "x"',
        "date(1)",
        'date("2024-13-45")',
        'datetime("tomorrow")',
        'date(x="1")',
        "date(name)",
        "breakpoint()",
        "globals()",
        "vars()",
        "locals()",
        "dir()",
        "print(age)",
        "input()",
        "type(age)",
        "__builtins__",
        "__import__",
        "age.real",
        "(age).real",
        "name.lower()",
        '"abc".upper()',
        'date("2024-01-01").year',
        "today().isoformat()",
        '"a" in age + 1',
        "1 in name",
        "age in age",
        "tags == []",
        'tags == ["ssd"]',
        "name > 3",
        "age < None",
        'name - "x"',
        "name + 1",
        "-name",
        "~age",
        "age << 2",
        "age | 1",
        "age & 1",
        "age ^ 1",
        "age @ age",
        "today(1)",
        "round(price, -1)",
        "round(price, ndigits=2)",
        "len(age)",
        "lower(age)",
        "coalesce(age)",
        "age > 99999999999999999999",
        "price < 1e999",
        "salary > 3",
        "[1, 2]",
        "(1, 2)",
        "age == [1]",
        "age in [1, [2]]",
        "(yield)",
        "await age",
        "age\0",
        "'\ud800'",
        "age in (1, 2) == (1, 2)",
    ]


def test_there_are_at_least_fifty_hostile_expressions(tmp_path: Path) -> None:
    assert len(hostile(tmp_path / "x")) >= 50


def test_every_hostile_expression_is_refused_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel = tmp_path / "sentinel"

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the compiler must never evaluate anything")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(builtins, "open", forbidden)
    columns = {**COLUMNS, "people.city": Column('p."city"', "str")}
    refused = []
    for expression in hostile(sentinel):
        for compile_ in (compile_filter, compile_expression):
            with pytest.raises(FilterError) as caught:
                compile_(expression, columns, what="--where")
            error = caught.value
            assert error.exit_code == ExitCode.INVALID_INPUT == 6
            assert error.code == "invalid_filter"
            assert error.message.startswith("--where: line "), error.message
            assert ", column " in error.message.split(":")[1], error.message
        refused.append(expression)
    monkeypatch.undo()
    assert not sentinel.exists()
    assert len(refused) >= 50
    for expression in ("people.__dict__", "people.city.__class__"):
        with pytest.raises(FilterError):
            compile_filter(expression, columns)


def test_the_compiler_calls_nothing_that_runs_code() -> None:
    tree = ast.parse(Path(filters_module.__file__).read_text(encoding="utf-8"))
    calls = [node.func for node in ast.walk(tree) if isinstance(node, ast.Call)]
    called = {func.id for func in calls if isinstance(func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__", "open", "breakpoint"}


@pytest.mark.parametrize(
    ("expression", "where"),
    [
        ("age > 30 and salary == 1", "line 1, column 14: unknown column 'salary'"),
        ('"周报" == nope', "line 1, column 9: unknown column 'nope'"),
        ("(age > 3 and\n  name ==\n   eval(1))", "line 3, column 4: function eval() is not allowed"),
        ("age and (", "line 1, column 9: "),
        ('born > date("2024-02-30")', "line 1, column 13: '2024-02-30' is not a valid date"),
        ("age is 1", "line 1, column 1: 'is' compares only with None"),
        ("(" * 101 + "age" + ")" * 101, "line 1, column 101: nested more than 100 levels deep"),
        ("a" * 10_001, "line 1, column 10001: longer than 10,000 characters"),
        ("", "line 1, column 1: the filter is empty"),
    ],
)
def test_a_refusal_says_where(expression: str, where: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(expression, COLUMNS)
    assert caught.value.message.startswith(f"filter: {where}"), caught.value.message


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("(lambda x: x)(1)", "lambda is not allowed"),
        ("lambda: 1", "lambda is not allowed"),
        ("len(name)(1)", "calling the result of an expression is not allowed"),
        ("(name or city)()", "calling the result of an expression is not allowed"),
        ("name.lower() == 'x'", "calling a method (.lower()) is not allowed; write lower(x)"),
        ("name.strip() == 'x'", "calling a method (.strip()) is not allowed"),
        ("open('x')", "function open() is not allowed"),
        ("age @ 2 > 1", "@ (matrix multiplication) is not allowed"),
        ("age & 1", "& (a bit operator) is not allowed"),
        ("age | 1", "| (a bit operator) is not allowed"),
        ("age ^ 1", "^ (a bit operator) is not allowed"),
        ("age << 1", "<< (a bit operator) is not allowed"),
        ("age >> 1", ">> (a bit operator) is not allowed"),
        ("~age", "~ (a bit operator) is not allowed"),
        ("age ** 2 > 1", "** (power) is not allowed"),
        ("name[0] == 'A'", "indexing (x[...]) is not allowed"),
        ("[a for a in tags]", "a comprehension is not allowed"),
        ("(a for a in tags)", "a generator expression is not allowed"),
        ("f'{name}' == 'x'", "an f-string is not allowed"),
        ("b'x' == name", "a bytes literal is not allowed"),
        ("...", "... (Ellipsis) is not allowed"),
        ("(x := 1)", "assignment (:=) is not allowed"),
        ("{'a': 1}", "a dict {...} is not allowed"),
        ("name.real", "attribute access (.real) is not allowed"),
        ('name == "\\ud800"', "a lone surrogate (\\ud800-\\udfff) is not text"),
        ('"\\udcff" in name', "a lone surrogate (\\ud800-\\udfff) is not text"),
    ],
)
def test_a_refused_construct_is_named(expression: str, says: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filter(expression, COLUMNS)
    assert says in caught.value.message, caught.value.message
    assert "this()" not in caught.value.message


def test_the_bounds_allow_what_a_person_writes(db: sqlite3.Connection) -> None:
    assert selected(db, "(" * 100 + "age > 30" + ")" * 100) == {1, 3, 6}
    assert selected(db, "age in [" + ", ".join(str(n) for n in range(1_000)) + "]") == {2, 5, 8, 1, 3, 6}
    assert selected(db, "not " * 20 + "done") == selected(db, "done")
    assert selected(db, " or ".join(f"age == {n}" for n in range(300))) == {1, 2, 3, 5, 6, 8}
    long_text = "x" * 9_990
    assert compile_filter(f'name == "{long_text}"', COLUMNS).params == [long_text]


NESTINGS = {
    "not": lambda n: "not " * n + "done",
    "and": lambda n: "(done and " * n + "age > 1" + ")" * n,
    "in": lambda n: 'not ("a" in tags or ' * n + '"k" in meta' + ")" * n,
    "arithmetic": lambda n: "(1 + " * n + "age // 2" + ")" * n + " > 3",
    "floor division": lambda n: "age // " * n + "2 > 0",
    "functions": lambda n: "lower(" * n + "name" + ")" * n + ' == "x"',
    "choices": lambda n: "(done if " * n + "done" + " else done)" * n,
}


@pytest.mark.parametrize("make", NESTINGS.values(), ids=NESTINGS.keys())
def test_whatever_compiles_runs_in_sqlite_inside_a_real_statement(db: sqlite3.Connection, make: Any) -> None:
    """SQLite's parser overflows on much less nesting than Python's: past that, a FilterError, never
    an sqlite3 error at run time, even inside a join with a subquery around it."""
    columns = {name: Column(f't."{name}"', type_) for name, type_ in TYPES.items()}
    columns.update({f"o.{name}": Column(f'o."{name}"', type_) for name, type_ in TYPES.items()})
    refused_at = None
    for n in range(1, 60):
        try:
            compiled = compile_filter(make(n), columns)
        except FilterError as exc:
            assert "too complex" in exc.message or "nested" in exc.message, exc.message
            refused_at = n
            break
        on = compile_filter("o.name == name", columns, what="on")
        sql = (
            f'SELECT t.rowid, o."name" FROM t JOIN t AS o ON {on.sql} WHERE ({compiled.sql}) '
            "AND t.rowid IN (SELECT rowid FROM t WHERE age IS NOT NULL OR name IS NOT NULL) "
            "ORDER BY t.rowid LIMIT ?"
        )
        db.execute(sql, [*on.params, *compiled.params, 100]).fetchall()
    assert refused_at is not None and refused_at > 5, "ordinary nesting is allowed, hostile nesting refused"


def test_a_random_expression_is_refused_or_runs(db: sqlite3.Connection) -> None:
    """Seeded fuzzing over the grammar, valid and not: a FilterError or SQL SQLite runs, nothing else."""
    rng = random.Random(20240501)
    atoms = [*TYPES, "1", "-3", "2.5", '"a"', '"k"', "None", "True", 'date("2024-01-01")', "[1, None]", "x"]
    operators = [" and ", " or ", " + ", " // ", " % ", " / ", " == ", " < ", " in ", " not in ", " is "]

    def generate(depth: int) -> str:
        roll = rng.random()
        if depth <= 0 or roll < 0.3:
            return rng.choice(atoms)
        if roll < 0.45:
            return rng.choice(["not ", "-", "~"]) + generate(depth - 1)
        if roll < 0.8:
            return generate(depth - 1) + rng.choice(operators) + generate(depth - 1)
        if roll < 0.9:
            return f"({generate(depth - 1)} if {generate(depth - 1)} else {generate(depth - 1)})"
        arguments = ", ".join(generate(depth - 1) for _ in range(rng.randint(0, 2)))
        return f"{rng.choice(['lower', 'len', 'abs', 'round', 'coalesce', 'open'])}({arguments})"

    ran = 0
    for _ in range(1_500):
        expression = generate(rng.randint(1, 5))
        try:
            compiled = compile_filter(expression, COLUMNS)
        except FilterError:
            continue
        db.execute(f"SELECT rowid FROM t WHERE {compiled.sql}", compiled.params).fetchall()
        ran += 1
    assert ran > 300
