"""The tables journal (.aibuddy/logs/tables.jsonl) says what happened: each line holds what the
change was asked to do (`args`: the filter, the values set, the rows added, the column and its
type or expression, the new name) and what it did (`changed`: the keys and counts), bounded in
size, with credential-shaped values redacted; `table undo` still finds its runs by it."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from helpers import ok, run_aibuddy, unwritable_logs
from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import DiskFull, as_aibuddy_error
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.store.files import Entry, FileStore
from aibuddy_cli.vault import Vault

ENV = {"AIBUDDY_MODEL_TABLES": "openai/tables-test", "AIBUDDY_TIMEOUT": "30"}
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def journal(vault: Vault) -> list[dict]:
    lines = (vault.root / ".aibuddy/logs/tables.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_each_change_journals_what_it_was_asked_and_what_it_did(cli, vault: Vault) -> None:
    ok(cli("table", "create", "people", "-d", "People", "-c", "name:str", "-c", "city:str", "--json"))
    rows = [{"name": "Ada", "city": "London"}, {"name": "Alan", "city": "London", "age": 41}]
    ok(cli("table", "add", "people", *[a for r in rows for a in ("--row", json.dumps(r))], "--json"))
    where = 'city == "London" and name != "Alan"'
    ok(cli("table", "update-rows", "people", "--where", where, "--set", '{"city": "Paris"}', "--json"))
    ok(cli("table", "column", "add", "people", "email", "str", "-d", "work address", "--json"))
    ok(cli("table", "column", "derive", "people", "decade", "age // 10", "--json"))
    ok(cli("table", "column", "rename", "people", "decade", "age_decade", "--json"))
    ok(cli("table", "column", "transform", "people", "age", "--type", "float", "--json"))
    ok(cli("table", "column", "delete", "people", "email", "--yes", "--json"))
    ok(cli("table", "delete-rows", "people", "--where", "age > 40", "--yes", "--json"))
    ok(cli("table", "rename", "people", "contacts", "--json"))
    ok(cli("table", "delete", "contacts", "--yes", "--json"))
    lines = journal(vault)
    assert [(line["op"], line["args"]) for line in lines] == [
        (
            "create_table",
            {
                "name": "people",
                "description": "People",
                "key": "row_id",
                "columns": [
                    {"name": "name", "type": "str", "description": ""},
                    {"name": "city", "type": "str", "description": ""},
                ],
            },
        ),
        ("add_rows", {"rows": rows}),
        ("update_rows", {"where": where, "set": {"city": "Paris"}}),
        ("create_empty_column", {"column": "email", "type": "str", "description": "work address"}),
        ("create_derived_column", {"column": "decade", "expression": "age // 10"}),
        ("rename_column", {"column": "decade", "new": "age_decade"}),
        ("transform_column", {"column": "age", "type": "float"}),
        ("delete_column", {"column": "email"}),
        ("delete_rows", {"where": "age > 40"}),
        ("rename_table", {"new": "contacts"}),
        ("delete_table", {"tables": ["contacts"]}),
    ]
    done = {line["op"]: line["changed"] for line in lines}
    assert done["add_rows"]["keys"] == [1, 2] and done["add_rows"]["added"] == 2
    assert done["update_rows"]["keys"] == [1] and done["update_rows"]["updated"] == 1
    assert done["delete_rows"]["keys"] == [2] and done["delete_rows"]["deleted"] == 1
    assert all(line["user"] == "demo" and line["source"] == "cli" for line in lines)


def test_a_journal_line_is_bounded(cli, vault: Vault) -> None:
    """At most 20 items of a list and 200 characters of a text; the rest is counted."""
    ok(cli("table", "create", "notes", "-c", "text:str", "--json"))
    long = "x" * 1000
    rows = [{"text": f"note {n}"} for n in range(30)] + [{"text": long}]
    source = vault.root.parent / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ok(cli("table", "add", "notes", "--file", str(source), "--json"))
    ok(cli("table", "update-rows", "notes", "--where", "True", "--set", json.dumps({"text": long}), "--json"))
    added, updated = journal(vault)[1:]
    assert added["args"]["rows"][:20] == rows[:20]
    assert added["args"]["rows"][20:] == ["…and 11 more"]
    assert updated["args"]["set"] == {"text": "x" * 200 + "…and 800 more characters"}
    assert updated["changed"]["updated"] == 30 and updated["changed"]["keys"] == list(range(1, 31))
    lines = (vault.root / ".aibuddy/logs/tables.jsonl").read_bytes().splitlines()
    assert len(lines[1]) < 10_000  # the args of 31 rows, one of 1000 characters


def test_journaled_arguments_hold_no_credential(cli, vault: Vault) -> None:
    """A person's explicit value is kept in the table (with a warning); the journal's copy of what
    the change was asked is a log aibuddy writes by itself: redacted."""
    ok(cli("table", "create", "servers", "-c", "name:str", "-c", "login:str", "--json"))
    added = cli(
        "table", "add", "servers", "--row", json.dumps({"name": "db", "login": f"key {KEY}"}), "--json"
    )
    assert added.exit_code == 0 and "kept because you wrote it explicitly" in added.stderr
    where = f'login == "key {KEY}"'
    ok(cli("table", "update-rows", "servers", "--where", where, "--set", '{"name": "db1"}', "--json"))
    rows = ok(cli("table", "filter", "servers", "--json"))["tables"][0]["rows"]
    assert rows[0]["login"] == f"key {KEY}"  # the table keeps it
    add, update = journal(vault)[1:]
    assert add["args"]["rows"] == [{"name": "db", "login": "key [redacted: api key]"}]
    assert update["args"]["where"] == 'login == "key [redacted: api key]"'
    assert KEY not in json.dumps(add["args"]) + json.dumps(update["args"])


@pytest.mark.process
def test_a_model_run_journals_its_arguments_redacted_and_stays_undoable(
    aibuddy_exe: list[str], cli, vault: Vault, env: dict[str, str]
) -> None:
    ok(cli("table", "create", "vendors", "-c", "name:str", "-c", "note:str", "--json"))
    model = ScriptedModel()
    model.call(("ask", {"question": "What vendors are there?"}))
    model.answer("None yet.")
    model.call(("add_rows", {"table": "vendors", "rows": [{"name": "Acme", "note": "plain"}]}))
    model.call(
        (
            "update_rows",
            {"table": "vendors", "filter": 'name == "Acme"', "values": {"note": f"api key {KEY}"}},
        )
    )
    model.answer("Added Acme.")
    session = Session(Vault.open(vault.root), "demo", environ=ENV)
    run = TableAgent(session.tables, session.settings, connect=lambda settings: model).change(
        "update", "Add Acme"
    )
    lines = [line for line in journal(vault) if line["run"] == run.run]
    assert [line["op"] for line in lines] == ["start_run", "add_rows", "update_rows"]
    assert lines[1]["args"] == {"rows": [{"name": "Acme", "note": "plain"}]}
    assert lines[2]["args"] == {"where": 'name == "Acme"', "set": {"note": "api key [redacted: api key]"}}
    assert lines[2]["changed"]["keys"] == [1] and lines[2]["changed"]["before"] == [
        {"key": 1, "values": {"note": "plain"}}
    ]
    undone = run_aibuddy(aibuddy_exe, "table", "undo", "--yes", "--json", env=env)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["run"] == run.run
    assert journal(vault)[-1]["op"] == "undo" and journal(vault)[-1]["args"] == {"run": run.run}
    assert ok(cli("table", "filter", "vendors", "--json"))["tables"][0]["rows"] == []


def test_the_journal_of_a_column_copy_names_its_target(cli, vault: Vault, tmp_path: Path) -> None:
    ok(cli("table", "create", "a", "-c", "n:int", "--json"))
    ok(cli("table", "create", "b", "-c", "m:int", "--json"))
    ok(cli("table", "add", "a", "--row", '{"n": 1}', "--json"))
    ok(cli("table", "add", "b", "--row", '{"m": 2}', "--json"))
    ok(cli("table", "column", "move", "a", "n", "b", "--json"))
    copy, delete = journal(vault)[-2:]
    assert copy["op"] == "copy_column" and copy["args"] == {"column": "n", "to_table": "b", "move": True}
    assert delete["op"] == "delete_column" and delete["args"] == {"column": "n"}


# --- the journal first: a change that cannot be journaled is not made -------------------------


def tables_files(vault: Vault) -> dict[str, bytes]:
    root = vault.root / "tables"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_change_that_cannot_be_journaled_leaves_the_tables_as_they_were(cli, vault: Vault) -> None:
    """A table change journals first: with `.aibuddy/logs` unwritable, each write command (rows,
    columns, renames, deletions, many rows whose values go to a file of their own) fails with a
    message that says nothing changed, and the tables' files are byte for byte as they were."""
    ok(cli("table", "create", "people", "-c", "name:str", "-c", "age:int", "--json"))
    ok(cli("table", "create", "cities", "-c", "city:str", "--json"))
    many = vault.root.parent / "many.jsonl"
    rows = [{"name": f"p{n}", "age": n} for n in range(1200)]  # more than a journal line holds
    many.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ok(cli("table", "add", "people", "--file", str(many), "--json"))
    ok(cli("table", "add", "cities", "--row", '{"city": "Oslo"}', "--json"))
    before = tables_files(vault)
    unwritable_logs(vault)
    commands = [
        ("table", "create", "pets", "-c", "name:str"),
        ("table", "add", "people", "--row", '{"name": "Ada", "age": 36}'),
        ("table", "update-rows", "people", "--where", "age < 10", "--set", '{"age": 99}'),
        ("table", "update-rows", "people", "--where", "True", "--set", '{"name": "x"}'),  # 1,200 before
        ("table", "delete-rows", "people", "--where", "age > 5", "--yes"),
        ("table", "rename", "people", "persons"),
        ("table", "delete", "cities", "--yes"),
        ("table", "column", "add", "people", "email", "str"),
        ("table", "column", "derive", "people", "decade", "age // 10"),
        ("table", "column", "rename", "people", "age", "years"),
        ("table", "column", "transform", "people", "age", "--type", "float"),
        ("table", "column", "delete", "people", "age", "--yes"),
        ("table", "column", "copy", "people", "name", "cities"),
        ("table", "column", "move", "people", "name", "cities", "--lossy", "drop", "--yes"),
    ]
    for command in commands:
        result = cli(*command, "--json")
        assert result.exit_code == 1, (command, result.stdout, result.stderr)
        error = json.loads(result.stdout)["error"]
        assert error["message"].startswith("nothing changed: the table journal cannot be written"), command
        assert ".aibuddy/logs" in error["message"], command
        assert tables_files(vault) == before, command
    assert (vault.root / ".aibuddy/logs").read_text(encoding="utf-8") == "not a folder\n"


FAILING = {
    "add_rows": lambda changes: changes.add_rows("people", [{"name": "Bob", "email": "b@x.org"}]),
    "update_rows": lambda changes: changes.update_rows("people", "True", {"name": "Bo"}),
    "delete_rows": lambda changes: changes.delete_rows("people", "True"),
    "create_empty_column": lambda changes: changes.add_column("people", "email", "str"),
    "create_derived_column": lambda changes: changes.derive_column("people", "n", "len(name)"),
    "create_table": lambda changes: changes.create("pets"),
}


@pytest.mark.parametrize("op", list(FAILING))
def test_a_change_that_fails_after_its_journal_line_is_journaled_as_failed_and_changes_nothing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    """The journal says what happened: a write that fails after its line (here the disk fills
    as the rows are written) is followed by a "failed" line naming it; the schema written just
    before is put back, so the table is as it was; and the error reaches the caller (a full disk)."""
    session = Session(Vault.open(vault.root), "demo", environ={})
    session.tables.changes.create("people")
    session.tables.changes.add_rows("people", [{"name": "Ada"}])
    before = tables_files(vault)
    real_write = FileStore.write

    def full_disk(self: FileStore, key: str, data: bytes, *, create: bool = False) -> Entry:
        if key.endswith(".csv"):
            raise OSError(errno.ENOSPC, "No space left on device", key)
        return real_write(self, key, data, create=create)

    monkeypatch.setattr(FileStore, "write", full_disk)
    with pytest.raises(OSError) as raised:
        FAILING[op](session.tables.changes)
    assert isinstance(as_aibuddy_error(raised.value), DiskFull)
    assert tables_files(vault) == before
    made, failed = journal(vault)[-2:]
    assert made["op"] == op
    assert failed["op"] == "failed" and failed["table"] == made["table"]
    assert failed["args"] == {"op": op, "at": made["at"]}
    assert "the disk is full" in failed["changed"]["error"]
