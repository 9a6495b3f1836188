"""table ask / update / refactor: isolated model tool loops over the table tools. The read-only
guard, the required first ask, dry runs, the journal, bounds and fallbacks; scripted in-process,
and end to end through litellm and the local fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import ok
from scripted_model import ScriptedModel
from table_loop_support import ENV, agent

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import ModelUnavailable, NotAllowed
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.vault import Vault


def rows_file(vault: Vault) -> Path:
    return vault.root / "tables/personal/demo/vendors.csv"


def test_ask_answers_through_read_only_tools(stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(("tables_overview", {}))
    model.call(("filter", {"tables": ["vendors"], "filter": 'city == "Berlin"', "columns": ["name"]}))
    model.answer("Acme and Initech are in Berlin (vendors rows 1 and 3).")
    answer = agent(stocked, model).ask("Which vendors are in Berlin?")
    assert answer.method == "model" and "Initech" in answer.answer
    overview, found = model.tool_results()
    assert overview["tables"][0]["table"] == "vendors" and overview["tables"][0]["rows"] == 3
    assert [r["name"] for r in found["tables"][0]["rows"]] == ["Acme", "Initech"]


def test_ask_can_never_change_a_table_even_when_the_model_calls_a_mutating_tool(stocked: Vault) -> None:
    before = rows_file(stocked).read_bytes()
    model = ScriptedModel()
    model.call(
        ("delete_rows", {"table": "vendors", "filter": "True"}),
        ("add_rows", {"table": "vendors", "rows": [{"name": "Evil"}]}),
        ("delete_tables", {"tables": ["vendors"]}),
    )
    model.answer("done")
    agent(stocked, model).ask("Delete everything")
    results = model.tool_results()
    assert all("unknown tool" in r["error"] for r in results)
    assert rows_file(stocked).read_bytes() == before
    assert not (stocked.root / ".aibuddy/logs/tables.jsonl").read_text().count('"delete_rows"')


def test_the_read_only_handle_refuses_writes(stocked: Vault) -> None:
    session = Session(Vault.open(stocked.root), "demo", environ={})
    queries = session.tables.read_only()
    assert queries.filter(["vendors"]).tables[0].total == 3
    with pytest.raises(NotAllowed):
        queries.state.store.write("tables/personal/demo/vendors.csv", b"x")


def test_without_a_model_ask_answers_with_matching_rows(cli, stocked: Vault) -> None:
    answer = ok(cli("table", "ask", "Globex Paris", "--json"))
    assert answer["method"] == "lexical" and answer["hits"][0]["row"]["name"] == "Globex"
    assert cli("table", "update", "Globex moved to Lyon").exit_code == 7


def test_a_model_that_runs_out_of_steps_falls_back_to_rows_with_a_warning(cli, stocked: Vault) -> None:
    config = stocked.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("max_steps = 12", "max_steps = 2"))
    model = ScriptedModel()
    model.call(("tables_overview", {}))
    model.call(("tables_overview", {}))
    session = Session(Vault.open(stocked.root), "demo", environ=ENV)
    answer = TableAgent(session.tables, session.settings, connect=lambda s: model).ask("Acme")
    assert answer.method == "lexical" and answer.hits[0].row["name"] == "Acme"
    assert any("all 2 steps" in w and "matching rows" in w for w in session.take_warnings())


def test_update_requires_ask_first_applies_and_journals_the_run(stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(
        ("update_rows", {"table": "vendors", "filter": 'name == "Globex"', "values": {"city": "Lyon"}})
    )
    model.call(("ask", {"question": "Where is Globex?"}))
    model.answer("Globex is in Paris (row 2).")  # the nested read-only loop's answer
    model.call(
        ("update_rows", {"table": "vendors", "filter": 'name == "Globex"', "values": {"city": "Lyon"}})
    )
    model.answer("Moved Globex to Lyon.")
    run = agent(stocked, model).change("update", "Globex is now based in Lyon")
    refused, asked, applied = (r for seen in model.tool_results() for r in [seen])
    assert "call ask first" in refused["error"]
    assert asked == {"answer": "Globex is in Paris (row 2)."}
    assert applied["updated"] == 1
    assert [(op["applied"], "error" in op) for op in run.operations] == [(False, True), (True, False)]
    assert run.not_applied == [] and run.summary == "Moved Globex to Lyon."  # the refused one made good
    assert "2,Globex,Lyon,2" in rows_file(stocked).read_text()
    journal = [json.loads(x) for x in (stocked.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()]
    assert (
        journal[-1]["op"] == "update_rows"
        and journal[-1]["run"] == run.run
        and journal[-1]["source"] == "update"
    )


def test_a_run_works_on_a_state_of_its_own_and_leaves_the_services_as_it_was(stocked: Vault) -> None:
    session = Session(Vault.open(stocked.root), "demo", environ=ENV)
    service = session.tables
    store, seen = service.state.store, []
    model = ScriptedModel()
    model.call(("ask", {"question": "Where is Globex?"}))
    model.answer("Paris")
    umbrella = {"name": "Umbrella", "city": "Rome", "rating": 3}
    model.call(("add_rows", {"table": "vendors", "rows": [umbrella]}))
    model.answer("Added Umbrella.")

    def watching(messages: Any, tools: Any) -> Any:  # what the service holds while the run is going on
        seen.append((service.state.run, service.state.source, service.state.store))
        return model(messages, tools)

    agent = TableAgent(service, session.settings, connect=lambda settings: watching)
    run = agent.change("update", "Add Umbrella")
    assert seen and all(held == (None, "cli", store) for held in seen)
    assert (service.state.run, service.state.source, service.state.store) == (None, "cli", store)
    journal = [json.loads(x) for x in (stocked.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()]
    assert [(line["op"], line["run"], line["source"]) for line in journal[-2:]] == [
        ("start_run", run.run, "update"),
        ("add_rows", run.run, "update"),
    ]
    service.changes.add_rows("vendors", [{"name": "Hooli", "city": "Oslo", "rating": 1}])
    last = json.loads((stocked.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()[-1])
    assert (last["op"], last["run"], last["source"]) == ("add_rows", None, "cli")


def test_a_dry_run_shows_the_operations_and_applies_none(stocked: Vault) -> None:
    before = rows_file(stocked).read_bytes()
    model = ScriptedModel()
    model.call(("ask", {"question": "What columns?"}))
    model.answer("name, city, rating")
    model.call(("create_derived_column", {"table": "vendors", "column": "good", "expression": "rating >= 4"}))
    model.call(("delete_column", {"table": "vendors", "column": "rating"}))
    model.answer("Replaced rating by a good flag.")
    run = agent(stocked, model).change("refactor", "Keep only whether a vendor is good", dry_run=True)
    assert [(op["tool"], op["applied"]) for op in run.operations] == [
        ("create_derived_column", False),
        ("delete_column", False),
    ]
    assert rows_file(stocked).read_bytes() == before


def test_a_failing_update_says_how_much_was_applied(stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(("ask", {"question": "rows?"}))
    model.answer("three vendors")
    model.call(("delete_rows", {"table": "vendors", "filter": "rating < 3"}))
    # no reply left: the scripted model fails like a provider error
    with pytest.raises(ModelUnavailable, match="1 operation"):
        agent(stocked, model).change("update", "Drop the badly rated vendors")
    assert "Globex" not in rows_file(stocked).read_text()


@pytest.mark.process
def test_ask_and_update_through_litellm_and_the_fake_server(
    cli, stocked: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    fake_openai.call_tools(("search", {"query": "Initech"}))
    fake_openai.enqueue(content="Initech is rated 5.")
    answer = ok(cli("table", "ask", "How is Initech rated?", "--json"))
    assert answer == {
        "question": "How is Initech rated?",
        "method": "model",
        "answer": "Initech is rated 5.",
        "hits": [],
    }
    tools = {t["function"]["name"] for t in fake_openai.requests[0]["body"]["tools"]}
    assert tools == {"tables_overview", "filter", "search", "reduce", "filter_join", "search_join"}
    fake_openai.call_tools(("ask", {"question": "vendors?"}))
    fake_openai.enqueue(content="Acme, Globex, Initech")
    fake_openai.call_tools(
        ("add_rows", {"table": "vendors", "rows": [{"name": "Hooli", "city": "Palo Alto"}]})
    )
    fake_openai.enqueue(content="Added Hooli.")
    run = ok(cli("table", "update", "Hooli in Palo Alto is a vendor too", "--json"))
    assert run["summary"] == "Added Hooli." and run["operations"][0]["result"]["added"] == 1
    fake_openai.enqueue(status=500)
    failed = cli("table", "ask", "Acme", "--json")
    assert failed.exit_code == 0 and json.loads(failed.stdout)["method"] == "lexical"
    assert "matching rows instead" in failed.stderr


def test_undo_puts_back_what_the_last_run_changed(cli, stocked: Vault) -> None:
    before = rows_file(stocked).read_bytes()
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("three vendors")
    model.call(
        ("delete_rows", {"table": "vendors", "filter": "rating < 3"}),
        ("create_table", {"name": "cities", "columns": {"city": "str"}}),
    )
    model.answer("Dropped Globex; added a cities table.")
    agent(stocked, model).change("refactor", "Drop bad vendors, keep a list of cities")
    assert "Globex" not in rows_file(stocked).read_text()
    assert cli("table", "undo").exit_code == 2  # --yes without a terminal
    undone = ok(cli("table", "undo", "--yes", "--json"))
    assert rows_file(stocked).read_bytes() == before
    assert not (stocked.root / "tables/personal/demo/cities.csv").exists()
    assert "tables/personal/demo/vendors.csv" in undone["files"]
    assert [r["name"] for r in ok(cli("table", "filter", "vendors", "--json"))["tables"][0]["rows"]] == [
        "Acme",
        "Globex",
        "Initech",
    ]
    assert cli("table", "undo", "--yes").exit_code == 3  # nothing left to undo


def test_undo_refuses_when_a_file_changed_since_the_run(cli, stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("three vendors")
    model.call(("update_rows", {"table": "vendors", "filter": 'name == "Acme"', "values": {"rating": 1}}))
    model.answer("Acme rated 1.")
    agent(stocked, model).change("update", "Acme is rated 1 now")
    ok(cli("table", "add", "vendors", "--row", '{"name": "Later"}', "--json"))
    after_edit = rows_file(stocked).read_bytes()
    refused = cli("table", "undo", "--yes", "--json")
    assert refused.exit_code == 4 and "changed since" in refused.stderr
    assert rows_file(stocked).read_bytes() == after_edit


def test_instructions_reach_the_model_and_a_run_needs_ask_before_any_change(stocked: Vault) -> None:
    model = ScriptedModel()
    model.answer("Nothing to change.")
    run = agent(stocked, model).change("update", "All good?", instructions="Never delete rows.")
    system = model.seen[0][0]["content"]
    assert system.endswith("The user's instructions for this call: Never delete rows.")
    assert run.operations == [] and run.summary == "Nothing to change."
    tools = {message["role"] for message in model.seen[0]}
    assert tools == {"system", "user"}


# --- every tool argument is checked against what the tool declares ------------------------------

ODD_READS = [
    (("filter", {"tables": ["vendors"], "filter": 5}), "filter: 5 is not of type 'string'"),
    (("filter", {"filter": ["city == 'Paris'"]}), """filter: ["city == 'Paris'"] is not of type 'string'"""),
    (("filter", {"filter": {"city": "Paris"}}), "filter: {'city': 'Paris'} is not of type 'string'"),
    (("filter", {"tables": [1]}), "tables[0]: 1 is not of type 'string'"),
    (("filter", {"limit": "ten"}), "limit: 'ten' is not of type 'integer'"),
    (("filter", {"where": "rating > 3"}), "unknown argument 'where' (the arguments are: tables, filter,"),
    (("search", {"query": 3}), "query: 3 is not of type 'string' or 'array'"),
    (("search", {}), "'query' is a required property"),
    (
        ("reduce", {"table": "vendors", "metric": "avg", "keys": "rating"}),
        "metric: 'avg' is not one of ['count', 'sum', 'mean', 'median', 'min', 'max', 'var', 'std', 'mode']",
    ),
    (
        ("reduce", {"table": "vendors", "metric": "sum", "keys": "rating", "filter": True}),
        "filter: True is not of type 'string'",
    ),
    (("filter_join", {"left": "vendors", "right": "vendors", "on": 1}), "on: 1 is not of type 'string'"),
    (("filter", '{"filter": NaN}'), "NaN is not a JSON number"),
]


def test_ask_refuses_tool_arguments_of_the_wrong_kind_as_tool_errors(stocked: Vault) -> None:
    model = ScriptedModel()
    model.call(*(call for call, _ in ODD_READS))
    model.call(("filter", {"tables": "vendors", "filter": "rating > 3", "limit": 2.0}))  # 2.0 is 2
    model.answer("Acme and Initech are rated above 3.")
    answer = agent(stocked, model).ask("Which vendors are rated above 3?")
    assert answer.method == "model"
    refused = model.tool_results(1)
    assert len(refused) == len(ODD_READS)
    for result, (call, says) in zip(refused, ODD_READS, strict=True):
        assert result["error"].startswith(f"bad arguments for {call[0]}: {says}"), (call, result)
    found = model.tool_results()[-1]
    assert [r["name"] for r in found["tables"][0]["rows"]] == ["Acme", "Initech"] and found["limit"] == 2


def test_update_refuses_mutating_tool_arguments_of_the_wrong_kind_and_applies_nothing(stocked: Vault) -> None:
    before = rows_file(stocked).read_bytes()
    model = ScriptedModel()
    model.call(("ask", {"question": "What vendors are there?"}))
    model.answer("Acme, Globex, Initech.")
    odd = [
        (
            ("update_rows", {"table": "vendors", "filter": 5, "values": {"city": "Lyon"}}),
            "filter: 5 is not of type 'string'",
        ),
        (
            ("update_rows", {"table": "vendors", "filter": ["x"], "values": {}}),
            "filter: ['x'] is not of type 'string'",
        ),
        (
            ("delete_rows", {"table": "vendors", "filter": {"name": "Globex"}}),
            "filter: {'name': 'Globex'} is not of type 'string'",
        ),
        (
            ("delete_rows", {"table": ["vendors"], "filter": "True"}),
            "table: ['vendors'] is not of type 'string'",
        ),
        (
            ("add_rows", {"table": "vendors", "rows": {"name": "Evil"}}),
            "rows: {'name': 'Evil'} is not of type 'array'",
        ),
        (("add_rows", {"table": "vendors", "rows": ["Evil"]}), "rows[0]: 'Evil' is not of type 'object'"),
        (
            ("create_empty_column", {"table": "vendors", "column": 7, "type": "str"}),
            "column: 7 is not of type 'string'",
        ),
        (
            ("transform_column", {"table": "vendors", "column": "rating", "lossy": "yes"}),
            "lossy: 'yes' is not one of ['round', 'drop']",
        ),
        (("delete_tables", {}), "'tables' is a required property"),
    ]
    model.call(*(call for call, _ in odd))
    model.answer("Could not change anything.")
    run = agent(stocked, model).change("update", "Globex moved to Lyon")
    results = model.tool_results()[1:]  # after ask's answer
    for result, (call, says) in zip(results, odd, strict=True):
        assert result["error"].startswith(f"bad arguments for {call[0]}: {says}"), (call, result)
    assert not any(o["applied"] for o in run.operations) and rows_file(stocked).read_bytes() == before
    assert [o["tool"] for o in run.not_applied] == [call[0] for call, _ in odd]  # each listed as refused
