"""The row path: a change of a few rows costs about as much as those rows. `update-rows` and
`delete-rows` replace only the touched lines of the CSV (every other byte kept: a hand-made
column order, spelling, blank lines, line endings) and read only those rows; a new column is
added to the index in place instead of rebuilding it; the file's line ending is kept (a CRLF file
stays CRLF). What the index believes of a touched row is checked against the file before it is
written over: a hand edit the index missed is never lost."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ok, run_aibuddy

from aibuddy_cli.app.session import Session
from aibuddy_cli.store.cache_db import files_digest, to_signed
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.tables import csvfile
from aibuddy_cli.vault import Vault

TABLE = "tables/personal/demo/items.csv"


def rows_path(vault: Vault) -> Path:
    return vault.root / TABLE


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many CSV cells were read since the last reset (a list of one count)."""
    count = [0]
    real = csvfile.parse_value

    def counting(value: Any, type_: str) -> Any:
        count[0] += 1
        return real(value, type_)

    monkeypatch.setattr(csvfile, "parse_value", counting)
    yield count


def items(cli, vault: Vault, n: int) -> None:
    """Table items of n rows (name, price, tags), added in one call."""
    ok(cli("table", "create", "items", "-c", "name:str", "-c", "price:float", "-c", "tags:list", "--json"))
    source = vault.root.parent / "items.jsonl"
    lines = (json.dumps({"name": f"item {i}", "price": i + 0.5, "tags": [f"t{i % 7}"]}) for i in range(n))
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ok(cli("table", "add", "items", "--file", str(source), "--json"))


def all_rows(cli, table: str = "items") -> list[dict[str, Any]]:
    return ok(cli("table", "filter", table, "--limit", "1000", "--json"))["tables"][0]["rows"]


def add(cli, *rows: dict[str, Any], table: str = "items") -> dict[str, Any]:
    """`table add` of rows to table, its JSON answer."""
    args = [arg for row in rows for arg in ("--row", json.dumps(row))]
    return ok(cli("table", "add", table, *args, "--json"))


def test_a_one_row_update_reads_and_rewrites_only_that_row(cli, vault: Vault, parsed: list[int]) -> None:
    items(cli, vault, 3000)
    all_rows(cli)  # the index is current
    before = rows_path(vault).read_bytes().split(b"\n")
    parsed[0] = 0
    updated = ok(
        cli(
            "table", "update-rows", "items", "--where", "row_id == 1500", "--set", '{"price": 7.25}', "--json"
        )
    )
    assert updated["updated"] == 1
    assert parsed[0] <= 3 * 4, f"{parsed[0]} cells read to update one row of four cells"
    after = rows_path(vault).read_bytes().split(b"\n")
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [1500]
    assert after[1500] == b'1500,item 1499,7.25,"[""t1""]"'
    deleted = ok(cli("table", "delete-rows", "items", "--where", "row_id == 10", "--yes", "--json"))
    assert deleted["rows"] == [{"row_id": 10, "name": "item 9", "price": 9.5, "tags": ["t2"]}]
    assert parsed[0] <= 6 * 4
    assert rows_path(vault).read_bytes().split(b"\n") == after[:10] + after[11:]
    found = ok(cli("table", "filter", "items", "--where", "row_id >= 1500", "--limit", "1", "--json"))[
        "tables"
    ][0]
    assert parsed[0] <= 6 * 4  # and the next read does not rebuild the index
    assert found["total"] == 1501 and found["rows"] == [
        {"row_id": 1500, "name": "item 1499", "price": 7.25, "tags": ["t1"]}
    ]
    assert ok(cli("table", "show", "items", "--json"))["rows"] == 2999


def test_a_new_column_does_not_rebuild_the_index(cli, vault: Vault, parsed: list[int]) -> None:
    items(cli, vault, 2000)
    all_rows(cli)
    parsed[0] = 0
    ok(cli("table", "add", "items", "--row", '{"name": "new", "colour": "red"}', "--json"))
    ok(cli("table", "column", "add", "items", "weight", "float", "--json"))
    found = ok(cli("table", "filter", "items", "--where", 'colour == "red" or row_id == 2', "--json"))
    assert parsed[0] == 0, f"{parsed[0]} cells read: the index was rebuilt"
    assert found["tables"][0]["rows"] == [
        {"row_id": 2, "name": "item 1", "price": 1.5, "tags": ["t1"], "colour": None, "weight": None},
        {"row_id": 2001, "name": "new", "price": None, "tags": None, "colour": "red", "weight": None},
    ]
    lines = rows_path(vault).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "row_id,name,price,tags,colour,weight"
    assert lines[2] == '2,item 1,1.5,"[""t1""]",,' and lines[-1] == "2001,new,,,red,"
    shutil.rmtree(vault.root / ".aibuddy")  # a rebuild from the file reads the same rows
    assert all_rows(cli)[1] == found["tables"][0]["rows"][0]


def test_a_crlf_file_keeps_its_line_endings(cli, vault: Vault) -> None:
    ok(cli("table", "create", "items", "-c", "name:str", "-c", "price:float", "--json"))
    add(cli, {"name": "a", "price": 1.5}, {"name": "b"})
    path = rows_path(vault)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))  # as an editor on Windows saves it
    ok(cli("table", "add", "items", "--row", '{"name": "c", "price": 3.0}', "--json"))
    assert path.read_bytes() == b"row_id,name,price\r\n1,a,1.5\r\n2,b,\r\n3,c,3.0\r\n"
    ok(cli("table", "update-rows", "items", "--where", 'name == "b"', "--set", '{"price": 2.5}', "--json"))
    ok(cli("table", "delete-rows", "items", "--where", 'name == "a"', "--yes", "--json"))
    ok(cli("table", "add", "items", "--row", '{"name": "d", "size": 4}', "--json"))
    assert path.read_bytes() == b"row_id,name,price,size\r\n2,b,2.5,\r\n3,c,3.0,\r\n4,d,,4\r\n"
    ok(
        cli("table", "column", "transform", "items", "size", "--type", "float", "--json")
    )  # every row rewritten
    assert path.read_bytes() == b"row_id,name,price,size\r\n2,b,2.5,\r\n3,c,3.0,\r\n4,d,,4.0\r\n"


def test_rows_follow_the_files_own_column_order_and_spelling(cli, vault: Vault) -> None:
    ok(cli("table", "create", "items", "-c", "name:str", "-c", "price:float", "--json"))
    ok(cli("table", "add", "items", "--row", '{"name": "a", "price": 1.5}', "--json"))
    path = rows_path(vault)
    hand = "price,row_id,name\n1.50,1,a\n\n-0.0,2,b\n"  # reordered, respelled, a blank line
    path.write_text(hand, encoding="utf-8")
    schema = path.with_name("items.schema.json")
    schema.write_text(schema.read_text().replace('"next_key": 2', '"next_key": 3'))
    ok(cli("table", "add", "items", "--row", '{"name": "c", "price": 3.25}', "--json"))
    ok(cli("table", "update-rows", "items", "--where", 'name == "b"', "--set", '{"name": "B"}', "--json"))
    # -0.0 is kept as the file has it (SQLite gives it back as 0.0)
    assert path.read_text(encoding="utf-8") == "price,row_id,name\n1.50,1,a\n\n-0.0,2,B\n3.25,3,c\n"
    assert [(r["name"], r["price"]) for r in all_rows(cli)] == [("a", 1.5), ("B", 0.0), ("c", 3.25)]


def test_a_hand_edit_the_index_missed_is_kept(cli, vault: Vault) -> None:
    """An edit of the same size within the file system's clock tick leaves the stat signature as
    it was: the update checks the touched row against the file and reads the file again."""
    ok(cli("table", "create", "items", "-c", "name:str", "-c", "city:str", "--json"))
    add(cli, {"name": "Ada", "city": "London"}, {"name": "Alan"})
    all_rows(cli)
    path = rows_path(vault)
    path.write_bytes(path.read_bytes().replace(b"1,Ada,London", b"1,Ida,Berlin"))
    store = FileStore(vault.root, vault.locks_dir())
    entries = (store.stat(TABLE), store.stat(TABLE.replace(".csv", ".schema.json")))
    with sqlite3.connect(vault.tables_index_path()) as db:  # the index does not see the edit
        db.execute("UPDATE tables SET signature = ?", (to_signed(files_digest(entries)),))
    assert all_rows(cli)[0]["name"] == "Ada"
    ok(cli("table", "update-rows", "items", "--where", "row_id == 1", "--set", '{"city": "Paris"}', "--json"))
    assert path.read_text(encoding="utf-8").splitlines()[1] == "1,Ida,Paris"
    assert all_rows(cli)[0] == {"row_id": 1, "name": "Ida", "city": "Paris"}


def test_a_reader_that_reads_the_file_while_a_change_is_written_is_no_harm(cli, vault: Vault) -> None:
    """Between writing the CSV and updating the index, another process's read may already have
    read the new file into the index: the writer then leaves the index as that read left it."""
    from aibuddy_cli.store.files import StoreView

    ok(cli("table", "create", "other", "-c", "x:int", "--json"))
    ok(cli("table", "create", "items", "-c", "name:str", "--json"))
    ok(cli("table", "add", "items", "--row", '{"name": "a"}', "--row", '{"name": "b"}', "--json"))
    all_rows(cli, "other"), all_rows(cli)
    writer = Session(Vault.open(vault.root), "demo", environ={})
    reader = Session(Vault.open(vault.root), "demo", environ={})

    class ReadMeanwhile(StoreView):
        def write(self, key: str, data: bytes, *, create: bool = False):  # type: ignore[no-untyped-def]
            entry = super().write(key, data, create=create)
            if key == TABLE:
                assert reader.tables.queries.filter(["items"]).tables[0].rows[0]["name"] == "A"
            return entry

    writer.tables.state.store = ReadMeanwhile(writer.tables.state.store)
    writer.tables.changes.update_rows("items", "row_id == 1", {"name": "A"})
    writer.tables.changes.update_rows("items", "row_id == 2", {"name": "B"})
    writer.close(), reader.close()
    assert [r["name"] for r in all_rows(cli)] == ["A", "B"]
    assert rows_path(vault).read_text(encoding="utf-8") == "row_id,name\n1,A\n2,B\n"


@pytest.mark.process
def test_updates_from_many_processes_all_land(
    aibuddy_exe: list[str], cli, vault: Vault, env: dict[str, str]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    items(cli, vault, 40)

    def change(n: int) -> int:
        if n % 2:
            argv = [
                "update-rows",
                "items",
                "--where",
                f"row_id == {n}",
                "--set",
                json.dumps({"name": f"n{n}"}),
            ]
        else:
            argv = ["add", "items", "--row", json.dumps({"name": f"added {n}"})]
        return run_aibuddy(aibuddy_exe, "table", *argv, "--json", env=env).returncode

    # Sixteen processes, eight at a time: each a third of a second of start-up, so more would only
    # repeat the same contention at the suite's cost.
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(change, range(1, 17))) == [0] * 16
    rows = {r["row_id"]: r["name"] for r in all_rows(cli)}
    assert all(rows[n] == f"n{n}" for n in range(1, 17, 2))
    assert sorted(v for v in rows.values() if v.startswith("added")) == sorted(
        f"added {n}" for n in range(2, 17, 2)
    )
    assert len(rows) == 48
    shutil.rmtree(vault.root / ".aibuddy")
    assert {r["row_id"]: r["name"] for r in all_rows(cli)} == rows


def test_a_value_holding_a_line_break_reads_back_in_any_file(cli, vault: Vault) -> None:
    """The csv module quotes a line-break character only when it is in its own line terminator:
    a lone \\r in a cell of a \\n file (or a \\n in a \\r file) must be quoted all the same."""
    ok(cli("table", "create", "items", "-c", "name:str", "--json"))
    values = ["a\rb", "c\nd", "e\r\nf"]
    ok(
        cli(
            "table",
            "add",
            "items",
            *[a for v in values for a in ("--row", json.dumps({"name": v}))],
            "--json",
        )
    )
    assert [r["name"] for r in all_rows(cli)] == values
    path = rows_path(vault)
    path.write_bytes(path.read_bytes().replace(b"row_id,name\n", b"row_id,name\r"))  # a classic Mac file
    ok(
        cli(
            "table",
            "update-rows",
            "items",
            "--where",
            "row_id == 1",
            "--set",
            json.dumps({"name": "g\nh"}),
            "--json",
        )
    )
    shutil.rmtree(vault.root / ".aibuddy")
    assert [r["name"] for r in all_rows(cli)] == ["g\nh", *values[1:]]


# --- a property: the index and the file agree after any row change, on any valid file ----------

VALUES: dict[str, list[Any]] = {
    "str": [
        "plain",
        "with, comma",
        'with "quotes"',
        "two\nlines",
        "crlf\r\ninside",
        "cr\ronly",
        "中文",
        "",
        " pad ",
    ],
    "int": [0, -7, 42, 2**40],
    "float": [0.5, -2.25, 1e20, 3.0],
    "list": [[], ["a", "b,c"], [1, "x\ny"]],
}


def quirky(text: str, rng: random.Random) -> str:
    """The file as a person might have left it: CRLF, blank lines, no final line break."""
    if rng.random() < 0.4:
        text = text.replace("\n", "\r\n")
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(0, 2)):
        lines.insert(rng.randint(1, len(lines)), "\r\n" if "\r\n" in text else "\n")
    text = "".join(lines)
    return text.rstrip("\r\n") if rng.random() < 0.3 else text


@pytest.mark.parametrize("seed", range(6))
def test_the_index_always_agrees_with_the_file(tmp_path: Path, seed: int) -> None:
    from aibuddy_cli.vault import init_vault

    rng = random.Random(seed)
    vault = init_vault(tmp_path / "vault", "demo")
    types = {"name": "str", "n": "int", "f": "float", "tags": "list"}
    session = Session(Vault.open(vault.root), "demo", environ={})
    changes = session.tables.changes

    def value(type_: str) -> Any:
        return None if rng.random() < 0.2 else rng.choice(VALUES[type_])

    def row() -> dict[str, Any]:
        return {name: value(type_) for name, type_ in types.items() if rng.random() < 0.8}

    from aibuddy_cli.tables.schema import ColumnSpec

    changes.create("t", columns=[ColumnSpec(name, type_) for name, type_ in types.items()])
    changes.add_rows("t", [row() for _ in range(8)])
    path = vault.root / "tables/personal/demo/t.csv"
    path.write_bytes(quirky(path.read_text(encoding="utf-8"), rng).encode("utf-8"))
    for step in range(30):
        kind = rng.choice(["add", "add", "update", "update", "delete", "column", "new_column"])
        where = rng.choice(["True", f"row_id == {rng.randint(1, 12)}", "n > 0", "row_id % 2 == 0"])
        if kind == "add":
            changes.add_rows("t", [row() for _ in range(rng.randint(1, 3))])
        elif kind == "update":
            name = rng.choice(list(types))
            changes.update_rows("t", where, {name: rng.choice(VALUES[types[name]])})
        elif kind == "delete":
            changes.delete_rows("t", where)
        elif kind == "column":
            types[f"c{step}"] = "str"
            changes.add_column("t", f"c{step}", "str")
        else:
            types[f"d{step}"] = "int"
            changes.add_rows("t", [{**row(), f"d{step}": step}])
        state = session.tables.state
        table = state.open("t")
        in_file = {r["row_id"]: r for r in state.read_rows(table.ref, table.schema)}
        in_index = {r["row_id"]: r for r in session.tables.queries.filter(["t"], limit=1000).tables[0].rows}
        assert in_index == in_file, f"seed {seed}, step {step}: {kind} {where}"
        if rng.random() < 0.2:  # now and then a hand edit: the next command reads the file again
            path.write_bytes(quirky(path.read_text(encoding="utf-8"), rng).encode("utf-8"))
    kept = session.tables.queries.filter(["t"], limit=1000).tables[0].rows
    session.close()
    shutil.rmtree(vault.root / ".aibuddy")
    rebuilt = Session(Vault.open(vault.root), "demo", environ={})
    assert rebuilt.tables.queries.filter(["t"], limit=1000).tables[0].rows == kept
    rebuilt.close()
