"""A property over random typed tables: after any column or row operation, directly or through a
model's tool loop, each value is either kept, converted exactly, or the operation was refused and
the table files are byte for byte as before. Values an operation was asked to replace are what was
asked for; values it removes are in the journal; with lossy "drop", a value is kept exactly or
emptied and listed.

The tables and operations come from a seeded random generator (deterministic: a failure names its
seed and step). The oracle of "converted exactly" is written here, independently of schema.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import AibuddyError
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.tables.schema import ColumnSpec, parse_value
from aibuddy_cli.vault import Vault, init_vault

ENV = {"AIBUDDY_MODEL_TABLES": "openai/tables-test", "AIBUDDY_TIMEOUT": "30"}
TYPES = ("str", "int", "float", "bool", "date", "datetime", "time", "list", "dict")
SAMPLES: dict[str, list[Any]] = {
    "int": [0, 1, -3, 12, 149, 2**53 + 1, 2**62, -(2**63), 42],
    "float": [0.0, 1.0, 149.0, 79.5, 0.1, -2.5, 1e20, 12345678.9, 3.0, 2.0**60],
    "bool": [True, False],
    "str": [
        "abc", "12", "+4930123", "0042", "1.10", "1_000", "true", "2024-05-01", "10:00:00", "[1,2]",
        '{"a":1}', " 7", "149", "0", "1", "2024-05-01T00:00:00", "x y", "中文", "79.5", "-0", "1e5",
    ],  # fmt: skip
    "date": ["2024-05-01", "1999-12-31"],
    "datetime": ["2024-05-01T00:00:00", "2024-05-01T10:30:00", "2024-05-01T10:30:00+02:00"],
    "time": ["10:00:00", "23:59:59.500000"],
    "list": [[], [1, 2], ["a"], [1.5, "x"]],
    "dict": [{}, {"a": 1}, {"k": [1]}],
}


def canonical(value: Any, type_: str) -> str:
    """The one CSV spelling of a value (the oracle's own, not schema.cell_text)."""
    if type_ == "bool":
        return "true" if value else "false"
    if type_ == "float":
        return repr(float(value))
    if type_ in ("list", "dict"):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def exactly(old: Any, old_type: str, new: Any, new_type: str) -> bool:
    """Whether new (of new_type) is old (of old_type) converted exactly: nothing lost, nothing
    respelled."""
    if old is None or new is None:
        return old is None and new is None
    if old_type == new_type:
        return type(old) is type(new) and canonical(old, old_type) == canonical(new, new_type)
    if new_type == "str":
        return new == canonical(old, old_type)
    if old_type == "str":
        whole = new_type == "float" and float(new).is_integer() and old == str(int(new))
        return canonical(new, new_type) == old or whole
    pair = (old_type, new_type)
    if pair == ("int", "float"):
        return isinstance(new, float) and new == old and int(new) == old
    if pair == ("float", "int"):
        return type(new) is int and new == old
    if pair in (("bool", "int"), ("bool", "float")):
        return new == int(old) and not isinstance(new, bool)
    if pair in (("int", "bool"), ("float", "bool")):
        return old in (0, 1) and new is bool(old)
    if pair == ("date", "datetime"):
        return new == old + "T00:00:00"
    if pair == ("datetime", "date"):
        return old == new + "T00:00:00"
    return False


def given(value: Any, type_: str, stored: Any) -> bool:
    """Whether a value a caller gave for a column is what the column holds."""
    if isinstance(value, str) and type_ != "str":
        return stored == parse_value(value, type_)  # text is read as what it spells
    if type_ == "float" and type(value) is int:
        return stored == value and int(stored) == value
    return exactly(value, type_, stored, type_)


class World:
    """One vault with two random tables, and what the property checks after each step."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.rng = rng
        self.vault = init_vault(root, "demo")
        self.session = Session(Vault.open(root), "demo", environ=ENV)
        self.changes = self.session.tables.changes
        self.names = 0
        for table, count in (("a", 7), ("b", 4)):
            columns = [ColumnSpec(self.name(), rng.choice(TYPES)) for _ in range(rng.randint(2, 4))]
            self.changes.create(table, columns=columns)
            rows = [{c.name: self.value(c.type) for c in columns} for _ in range(count)]
            self.changes.add_rows(table, rows)

    def name(self) -> str:
        self.names += 1
        return f"c{self.names}"

    def value(self, type_: str, empty: float = 0.2) -> Any:
        return None if self.rng.random() < empty else self.rng.choice(SAMPLES[type_])

    def files(self) -> dict[str, bytes]:
        found = self.vault.root.glob("tables/**/*.*")
        return {str(p.relative_to(self.vault.root)): p.read_bytes() for p in found}

    def tables(self) -> dict[str, tuple[dict[str, str], dict[int, dict[str, Any]]]]:
        state = self.session.tables.state
        found = {}
        for ref in state.refs():
            schema, _ = state.schema(ref)
            rows = state.read_rows(ref, schema)  # every table stays readable
            found[ref.name] = (schema.types, {row[schema.key]: row for row in rows})
        return found

    def journal(self) -> dict[str, Any]:
        lines = (self.vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
        return json.loads(lines[-1])["changed"]

    def columns(self, table: str) -> list[str]:
        return [c for c in self.tables()[table][0] if c != "row_id"]

    # --- one random operation: (tool name, arguments) ----------------------------------------

    def operation(self) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        table = rng.choice(["a", "b"])
        other = "b" if table == "a" else "a"
        columns = self.columns(table) or [self.name()]
        column = rng.choice(columns)
        kind = rng.choice(
            ["transform", "transform", "transform_lossy", "transform_expression", "derive", "derive_literal",
             "update", "add", "rename", "add_column", "copy", "move", "delete_column", "delete_rows"]
        )  # fmt: skip
        if kind == "transform":
            return "transform_column", {"table": table, "column": column, "type": rng.choice(TYPES)}
        if kind == "transform_lossy":
            return "transform_column", {
                "table": table, "column": column, "type": rng.choice(TYPES), "lossy": "drop",
            }  # fmt: skip
        if kind == "transform_expression":
            source = rng.choice(columns)
            return "transform_column", {
                "table": table, "column": column, "expression": source, "type": rng.choice(TYPES),
            }  # fmt: skip
        if kind == "derive":
            arguments = {"table": table, "column": self.name(), "expression": column}
            if rng.random() < 0.7:
                arguments["type"] = rng.choice(TYPES)
            return "create_derived_column", arguments
        if kind == "derive_literal":
            return "create_derived_column", {
                "table": table, "column": self.name(), "expression": "1.5", "type": rng.choice(TYPES),
            }  # fmt: skip
        if kind in ("update", "add"):
            own = self.tables()[table][0].get(column, "str")
            values = {column: self.value(rng.choice([own, *TYPES]) if rng.random() < 0.5 else own, empty=0)}
            if kind == "add":
                return "add_rows", {"table": table, "rows": [values]}
            where = rng.choice(["True", f"row_id == {rng.randint(1, 7)}"])
            return "update_rows", {"table": table, "filter": where, "values": values}
        if kind == "rename":
            return "rename_column", {"table": table, "old": column, "new": self.name()}
        if kind == "add_column":
            return "create_empty_column", {"table": table, "column": self.name(), "type": rng.choice(TYPES)}
        if kind in ("copy", "move"):
            return f"{kind}_column", {"table": table, "column": column, "to_table": other}
        if kind == "delete_column":
            return "delete_column", {"table": table, "column": column}
        return "delete_rows", {"table": table, "filter": f"row_id == {rng.randint(1, 7)}"}

    def apply(self, tool: str, arguments: dict[str, Any], through_loop: bool) -> dict[str, Any] | None:
        """The operation's answer, or None when it was refused."""
        if through_loop:
            model = ScriptedModel()
            model.call(("ask", {"question": "What do the tables hold?"}))
            model.answer("two tables")
            model.call((tool, arguments))
            model.answer("done")
            agent = TableAgent(self.session.tables, self.session.settings, connect=lambda settings: model)
            agent.change("refactor", "reshape")
            result = model.tool_results()[-1]
            return None if "error" in result else result
        from aibuddy_cli.operations.registry import offered

        op = {op.tools["table_write"]: op for op in offered("table_write")}[tool]
        try:
            answer = op.function(self.changes, **op.from_tool(arguments))
        except AibuddyError:
            return None
        return to_json(answer)


def check(world: World, tool: str, args: dict[str, Any], before: Any, after: Any, answer: dict) -> None:
    """Every value of `before` is in `after` as the operation says it must be."""
    table = args.get("table")
    journal = world.journal()
    dropped = {v["key"] for v in answer.get("not_converted", {}).get("values", [])}
    for name, (types, rows) in before.items():
        new_types, new_rows = after[name]
        for key, row in rows.items():
            for column, value in row.items():
                if column == "row_id":
                    continue
                where = (name, column)
                if name == table and tool == "rename_column" and column == args["old"]:
                    where = (name, args["new"])
                if name == table and tool == "move_column" and column == args["column"]:
                    where = (args["to_table"], column)
                if name == table and tool == "delete_column" and column == args["column"]:
                    if value is not None:
                        assert {"key": key, "value": value} in journal["values"]
                    continue
                if name == table and tool == "delete_rows" and key not in new_rows:
                    assert any(r["row_id"] == key for r in journal["rows"])
                    continue
                if name == table and tool == "update_rows" and column in args["values"]:
                    matched = args["filter"] == "True" or args["filter"] == f"row_id == {key}"
                    if matched:
                        assert given(args["values"][column], types[column], new_rows[key][column])
                        continue
                if name == table and tool == "transform_column" and column == args["column"]:
                    if "expression" in args:
                        source = args["expression"]
                        old, old_type = row.get(source), types[source]
                    else:
                        old, old_type = value, types[column]
                    new = new_rows[key][column]
                    if not (args.get("lossy") == "drop" and new is None and key in dropped):
                        assert exactly(old, old_type, new, new_types[column]), (old, new)
                    continue
                target_types, target_rows = after[where[0]]
                if where[0] != name and key not in target_rows:
                    assert value is None  # a move leaves nothing but empty cells behind
                    continue
                assert exactly(value, types[column], target_rows[key][where[1]], target_types[where[1]])
        for key in set(new_rows) - set(rows):
            assert name == table and tool == "add_rows"
            for column, value in args["rows"][0].items():
                assert given(value, new_types[column], new_rows[key][column])
    if tool == "create_derived_column":
        new_types, new_rows = after[table]
        old_types, old_rows = before[table]
        for key, row in new_rows.items():
            new = row[args["column"]]
            if args["expression"] == "1.5":
                assert exactly(1.5, "float", new, new_types[args["column"]])
            else:
                source = args["expression"]
                assert exactly(old_rows[key][source], old_types[source], new, new_types[args["column"]])


@pytest.mark.parametrize("seed", range(12))
def test_no_operation_destroys_a_value(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    world = World(tmp_path / "vault", rng)
    applied = refused = 0
    for step in range(16):
        tool, args = world.operation()
        files, tables = world.files(), world.tables()
        answer = world.apply(tool, args, through_loop=rng.random() < 0.35)
        where = f"seed {seed}, step {step}: {tool} {args}"
        if answer is None:
            refused += 1
            assert world.files() == files, where
            continue
        applied += 1
        try:
            check(world, tool, args, tables, world.tables(), answer)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from exc
    assert applied and refused  # the seeds exercise both outcomes
