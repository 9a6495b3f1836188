"""Steerable table runs, `table undo` and `table update --file` at their edges: another person's
edit during or after a run is never lost to an undo, a snapshot reads only its own run's files,
NaN arguments and lone surrogates never end a run or lose its answer, text that only looks like
CSV stays text, the kept conversation stays bounded (each case a bug a review found)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import ok
from scripted_model import ScriptedModel
from table_loop_support import ENV, agent

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Conflict
from aibuddy_cli.jsonvalues import loads, to_json
from aibuddy_cli.tables.undo import undo_last
from aibuddy_cli.vault import Vault

VENDORS = "tables/personal/demo/vendors.csv"


@pytest.fixture
def model_server(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    return fake_openai


def fresh_state(vault: Vault, user: str = "demo") -> Any:
    return Session(Vault.open(vault.root), user, environ={}).tables.state


# --- undo ---------------------------------------------------------------------------------------


class PersonEditsWhileTheModelThinks(ScriptedModel):
    """On its third turn (after the run applied its change), a person adds a row to the same
    table through the command line's service, as another terminal would; then the model answers."""

    def __init__(self, vault: Vault) -> None:
        super().__init__()
        self.vault = vault

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        if len(self.seen) == 3:
            person = Session(Vault.open(self.vault.root), "demo", environ={}).tables
            person.changes.add_rows("vendors", [{"name": "Hooli", "city": "Oslo", "rating": 3}])
        return super().__call__(messages, tools)


def test_undo_never_loses_an_edit_a_person_made_while_the_run_was_going_on(stocked: Vault) -> None:
    model = PersonEditsWhileTheModelThinks(stocked)
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme, Globex, Initech")
    model.call(("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 1}}))
    model.answer("Acme is rated 1.")
    run = agent(stocked, model).change("update", "Acme is rated 1")
    assert run.applied == 1
    path = stocked.root / VENDORS
    assert "Hooli" in path.read_text()  # the person's row, added after the run's last change
    # The file is no longer as the run left it: README promises exit 4, "a later edit is never lost".
    try:
        undo_last(fresh_state(stocked), run.run)
    except Conflict:
        pass
    assert "Hooli" in path.read_text(), "the undo threw away the row a person added during the run"


def test_an_undo_snapshot_cannot_copy_another_users_file_into_a_table(cli, stocked: Vault) -> None:
    """A snapshot is a file anyone can edit: besides the files it restores, the files its bytes are
    read from must be the run's own (a planted one put bob's private table into demo's)."""
    secret = stocked.root / "tables/personal/bob/salaries.csv"
    secret.parent.mkdir(parents=True)
    secret.write_text("row_id,name,salary\n1,Bob,123456\n")
    import hashlib

    current = (stocked.root / VENDORS).read_bytes()
    run = "2020-01-01T00:00:00Z-abc000"
    line = {"at": "2020-01-01T00:00:00Z", "user": "demo", "source": "update", "run": run, "op": "start_run",
            "table": "", "args": {}, "changed": {}}  # fmt: skip
    with (stocked.root / ".aibuddy/logs/tables.jsonl").open("a") as journal:
        journal.write(json.dumps(line) + "\n")
    snapshot = stocked.root / f".aibuddy/undo/{run}.json"
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(current).hexdigest()
    snapshot.write_text(
        json.dumps(
            {"run": run, "kept": {VENDORS: "tables/personal/bob/salaries.csv"}, "after": {VENDORS: digest}}
        )
    )
    result = cli("table", "undo", "--yes", "--json")
    assert "123456" not in (stocked.root / VENDORS).read_text(), "bob's private table was copied into demo's"
    assert result.exit_code == 6, result.stderr


# --- steps as they happen -------------------------------------------------------------------------


@pytest.mark.process
def test_a_tool_call_with_nan_arguments_is_a_tool_error_not_the_end_of_a_json_run(
    cli, stocked: Vault, model_server: FakeOpenAI
) -> None:
    """A NaN argument goes back to the model as a tool error and the run goes on; its progress line
    stays strict JSON (it was parsed leniently and then refused by the JSON-lines writer)."""
    model_server.call_tools(("ask", {"question": "vendors?"}))
    model_server.enqueue(content="Acme, Globex, Initech")
    model_server.call_tools(("delete_rows", {"table": "vendors", "filter": float("nan")}))
    model_server.enqueue(content="Nothing changed.")
    result = cli("table", "update", "Drop nothing", "--json")
    assert result.exit_code == 8, result.stderr[-2000:]  # the refused delete_rows was never made good
    run = json.loads(result.stdout)
    assert run["summary"] == "Nothing changed."
    assert [o["tool"] for o in run["not_applied"]] == ["delete_rows"]
    for line in result.stderr.splitlines():  # every progress line is strict JSON
        if not line.startswith("warning: "):  # (the warning that delete_rows was not applied)
            assert loads(line), line


def test_a_nan_argument_does_not_break_the_progress_of_a_run_in_process(
    stocked: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aibuddy_cli.cli import table_output

    err = io.StringIO()
    monkeypatch.setattr(table_output.sys, "stderr", err)
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme, Globex, Initech")
    model.call(("delete_rows", '{"table": "vendors", "filter": NaN}'))
    model.answer("Nothing changed.")
    run = agent(stocked, model).change("update", "Drop nothing", **table_output._steps(True))
    assert run.summary == "Nothing changed."
    tool = [json.loads(line) for line in err.getvalue().splitlines() if '"delete_rows"' in line][-1]
    assert tool["ok"] is False


# --- documents ---------------------------------------------------------------------------------------


@pytest.mark.process
def test_a_plain_text_document_from_stdin_is_not_refused_as_bad_csv(
    cli, stocked: Vault, model_server: FakeOpenAI
) -> None:
    """Text with a quoted word at the start of its lines only looks like CSV: it is read as text
    (CSV is recognised as strictly as it is then parsed)."""
    text = '"Hooli" is a new vendor, based in Oslo.\n"Umbrella" is another, based in Raccoon City.\n'
    model_server.call_tools(("ask", {"question": "?"}))
    model_server.enqueue(content="-")
    model_server.enqueue(content="Added them.")
    result = cli("table", "update", "Add these vendors", "--file", "-", "--json", input=text)
    assert result.exit_code == 0, result.stderr


# --- the kept conversation ---------------------------------------------------------------------------


def test_the_kept_conversation_is_at_most_600000_characters_with_many_short_calls() -> None:
    """The kept conversation holds at most 600,000 characters, also when it is many short tool calls
    (100 steps of a few add_rows calls each, as a large document's rows need)."""
    from aibuddy_cli.tables.runs import CONVERSATION_CHARS, bounded, settled

    rows = json.dumps({"table": "vendors", "rows": [{"name": "x" * 1800}]})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "prompt"},
        {"role": "user", "content": "add the rows"},
    ]
    for step in range(100):
        calls = [
            {"id": f"c{step}_{i}", "type": "function", "function": {"name": "add_rows", "arguments": rows}}
            for i in range(4)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": '{"added": 1}'} for c in calls]
    kept = bounded(settled(messages), budget_chars=200_000)
    total = sum(len(json.dumps(m, ensure_ascii=False)) for m in kept)
    assert total <= CONVERSATION_CHARS, f"{total:,} characters kept"


@pytest.mark.process
def test_a_json_document_with_a_lone_surrogate_escape_is_refused_before_the_run(
    cli, stocked: Vault, model_server: FakeOpenAI, tmp_path: Any
) -> None:
    """'\\ud800' in a JSON document parses to a lone surrogate, which no UTF-8 text holds: the
    document is refused with one line naming it, before the run starts (it used to fail mid-run)."""
    doc = tmp_path / "v.json"
    doc.write_text('[{"name": "Hooli \\ud800"}]')
    model_server.call_tools(("ask", {"question": "?"}))
    model_server.enqueue(content="-")
    model_server.enqueue(content="Nothing added.")
    result = cli("table", "update", "Add these vendors", "--file", str(doc), "--json")
    assert result.exit_code == 6, result.stderr
    started = [line for line in result.stderr.splitlines() if line.startswith('{"event": "run"')]
    assert not started, "the run started with a document that cannot be encoded"
    assert "v.json" in result.stdout + result.stderr, result.stdout


def test_a_model_reply_with_a_lone_surrogate_does_not_lose_the_runs_answer_and_conversation(
    stocked: Vault,
) -> None:
    """A model's text is JSON from its API, where '\\ud800' decodes to a lone surrogate: the run's
    answer (run id, operations applied) and its kept conversation survive it."""
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme, Globex, Initech")
    model.call(("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 1}}))
    model.answer("Acme is rated 1 \ud800")
    try:
        run = agent(stocked, model).change("update", "Acme is rated 1")
    except UnicodeEncodeError as crash:
        assert "1,Acme,Berlin,1" in (stocked.root / VENDORS).read_text()  # applied all the same
        pytest.fail(f"the run's answer was lost after it applied a change: {crash}")
    assert (stocked.root / f".aibuddy/undo/{run.run}/conversation.json").exists()


@pytest.mark.process
def test_a_lone_surrogate_in_the_models_reply_on_the_command_line(
    cli, stocked: Vault, model_server: FakeOpenAI
) -> None:
    """The same through litellm and the fake server: the command gives the run's answer."""
    model_server.call_tools(("ask", {"question": "vendors?"}))
    model_server.enqueue(content="Acme, Globex, Initech")
    model_server.call_tools(
        ("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 1}})
    )
    model_server.enqueue(content="Acme is rated 1 \ud800")
    result = cli("table", "update", "Acme is rated 1", "--json")
    assert "1,Acme,Berlin,1" in (stocked.root / VENDORS).read_text()
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["operations"][0]["applied"] is True


def test_undo_never_loses_a_later_edit_that_happens_to_equal_a_state_inside_the_run(
    cli, stocked: Vault
) -> None:
    """A finished run set Acme's rating to 1, then to 2; later a person sets it to 1 again, the bytes
    of the run's in-between state. Undo accepts that state only for a run killed between noting a
    change and making it, so here it refuses (exit 4) instead of losing the person's edit."""
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme, Globex, Initech")
    model.call(("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 1}}))
    model.call(("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 2}}))
    model.answer("Acme is rated 2.")
    run = agent(stocked, model).change("update", "Acme is rated 2")
    assert run.applied == 2
    where = ("--where", 'name == "Acme"')
    ok(cli("table", "update-rows", "vendors", *where, "--set", '{"rating": 1}', "--json"))
    path = stocked.root / VENDORS
    assert "1,Acme,Berlin,1" in path.read_text()  # the person's edit
    undone = cli("table", "undo", run.run, "--yes", "--json")
    assert "1,Acme,Berlin,1" in path.read_text(), "the person's later edit was lost to the undo"
    assert undone.exit_code == 4


def test_a_journal_line_naming_no_run_id_does_not_block_undo(cli: Any, stocked: Vault) -> None:
    """`table undo` with no RUN takes the last run from the journal, a file anyone can edit: a
    line whose run is no run id is passed over, not used in a path (exit 6 blocked every undo)."""
    journal = stocked.root / ".aibuddy/logs/tables.jsonl"
    with journal.open("a", encoding="utf-8") as out:
        line = {"user": "demo", "source": "update", "run": "not/a-run", "op": "add_rows"}
        out.write(json.dumps(line) + "\n")
    result = cli("table", "undo", "--yes", "--json")
    assert result.exit_code == 3, result.stdout  # nothing to undo, said as such
    assert "nothing to undo" in json.loads(result.stdout)["error"]["message"]


# --- what a run reports is what it applied --------------------------------------------------------


@pytest.mark.process
def test_an_answer_claiming_rows_a_refused_call_never_added_exits_8_and_says_so(
    cli, stocked: Vault, model_server: FakeOpenAI, tmp_path: Any
) -> None:
    """The model adds the document's rows to a table that does not exist, reads "no table
    'people'", and answers "Added 2 people.": the command still prints the answer, and lists the
    refused call, warns on stderr and exits 8 (never 0, which a script would believe); the JSON
    (the MCP tool's answer too) lists it under `not_applied`."""
    people = tmp_path / "people.csv"
    people.write_text("name,city\nAda,London\nAlan,Wilmslow\n", encoding="utf-8")
    before = (stocked.root / VENDORS).read_bytes()
    rows = [{"name": "Ada", "city": "London"}, {"name": "Alan", "city": "Wilmslow"}]
    for _ in range(2):
        model_server.call_tools(("ask", {"question": "Which tables are there?"}))
        model_server.enqueue(content="vendors")
        model_server.call_tools(("add_rows", {"table": "people", "rows": rows}))
        model_server.enqueue(content="Added 2 people.")
    result = cli("table", "update", "Add these people", "--file", str(people), "--json")
    assert result.exit_code == 8, result.stderr[-2000:]
    run = json.loads(result.stdout)
    assert run["summary"] == "Added 2 people."
    refused = {"tool": "add_rows", "arguments": {"table": "people", "rows": rows}, "applied": False}
    assert run["operations"] == [{**refused, "error": "no table 'people'"}]
    assert run["not_applied"] == run["operations"]
    assert "1 change(s) the model called were refused and not applied" in result.stderr
    assert "add_rows people: no table 'people'" in result.stderr
    text = cli("table", "update", "Add these people", "--file", str(people))
    assert text.exit_code == 8
    assert text.stdout.startswith("Added 2 people.\n")
    assert "refused\tadd_rows\t" in text.stdout and "no table 'people'" in text.stdout
    assert "not applied: 1 change(s) the model called were refused" in text.stdout
    assert (stocked.root / VENDORS).read_bytes() == before
    assert not (stocked.root / "tables/personal/demo/people.csv").exists()


def test_a_refused_call_the_model_made_good_later_leaves_the_run_a_success(stocked: Vault) -> None:
    """The model reads "no table", creates it and adds the rows again: the refused call is listed
    with its error, and nothing is left not applied."""
    model = ScriptedModel()
    model.call(("ask", {"question": "tables?"}))
    model.answer("vendors")
    model.call(("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}))
    model.call(("create_table", {"name": "people", "columns": {"name": "str"}}))
    model.call(("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}))
    model.answer("Added Ada.")
    run = agent(stocked, model).change("update", "Ada is a person")
    assert [(o["tool"], o["applied"], o.get("error")) for o in run.operations] == [
        ("add_rows", False, "no table 'people'"),
        ("create_table", True, None),
        ("add_rows", True, None),
    ]
    assert run.not_applied == [] and to_json(run)["not_applied"] == []


def test_one_later_call_makes_good_one_refused_call_not_every_one_before_it(stocked: Vault) -> None:
    """Two batches of rows refused ("no table"), the table made, one batch added again, "Added 2
    people.": the other batch was never added, so the run is not a success (it exited 0)."""
    model = ScriptedModel()
    model.call(("ask", {"question": "tables?"}))
    model.answer("vendors")
    model.call(
        ("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}),
        ("add_rows", {"table": "people", "rows": [{"name": "Alan"}]}),
    )
    model.call(("create_table", {"name": "people", "columns": {"name": "str"}}))
    model.call(("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}))
    model.answer("Added 2 people.")
    run = agent(stocked, model).change("update", "Ada and Alan are people")
    assert [o["arguments"]["rows"] for o in run.not_applied] == [[{"name": "Alan"}]]


def test_a_refused_call_repeated_as_it_was_is_made_good_by_one_call(stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(("ask", {"question": "tables?"}))
    model.answer("vendors")
    for _ in range(2):
        model.call(("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}))
    model.call(("create_table", {"name": "people", "columns": {"name": "str"}}))
    model.call(("add_rows", {"table": "people", "rows": [{"name": "Ada"}]}))
    model.answer("Added Ada.")
    assert agent(stocked, model).change("update", "Ada is a person").not_applied == []


def test_a_run_whose_journal_cannot_be_written_changes_nothing_and_says_so(stocked: Vault) -> None:
    """Each change of the run is refused before it is made ("nothing changed: the table journal
    cannot be written"), which the model reads; the tables are as they were, and the run's
    answer comes with the changes it did not apply."""
    from helpers import unwritable_logs

    before = (stocked.root / VENDORS).read_bytes()
    unwritable_logs(stocked)
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme, Globex, Initech")
    model.call(("delete_rows", {"table": "vendors", "filter": 'name == "Globex"'}))
    model.answer("Dropped Globex.")
    tables = agent(stocked, model)
    run = tables.change("update", "Globex is gone")
    assert (stocked.root / VENDORS).read_bytes() == before
    (refused,) = run.not_applied
    assert refused["tool"] == "delete_rows"
    assert refused["error"].startswith("nothing changed: the table journal cannot be written")
    assert any("refused and not applied" in warning for warning in tables.warnings)
