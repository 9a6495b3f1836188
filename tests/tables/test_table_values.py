"""A table change never destroys values: a conversion that cannot carry a value over exactly is
refused as a whole (exit 6, naming the rows and values, nothing written) unless a lossy one is
asked for; CSV import guesses only types that give the text back; destructive column changes ask
and journal what they removed; a full key space and an oversized file are refused before work."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path

import pytest
from helpers import ok, run_aibuddy, run_in_process, strict_json
from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.vault import Vault

ENV = {"AIBUDDY_MODEL_TABLES": "openai/tables-test", "AIBUDDY_TIMEOUT": "30"}


def table_file(vault: Vault, name: str, suffix: str = ".csv") -> Path:
    return vault.root / "tables/personal/demo" / f"{name}{suffix}"


def journal(vault: Vault) -> list[dict]:
    lines = (vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
def items(aibuddy_exe: list[str], env: dict[str, str]) -> None:
    assert run_aibuddy(aibuddy_exe, "table", "create", "items", "-c", "price:float", env=env).returncode == 0
    rows = ("--row", '{"price": 149.0}', "--row", '{"price": 79.5}')
    assert run_aibuddy(aibuddy_exe, "table", "add", "items", *rows, env=env).returncode == 0


@pytest.mark.process
def test_a_transform_that_cannot_keep_a_value_is_refused_whole_in_a_real_process(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, items: None
) -> None:
    before = table_file(vault, "items").read_bytes(), table_file(vault, "items", ".schema.json").read_bytes()
    refused = run_aibuddy(
        aibuddy_exe, "table", "column", "transform", "items", "price", "--type", "int", env=env
    )
    assert refused.returncode == 6
    message = refused.stderr.decode()
    assert "row_id 2: 79.5" in message and "lossy" in message and "149.0" not in message
    assert (
        table_file(vault, "items").read_bytes(),
        table_file(vault, "items", ".schema.json").read_bytes(),
    ) == before
    lossy = ("table", "column", "transform", "items", "price", "--type", "int", "--lossy", "round")
    assert run_aibuddy(aibuddy_exe, *lossy, env=env).returncode == 2  # a lossy change asks: --yes here
    assert table_file(vault, "items").read_bytes() == before[0]
    done = run_aibuddy(aibuddy_exe, *lossy, "--yes", "--json", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["not_converted"]["values"] == [
        {"key": 2, "value": 79.5, "reason": "79.5 is not a whole number; now '80'"}
    ]
    assert table_file(vault, "items").read_text() == "row_id,price\n1,149\n2,80\n"
    assert journal(vault)[-1]["changed"]["before"] == [{"key": 1, "value": 149.0}, {"key": 2, "value": 79.5}]
    assert run_aibuddy(aibuddy_exe, *lossy[:-2], "--lossy", "sideways", "--yes", env=env).returncode == 6


def test_values_that_convert_exactly_convert(cli, vault: Vault) -> None:
    ok(cli("table", "create", "t", "-c", "f:float", "-c", "s:str", "-c", "d:datetime", "--json"))
    row = {"f": 149.0, "s": "12", "d": "2024-05-01T00:00:00"}
    ok(cli("table", "add", "t", "--row", json.dumps(row), "--json"))
    for column, type_ in (("f", "int"), ("s", "int"), ("d", "date"), ("f", "str"), ("f", "float")):
        done = ok(cli("table", "column", "transform", "t", column, "--type", type_, "--json"))
        assert done["not_converted"]["count"] == 0
    assert table_file(vault, "t").read_text().splitlines()[1] == "1,149.0,12,2024-05-01"
    for column, type_, value in (("s", "bool", "12"), ("d", "time", "'2024-05-01'")):
        refused = cli("table", "column", "transform", "t", column, "--type", type_)
        assert refused.exit_code == 6 and f"row_id 1: {value} (" in refused.stderr
    ok(cli("table", "add", "t", "--row", '{"s": 7, "d": "2024-05-02"}', "--json"))
    ok(cli("table", "update-rows", "t", "--where", "True", "--set", '{"s": 42}', "--json"))
    assert cli("table", "column", "transform", "t", "s", "--type", "str").exit_code == 0


def test_text_that_does_not_spell_its_value_exactly_is_refused(cli, vault: Vault) -> None:
    ok(cli("table", "create", "codes", "-c", "code:str", "-c", "n:float", "--json"))
    ok(cli("table", "add", "codes", "--row", '{"code": "+4930123"}', "--row", '{"code": "0042"}', "--json"))
    before = table_file(vault, "codes").read_bytes()
    refused = cli("table", "column", "transform", "codes", "code", "--type", "int")
    assert refused.exit_code == 6
    assert "row_id 1: '+4930123' (it would become '4930123')" in refused.stderr
    assert "row_id 2: '0042'" in refused.stderr and table_file(vault, "codes").read_bytes() == before
    # a JSON number a float column cannot hold exactly, float text Python reads loosely: refused
    assert (
        cli("table", "update-rows", "codes", "--where", "True", "--set", '{"n": 9007199254740993}').exit_code
        == 6
    )
    assert cli("table", "add", "codes", "--row", '{"n": "1_000"}').exit_code == 6
    assert cli("table", "add", "codes", "--row", '{"n": "infinity"}').exit_code == 6
    assert table_file(vault, "codes").read_bytes() == before


def test_derive_refuses_values_its_type_cannot_hold_unless_lossy(cli, vault: Vault) -> None:
    ok(cli("table", "create", "p", "-c", "price:float", "--json"))
    ok(cli("table", "add", "p", "--row", '{"price": 10.5}', "--row", '{"price": 4.0}', "--json"))
    before = table_file(vault, "p").read_bytes()
    refused = cli("table", "column", "derive", "p", "whole", "price", "--type", "int", "--json")
    assert refused.exit_code == 6 and json.loads(refused.stdout)["error"]["code"] == "values_not_kept"
    assert table_file(vault, "p").read_bytes() == before
    derived = ok(
        cli(
            "table",
            "column",
            "derive",
            "p",
            "whole",
            "price",
            "--type",
            "int",
            "--lossy",
            "drop",
            "--yes",
            "--json",
        )
    )
    assert derived["not_converted"]["count"] == 1 and derived["lossy"] == "drop"
    assert table_file(vault, "p").read_text().splitlines()[1:] == ["1,10.5,", "2,4.0,4"]


def test_a_model_transform_is_refused_whole_and_lossy_only_when_it_asks(cli, vault: Vault) -> None:
    ok(cli("table", "create", "items", "-c", "price:float", "--json"))
    ok(cli("table", "add", "items", "--row", '{"price": 149.0}', "--row", '{"price": 79.5}', "--json"))
    before = table_file(vault, "items").read_bytes()
    model = ScriptedModel()
    model.call(("ask", {"question": "prices?"}))
    model.answer("149.0 and 79.5")
    model.call(("transform_column", {"table": "items", "column": "price", "type": "int"}))
    model.call(("transform_column", {"table": "items", "column": "price", "type": "int", "lossy": "drop"}))
    model.answer("Prices are whole numbers now.")
    session = Session(Vault.open(vault.root), "demo", environ=ENV)
    run = TableAgent(session.tables, session.settings, connect=lambda s: model).change(
        "refactor", "int prices"
    )
    refused, dropped = model.tool_results()[-2:]
    assert "not transformed" in refused["error"] and "79.5" in refused["error"]
    assert dropped["not_converted"]["count"] == 1
    assert [op["applied"] for op in run.operations] == [False, True]
    assert run.not_applied == []  # the refused transform was made good by the lossy one
    assert table_file(vault, "items").read_text() == "row_id,price\n1,149\n2,\n"
    assert before != table_file(vault, "items").read_bytes()
    assert ok(cli("table", "undo", "--yes", "--json"))["run"] == run.run
    assert table_file(vault, "items").read_bytes() == before


def test_csv_import_guesses_a_type_only_when_it_gives_the_text_back(
    cli, vault: Vault, tmp_path: Path
) -> None:
    source = tmp_path / "contacts.csv"
    source.write_text(
        "phone,id,version,amount,price,flag,when\n"
        "+4930123,123456789012345678901234,1.10,1_000,12,true,10:00\n"
        "+4930124,2,1.2,2,9.5,false,11:30\n"
    )
    ok(cli("table", "create", "contacts", "--json"))
    ok(cli("table", "add", "contacts", "--file", str(source), "--json"))
    types = {c["name"]: c["type"] for c in ok(cli("table", "show", "contacts", "--json"))["columns"]}
    assert types == {
        "row_id": "int",
        "phone": "str",
        "id": "str",
        "version": "str",
        "amount": "str",
        "price": "float",  # 12 is the number twelve exactly (written 12.0), as in a column of prices
        "flag": "bool",
        "when": "str",  # a time is written 10:00:00: the text would change
    }
    lines = table_file(vault, "contacts").read_text().splitlines()
    assert lines[1] == "1,+4930123,123456789012345678901234,1.10,1_000,12.0,true,10:00"


def test_a_next_key_past_the_largest_is_refused_before_anything_is_written(cli, vault: Vault) -> None:
    ok(cli("table", "create", "log", "-c", "n:int", "--json"))
    ok(cli("table", "add", "log", "--row", '{"n": 1}', "--json"))
    schema_path = table_file(vault, "log", ".schema.json")
    schema = json.loads(schema_path.read_text())
    for next_key in (2**63, 2**64 + 5):
        schema["next_key"] = next_key  # a hand edit or a merge
        schema_path.write_text(json.dumps(schema))
        before = table_file(vault, "log").read_bytes(), schema_path.read_bytes()
        refused = cli("table", "add", "log", "--row", '{"n": 2}')
        assert refused.exit_code == 6 and "next_key" in refused.stderr
        assert (table_file(vault, "log").read_bytes(), schema_path.read_bytes()) == before
        assert ok(cli("table", "filter", "log", "--json"))["tables"][0]["total"] == 1
    schema["next_key"] = 2**63 - 1  # the last key is still there to give
    schema_path.write_text(json.dumps(schema))
    assert ok(cli("table", "add", "log", "--row", '{"n": 2}', "--json"))["keys"] == [2**63 - 1]
    assert cli("table", "add", "log", "--row", '{"n": 3}').exit_code == 6
    assert ok(cli("table", "filter", "log", "--json"))["tables"][0]["total"] == 2


@pytest.mark.process
def test_add_file_refuses_an_oversized_file_without_reading_it(
    aibuddy_exe: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    assert run_aibuddy(aibuddy_exe, "table", "create", "big", env=env).returncode == 0
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:
        handle.truncate(3 << 30)  # 3 GiB, sparse: nothing on disk; reading it whole needs 3 GiB of memory

    def small_memory() -> None:  # the child may use 1.5 GiB of address space: the file cannot fit
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    result = subprocess.run(
        [*aibuddy_exe, "table", "add", "big", "--file", str(huge), "--json"],
        env=env,
        capture_output=True,
        timeout=120,
        preexec_fn=small_memory,
    )
    assert result.returncode == 6, result.stderr
    assert json.loads(result.stdout)["error"]["message"].endswith("is larger than 256 MiB")


def test_column_delete_asks_and_journals_its_values(
    cli, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(cli("table", "create", "people", "-c", "name:str", "-c", "email:str", "--json"))
    rows = ("--row", '{"name": "Ada", "email": "ada@example.com"}', "--row", '{"name": "Alan"}')
    ok(cli("table", "add", "people", *rows, "--json"))
    before = table_file(vault, "people").read_bytes()
    refused = cli("table", "column", "delete", "people", "email")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert table_file(vault, "people").read_bytes() == before
    monkeypatch.setattr("aibuddy_cli.cli.context.stdin_is_terminal", lambda: True)  # a person asked
    declined = cli("table", "column", "delete", "people", "email", input="n\n")
    assert declined.exit_code == 1 and "Delete column email of people" in declined.stderr
    assert table_file(vault, "people").read_bytes() == before
    assert cli("table", "column", "delete", "people", "email", input="y\n").exit_code == 0
    last = journal(vault)[-1]
    assert last["op"] == "delete_column"
    assert last["changed"]["values"] == [{"key": 1, "value": "ada@example.com"}]
    assert last["changed"]["column_spec"] == {"name": "email", "type": "str", "description": ""}


def test_a_move_that_would_leave_values_behind_is_refused(cli, vault: Vault) -> None:
    ok(cli("table", "create", "a", "-c", "x:int", "--json"))
    ok(cli("table", "add", "a", "--row", '{"x": 1}', "--row", '{"x": 2}', "--json"))
    ok(cli("table", "create", "b", "-c", "y:int", "--json"))
    ok(cli("table", "add", "b", "--row", '{"y": 9}', "--json"))  # key 1 only
    before = table_file(vault, "a").read_bytes(), table_file(vault, "b").read_bytes()
    refused = cli("table", "column", "move", "a", "x", "b")
    assert refused.exit_code == 6 and "row_id 2: 2" in refused.stderr
    assert (table_file(vault, "a").read_bytes(), table_file(vault, "b").read_bytes()) == before
    ok(cli("table", "column", "copy", "a", "x", "b", "--json"))  # a copy leaves nothing behind
    ok(cli("table", "column", "delete", "b", "x", "--yes", "--json"))
    assert cli("table", "column", "move", "a", "x", "b", "--lossy", "drop").exit_code == 2  # it asks
    ok(cli("table", "column", "move", "a", "x", "b", "--lossy", "drop", "--yes", "--json"))
    assert table_file(vault, "b").read_text().splitlines() == ["row_id,y,x", "1,9,1"]
    assert journal(vault)[-1]["changed"]["values"] == [{"key": 1, "value": 1}, {"key": 2, "value": 2}]


def test_what_a_large_change_removes_is_kept_whole(cli, vault: Vault, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"n": n, "note": f"note {n}"}) + "\n" for n in range(1200)))
    ok(cli("table", "create", "many", "--json"))
    ok(cli("table", "add", "many", "--file", str(rows), "--json"))
    ok(cli("table", "column", "delete", "many", "note", "--yes", "--json"))
    values = journal(vault)[-1]["changed"]["values"]
    assert values["count"] == 1200 and len(values["first"]) == 1000
    kept = [json.loads(line) for line in (vault.root / values["kept"]).read_text().splitlines()]
    assert kept == [{"key": n + 1, "value": f"note {n}"} for n in range(1200)]
    ok(cli("table", "delete-rows", "many", "--where", "True", "--yes", "--json"))
    removed = journal(vault)[-1]["changed"]["rows"]
    kept = [json.loads(line) for line in (vault.root / removed["kept"]).read_text().splitlines()]
    assert kept == [{"row_id": n + 1, "n": n} for n in range(1200)]


def test_an_import_that_would_drop_values_it_was_given_is_refused(cli, vault: Vault, tmp_path: Path) -> None:
    ok(cli("table", "create", "t", "--json"))
    before = table_file(vault, "t").read_bytes()
    for name, content in (
        ("extra.csv", "a,b\n1,2\n3,4,5\n"),  # a field the header has no name for
        ("twice.csv", "a,a\n1,2\n"),  # a header naming a column twice
        ("twice.jsonl", '{"a": 1, "a": 2}\n'),  # an object naming a key twice
    ):
        source = tmp_path / name
        source.write_text(content)
        refused = cli("table", "add", "t", "--file", str(source))
        assert refused.exit_code == 6, (name, refused.stderr)
        assert table_file(vault, "t").read_bytes() == before
    assert (
        "line 3: 3 fields where the header has 2"
        in cli("table", "add", "t", "--file", str(tmp_path / "extra.csv")).stderr
    )
    assert cli("table", "add", "t", "--row", '{"a": 1, "a": 2}').exit_code == 6


# --- NaN and Infinity: refused on every way in, never printed -----------------------------------

NOT_JSON = [
    ('{"tags": ["ssd", NaN]}', "NaN is not a JSON number"),
    ('{"meta": {"x": Infinity}}', "Infinity is not a JSON number"),
    ('{"meta": {"x": -Infinity}}', "-Infinity is not a JSON number"),
    ('{"tags": [1e400]}', "1e400 is too large for a number"),
    ('{"price": 1e400}', "1e400 is too large for a number"),
    ('{"price": NaN}', "NaN is not a JSON number"),
]


@pytest.fixture
def gear(cli, vault: Vault) -> Path:
    columns = ["-c", "name:str", "-c", "price:float", "-c", "tags:list", "-c", "meta:dict"]
    ok(cli("table", "create", "gear", *columns, "--json"))
    row = '{"name": "NVMe SSD 2TB", "price": 99.5, "tags": ["ssd"], "meta": {}}'
    ok(cli("table", "add", "gear", "--row", row, "--json"))
    return table_file(vault, "gear")


@pytest.mark.parametrize(("row", "says"), NOT_JSON)
def test_nan_and_infinity_are_refused_by_add_update_and_file(
    cli, gear: Path, tmp_path: Path, row: str, says: str
) -> None:
    before = gear.read_bytes()
    added = cli("table", "add", "gear", "--row", row, "--json")
    assert added.exit_code == 6 and says in added.stderr
    assert strict_json(added.stdout)["error"]["code"] == "invalid_input"
    updated = cli("table", "update-rows", "gear", "--where", "True", "--set", row, "--json")
    assert updated.exit_code == 6 and says in updated.stderr
    lines = tmp_path / "rows.jsonl"
    lines.write_text(row + "\n")
    from_file = cli("table", "add", "gear", "--file", str(lines), "--json")
    assert from_file.exit_code == 6 and says in from_file.stderr
    assert gear.read_bytes() == before
    assert ok(cli("table", "filter", "gear", "--json"))["tables"][0]["rows"][0]["tags"] == ["ssd"]


@pytest.mark.parametrize("cell", ['"[""ssd"",NaN]"', '"[1e400]"', '"[Infinity]"'])
def test_a_hand_edited_cell_with_nan_is_reported_and_never_printed(
    cli, aibuddy_exe: list[str], env: dict[str, str], gear: Path, cell: str
) -> None:
    edited = gear.read_text(encoding="utf-8") + f"2,Cable,1.5,{cell},{{}}\n"
    gear.write_text(edited, encoding="utf-8")
    for argv in (["filter", "gear"], ["search", "cable"], ["reduce", "gear", "-m", "count", "-c", "name"]):
        found = run_in_process("table", *argv, "--json", env=env)  # the fast path too
        assert found.returncode == 6, (argv, found.stderr)
        assert b"gear.csv line 3, column tags" in found.stderr
        assert strict_json(found.stdout.decode())["error"]["code"] == "malformed_table"
    assert gear.read_text(encoding="utf-8") == edited


def test_an_expression_that_overflows_to_infinity_is_refused(cli, gear: Path) -> None:
    before = gear.read_bytes()
    for argv in (
        ["derive", "gear", "huge", "price * 1e308 * 10"],
        ["derive", "gear", "huge", "price * 1e308 * 10", "--type", "str"],
        ["transform", "gear", "price", "--expression", "price * 1e308 * 10"],
    ):
        refused = cli("table", "column", *argv, "--json")
        assert refused.exit_code == 6, (argv, refused.stdout)
        assert strict_json(refused.stdout)["error"]["code"] == "values_not_kept"
        assert "inf is not a finite number" in refused.stderr
    assert gear.read_bytes() == before
    lossy = ["--lossy", "drop", "--yes", "--json"]
    dropped = ok(cli("table", "column", "derive", "gear", "huge", "price * 1e308 * 10", *lossy))
    assert dropped["not_converted"]["count"] == 1
    assert "inf" not in gear.read_text(encoding="utf-8")


@pytest.mark.parametrize("metric", ["sum", "mean", "var", "std"])
def test_a_metric_beyond_the_range_of_a_float_is_an_error_not_infinity(
    aibuddy_exe: list[str], env: dict[str, str], cli, gear: Path, metric: str
) -> None:
    rows = ["--row", '{"price": 1.7e308}', "--row", '{"price": 1.7e308}']
    ok(cli("table", "add", "gear", *rows, "--json"))
    reduce = ["table", "reduce", "gear", "-m", metric, "-c", "price", "--json"]
    found = run_in_process(*reduce, env=env)
    assert found.returncode == 6, found.stderr
    assert f"{metric}(price) is beyond the range of a floating-point number" in found.stderr.decode()
    assert strict_json(found.stdout.decode())["error"]["code"] == "invalid_input"


def test_a_model_tool_call_with_nan_is_a_tool_error_and_writes_nothing(gear: Path, vault: Vault) -> None:
    before = gear.read_bytes()
    model = ScriptedModel()
    model.call(("ask", {"question": "What gear is there?"}))
    model.answer("An SSD (row 1).")
    model.call(
        ("add_rows", '{"table": "gear", "rows": [{"name": "Cable", "tags": [NaN]}]}'),
        ("update_rows", '{"table": "gear", "filter": "True", "values": {"price": Infinity}}'),
        ("add_rows", {"table": "gear", "rows": [{"name": "Hub", "meta": {"x": float("inf")}}]}),
    )
    model.answer("Done.")
    session = Session(Vault.open(vault.root), "demo", environ=ENV)
    run = TableAgent(session.tables, session.settings, connect=lambda settings: model).change("update", "x")
    _, nan, infinity, dumped = model.tool_results()  # after ask's answer
    assert "NaN is not a JSON number" in nan["error"] and "Infinity is not a JSON number" in infinity["error"]
    assert "Infinity is not a JSON number" in dumped["error"]  # json.dumps wrote it, the parse refuses it
    assert not any(op["applied"] for op in run.operations) and gear.read_bytes() == before
    assert [op["tool"] for op in run.not_applied] == ["add_rows", "update_rows", "add_rows"]


def test_json_output_never_holds_nan_and_says_so_instead(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from aibuddy_cli.cli.output import emit_json
    from aibuddy_cli.errors import InvalidInput

    out = io.StringIO()
    for value in (float("nan"), float("inf"), [1.0, -float("inf")]):
        with pytest.raises(InvalidInput, match="NaN or Infinity"):
            emit_json({"value": value}, out)
    assert out.getvalue() == ""  # nothing half written
    emit_json({"text": "\ud800"}, out)  # a lone surrogate (from argv bytes) as its JSON escape
    assert strict_json(out.getvalue()) == {"text": "\ud800"} and out.getvalue() == '{"text": "\\ud800"}\n'


def test_an_embedding_with_nan_falls_back_to_lexical_search(
    cli, gear: Path, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aibuddy_cli.models.calls

    monkeypatch.setattr(aibuddy_cli.models.calls, "embed", lambda settings, texts: [[1.0, 0.0]] * len(texts))
    environ = {"AIBUDDY_MODEL_EMBEDDING": "openai/embed-test", "AIBUDDY_TIMEOUT": "30"}
    session = Session(Vault.open(vault.root), "demo", environ=environ)
    session.tables.changes.vectorize_column("gear", "name")
    nan = [float("nan"), 1.0]
    monkeypatch.setattr(aibuddy_cli.models.calls, "embed", lambda settings, texts: [nan] * len(texts))
    found = session.tables.queries.search("solid state drive")
    assert found.method == "lexical"
    assert any("NaN or Infinity" in warning for warning in session.take_warnings())
