"""Consolidation by category: contacts build up by default (a rolling summary per person, in the
user's personal `contacts` table, which an older table gains as a column), and `task consolidate
--only` runs some categories only, each category keeping its own watermark so that no message is
taken as consolidated for a category that has not seen it, nor given to one twice. In process,
the model scripted through the Consolidator's seam (test_consolidation.py), and once through the
command line and the real litellm client against the fake server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from consolidation_support import MODEL, REPLY, ScriptedModel, consolidator, every, log, watermark
from fake_openai import FakeOpenAI
from helpers import ok

from aibuddy_cli.app.session import Session
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.tasks.consolidation import handlers
from aibuddy_cli.vault import Vault, init_vault

CONTACTS_ON = {"AIBUDDY_CONSOLIDATE_CONTACTS": "1"}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def consolidate(vault: Vault, model: ScriptedModel) -> Callable[..., dict]:
    """`task consolidate t1 --json` in process, with the scripted model (as test_consolidation's)."""

    def run(*, environ: dict[str, str] | None = None, **options: Any) -> dict:
        with Session.locate(str(vault.root), "demo", environ={**MODEL, **(environ or {})}) as session:
            result = consolidator(session, model).run("t1", **options)
            warnings = list(session.warnings)
        document = json.loads(json.dumps(to_json(result)))
        document["warnings"] = warnings
        return document

    return run


def say(cli, *texts: str, role: str = "user") -> None:
    for text in texts:
        ok(cli("task", "add-message", "t1", text, "--role", role, "--json"))


@pytest.fixture
def chat(cli, vault: Vault) -> None:
    """A task of four messages about the offsite; a chunk is four messages."""
    every(vault, 4)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    say(
        cli,
        "I'm vegetarian, remember that for every event.",
        "Noted.",
        "Maria Lopez handles the venue; she prefers email.",
        "I'll email Maria.",
    )


def contacts(cli) -> list[dict[str, Any]]:
    return ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]


def asked(request: list[dict[str, str]]) -> set[str]:
    """The categories a request asks for (the keys of the reply's shape in its system message)."""
    system = request[0]["content"]
    keys = {"memory": '"memory": [', "contacts": '"contacts": [', "summaries": '"summary": {',
            "knowledge": '"knowledge": [', "tasks": '"tasks": {'}  # fmt: skip
    return {category for category, key in keys.items() if key in system}


def outcomes(result: dict, index: int = 0) -> set[tuple[str, str | None, str]]:
    return {(d["step"], d.get("name"), d["outcome"]) for d in result["passes"][index]["decisions"]}


# --- contacts, on by default, with a rolling summary -------------------------------------------


def test_contacts_are_on_in_a_new_vault_and_off_by_their_switch(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    config = (vault.root / "aibuddy.toml").read_text()
    assert re.search(r"(?m)^contacts = true$", config)  # `aibuddy init` writes the default
    model.reply_json(REPLY)
    first = consolidate(dry_run=True)
    assert asked(model.requests[-1]) == {"memory", "contacts", "summaries"}
    assert ("contacts", "Maria Lopez", "would-create") in outcomes(first)
    # Off, by the file or by the environment: not asked, and a reply's contacts are ignored.
    (vault.root / "aibuddy.toml").write_text(config.replace("contacts = true", "contacts = false"))
    for environ in ({}, {"AIBUDDY_CONSOLIDATE_CONTACTS": "0"}):
        if environ:
            (vault.root / "aibuddy.toml").write_text(config)
        model.reply_json(REPLY)
        off = consolidate(dry_run=True, environ=environ)
        assert asked(model.requests[-1]) == {"memory", "summaries"}
        assert ("contacts", None, "ignored") in outcomes(off)
        detail = next(d["detail"] for d in off["passes"][0]["decisions"] if d["step"] == "contacts")
        assert detail == "category switched off"
    assert not (vault.root / "tables/personal/demo/contacts.csv").exists()


def test_a_contacts_summary_rolls_forward_from_pass_to_pass(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    first = "Handles the venue and prefers email."
    model.reply_json({"contacts": [{"name": "Maria Lopez", "summary": first, "evidence": [3]}]})
    assert ("contacts", "Maria Lopez", "created") in outcomes(consolidate())
    assert [(r["name"], r["summary"]) for r in contacts(cli)] == [("Maria Lopez", first)]
    say(cli, "Maria Lopez confirmed the venue for June 3.", "Great.", "Book the catering too.", "Will do.")
    rolled = "Handles the venue and prefers email; confirmed the venue for June 3."
    model.reply_json(
        {
            "contacts": [
                {"name": "Maria Lopez", "summary": rolled, "evidence": [5]},
                {
                    "name": "Maria Lopez",
                    "summary": "Former chief financial officer of a bank.",
                    "evidence": [5],
                },
            ]
        }
    )
    second = consolidate()
    # The request showed her summary, to fold in: the folded one rests on it and on message 5.
    assert "Known contacts' summaries:\n- Maria Lopez: " + first in model.requests[-1][1]["content"]
    decisions = [
        (d["outcome"], d["detail"]) for d in second["passes"][0]["decisions"] if d["step"] == "contacts"
    ]
    assert decisions == [
        ("updated", "summary"),
        ("dropped", "summary: the cited message(s) 5 do not state it"),  # invented: left out
        ("no-op", "nothing new"),
    ]
    assert [(r["name"], r["summary"]) for r in contacts(cli)] == [("Maria Lopez", rolled)]


def test_a_summary_made_without_the_known_one_is_added_to_it_within_the_bound(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the request could not show a contact's summary (more contacts named than it shows),
    what the model says is added after it, never put in its place; the oldest words go first
    past the bound (2,000 characters)."""
    long = "Handles the venue. " * 105  # 1,995 characters
    ok(cli("table", "create", "contacts", "-c", "name:str", "-c", "summary:str", "--json"))
    row = json.dumps({"name": "Maria Lopez", "summary": long.strip()})
    ok(cli("table", "add", "contacts", "--row", row, "--json"))
    monkeypatch.setattr(handlers, "MAX_KNOWN", 0)
    model.reply_json({"contacts": [{"name": "Maria Lopez", "summary": "Prefers email.", "evidence": [3]}]})
    consolidate(environ=CONTACTS_ON)
    assert "Known contacts" not in model.requests[-1][1]["content"]
    (maria,) = contacts(cli)
    summary = maria["summary"]
    assert len(summary) <= 2000 and summary.startswith("…venue. Handles the venue.")  # whole words
    assert summary.endswith("Handles the venue. Prefers email.")


def test_an_older_contacts_table_gains_the_new_columns_and_keeps_its_rows(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    ok(cli("table", "create", "contacts", "-c", "name:str", "-c", "bio:str", "--json"))
    for name in ("Ana Silva", "Maria Lopez"):
        ok(
            cli(
                "table",
                "add",
                "contacts",
                "--row",
                json.dumps({"name": name, "bio": "A colleague"}),
                "--json",
            )
        )
    reply = {
        "name": "Maria Lopez",
        "response_policy": "By email",
        "summary": "Handles the venue.",
        "evidence": [3],
    }
    model.reply_json({"contacts": [reply]})
    dry = consolidate(dry_run=True)
    detail = next(d["detail"] for d in dry["passes"][0]["decisions"] if d["step"] == "contacts")
    assert detail == "response_policy, summary (new column: response_policy, summary)"
    assert [c["name"] for c in ok(cli("table", "show", "contacts", "--json"))["columns"]] == [
        "row_id",
        "name",
        "bio",
    ]
    model.reply_json({"contacts": [reply]})
    assert ("contacts", "Maria Lopez", "updated") in outcomes(consolidate())
    columns = {c["name"]: c["description"] for c in ok(cli("table", "show", "contacts", "--json"))["columns"]}
    assert list(columns) == ["row_id", "name", "bio", "response_policy", "summary"]
    assert columns["summary"].startswith("what the conversations say about them")
    assert contacts(cli) == [
        {"row_id": 1, "name": "Ana Silva", "bio": "A colleague", "response_policy": None, "summary": None},
        {"row_id": 2, "name": "Maria Lopez", "bio": "A colleague", "response_policy": "By email",
         "summary": "Handles the venue."},
    ]  # fmt: skip


def test_what_a_pass_learns_about_a_person_stays_in_the_users_personal_table(
    tmp_path: Path, model: ScriptedModel
) -> None:
    """In a team vault whose team has a `contacts` table of its own, a pass writes the user's
    personal one, in the personal vault (never the shared folder), and leaves the team's alone."""
    vault = init_vault(tmp_path / "team", "demo")
    config = vault.root / "aibuddy.toml"
    text = config.read_text().replace("every = 50", "every = 2")
    config.write_text(f'vault_id = "team-1"\n{text}\n[teams.eng]\nmembers = ["demo"]\n')
    with Session.locate(str(vault.root), "demo", environ=MODEL) as session:
        session.tables.changes.create("team/eng/contacts", "The team's people")
        session.tables.changes.add_rows("team/eng/contacts", [{"name": "Maria Lopez", "bio": "Team lead"}])
        session.tasks.new("Plan the offsite")
        for text in ("Maria Lopez handles the venue.", "Noted."):
            session.tasks.add_message("t1", "user", text)
        model.reply_json({"contacts": [{"name": "Maria Lopez", "bio": "Handles the venue", "evidence": [1]}]})
        (done,) = consolidator(session, model).run("t1").passes
        assert ("contacts", "created") in {(d.step, d.outcome) for d in done.decisions}
        queries = session.tables.queries
        mine = queries.filter(["contacts"]).tables[0].rows
        theirs = queries.filter(["team/eng/contacts"]).tables[0].rows
    assert [(r["name"], r["bio"]) for r in mine] == [("Maria Lopez", "Handles the venue")]
    assert [(r["name"], r["bio"]) for r in theirs] == [("Maria Lopez", "Team lead")]
    shared = sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "tables").rglob("*.csv"))
    assert shared == ["tables/team/eng/contacts.csv"]
    personal = list((tmp_path / "home").rglob("tables/personal/demo/contacts.csv"))
    assert len(personal) == 1


# --- --only: some categories, each with its own watermark --------------------------------------


def test_only_asks_and_writes_the_categories_named_and_leaves_the_others_pending(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    model.reply_json(REPLY)
    result = consolidate(only=["contacts"])
    assert asked(model.requests[-1]) == {"contacts"}
    (done,) = result["passes"]
    assert done["chunk"] == [1, 4] and done["categories"] == ["contacts"]
    ignored = {(d["step"], d["detail"]) for d in done["decisions"] if d["outcome"] == "ignored"}
    assert ignored == {
        ("memory", "not part of this pass (--only)"),
        ("summaries", "not part of this pass (--only)"),
    }
    assert [r["name"] for r in contacts(cli)] == ["Maria Lopez"]
    assert not (vault.root / "memory/demo/diet.md").exists()
    # The shared watermark stays: memory and summaries have not seen messages 1-4.
    mark = watermark(vault)
    assert mark["last"] == 0 and mark["summary"] is None and mark["ahead"]["contacts"]["last"] == 4
    assert result["status"] == {
        "through": 0,
        "pending": 4,
        "running": False,
        "summary": None,
        "ahead": {"contacts": 4},
    }
    assert log(vault)[-1]["categories"] == ["contacts"]
    assert "(contacts through 4)" in cli("task", "show", "t1").stdout
    # A whole pass asks the others only; contacts in its reply are not taken twice.
    model.reply_json(REPLY)
    full = consolidate()
    assert asked(model.requests[-1]) == {"memory", "summaries"}
    assert full["passes"][0]["categories"] == ["memory", "summaries"]
    contact = next(d for d in full["passes"][0]["decisions"] if d["step"] == "contacts")
    assert (contact["outcome"], contact["detail"]) == ("ignored", "already consolidated through message 4")
    assert (vault.root / "memory/demo/diet.md").exists()
    mark = watermark(vault)
    assert mark["last"] == 4 and "ahead" not in mark and mark["summary"].startswith("Planning an offsite")
    assert consolidate()["passes"] == [] and len(model.requests) == 2


@pytest.mark.parametrize("background", [False, True])
def test_a_chunk_never_runs_past_another_categorys_watermark(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate, background: bool
) -> None:
    """Contacts are at message 4, the others at 0, and a chunk is three messages: 1-3 and 4 for
    the others, then 5-7 (and in the foreground 8) for all. A chunk cut at a watermark is whole."""
    model.reply_json({"contacts": []})
    consolidate(only=["contacts"])
    say(cli, "five", "six", "seven", "eight")
    every(vault, 3)
    for n in (1, 4, 5, 8):
        model.reply_json({"summary": {"text": f"Through {n}.", "evidence": [n]}})
    passes = consolidate(background=background)["passes"]
    others, everything = ["memory", "summaries"], ["memory", "contacts", "summaries"]
    expected = [([1, 3], others), ([4, 4], others), ([5, 7], everything)]
    expected += [] if background else [([8, 8], everything)]
    assert [(p["chunk"], p["categories"]) for p in passes] == expected
    assert [asked(request) for request in model.requests[1:]] == [
        set(categories) for _, categories in expected
    ]
    mark = watermark(vault)
    assert mark["last"] == (7 if background else 8) and "ahead" not in mark


def test_only_for_a_category_switched_off_runs_nothing_and_says_how_to_switch_it_on(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    off = consolidate(only=["knowledge"])
    assert off["passes"] == [] and model.requests == []
    assert off["reason"] == (
        "--only knowledge: switched off; switch on with AIBUDDY_CONSOLIDATE_KNOWLEDGE=1 for one run, "
        "or knowledge = true under [consolidation] in aibuddy.toml"
    )
    model.reply_json({"memory": [], "knowledge": []})
    some = consolidate(only=["memory", "knowledge"])
    assert [p["categories"] for p in some["passes"]] == [["memory"]]
    assert any(w.startswith("--only: knowledge left out, switched off") for w in some["warnings"])
    # Switched on for the run, it runs; the shared watermark waits for summaries and contacts.
    model.reply_json({"knowledge": []})
    on = consolidate(only=["knowledge"], environ={"AIBUDDY_CONSOLIDATE_KNOWLEDGE": "1"})
    assert [p["categories"] for p in on["passes"]] == [["knowledge"]]
    assert on["status"]["through"] == 0 and on["status"]["ahead"] == {"memory": 4, "knowledge": 4}


def test_only_every_category_switched_on_moves_the_shared_watermark(
    vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    model.reply_json({"summary": {"text": "Offsite.", "evidence": [1]}})
    result = consolidate(only=["summaries", "memory", "contacts"])
    assert result["passes"][0]["categories"] == ["memory", "contacts", "summaries"]
    assert watermark(vault)["last"] == 4 and "ahead" not in watermark(vault)
    model.reply_json({"memory": []})
    assert consolidate(only=["memory"], dry_run=True)["passes"] == []  # nothing pending for it


def test_a_dry_run_with_only_writes_nothing(
    vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    model.reply_json(REPLY)
    result = consolidate(only=["memory"], dry_run=True)
    assert ("memory", "diet", "would-create") in outcomes(result)
    assert watermark(vault) is None and log(vault) == []


def test_an_ahead_watermark_whose_chunk_left_the_log_counts_for_nothing(
    vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    """As the shared watermark is checked against the log (a git merge may renumber messages),
    so is a category's own: one whose chunk the log no longer holds gives way to the shared one."""
    model.reply_json({"contacts": []})
    consolidate(only=["contacts"])
    path = vault.root / "tasks/demo/t1/consolidation.json"
    document = json.loads(path.read_text())
    document["ahead"]["contacts"]["digest"] = "0" * 64
    path.write_text(json.dumps(document))
    model.reply_json({"contacts": []})
    again = consolidate(only=["contacts"])
    assert [p["chunk"] for p in again["passes"]] == [[1, 4]]


@pytest.mark.process
def test_only_is_an_option_of_the_command_repeated_or_comma_separated(
    cli, vault: Vault, chat: None, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    for name, value in MODEL.items():
        monkeypatch.setenv(name, value)
    fake_openai.reply_json({"summary": {"text": "Offsite.", "evidence": [1]}})
    result = ok(
        cli(
            "task",
            "consolidate",
            "t1",
            "--only",
            "summaries,contacts",
            "--only",
            "tasks",
            "--dry-run",
            "--json",
        )
    )
    assert result["passes"][0]["categories"] == ["contacts", "summaries"]  # tasks is switched off
    system = fake_openai.requests[-1]["body"]["messages"][0]["content"]
    assert '"contacts": [' in system and '"summary": {' in system and '"memory": [' not in system
    bad = cli("task", "consolidate", "t1", "--only", "contact")
    assert bad.exit_code == 6 and bad.stdout == ""
    expected = "unknown consolidation category 'contact': use memory, contacts, summaries, knowledge, tasks"
    assert bad.stderr.strip().endswith(expected) and len(bad.stderr.strip().splitlines()) == 1
    assert len(fake_openai.requests) == 1


def test_the_commands_categories_are_the_watermarks() -> None:
    from aibuddy_cli.operations import task
    from aibuddy_cli.tasks.consolidation.watermark import PASS_CATEGORIES

    assert task.PASS_CATEGORIES == PASS_CATEGORIES


# --- the task's plan and status ------------------------------------------------------------------


def test_a_pass_sets_the_plan_and_a_work_status_never_closes_nor_reopens(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    tasks_on = {"AIBUDDY_CONSOLIDATE_TASKS": "1"}
    ok(cli("task", "plan", "t1", "Find a venue", "--json"))
    model.reply_json({"tasks": {"plan": "Email Maria about the venue", "status": "blocked", "evidence": [3]}})
    done = consolidate(only=["tasks"], environ=tasks_on)
    assert "The task's plan: Find a venue\nIts status: open" in model.requests[-1][1]["content"]
    assert '"status": "open|blocked|done"' in model.requests[-1][0]["content"]
    decision = next(d for d in done["passes"][0]["decisions"] if d["step"] == "tasks")
    assert (decision["outcome"], decision["detail"]) == ("updated", "plan, status blocked")
    shown = ok(cli("task", "show", "t1", "--json"))
    assert (shown["plan"], shown["status"]) == ("Email Maria about the venue", "blocked")
    ok(cli("task", "end", "t1", "--json"))
    say_closed = ["task", "status", "t1", "open"]  # a person may reopen; a pass may not
    model.reply_json({"tasks": {"status": "open", "evidence": [4]}})
    path = vault.root / "tasks/demo/t1/consolidation.json"
    path.unlink()  # the chunk again, now that the task is closed
    closed = consolidate(only=["tasks"], environ=tasks_on)
    decision = next(d for d in closed["passes"][0]["decisions"] if d["step"] == "tasks")
    assert decision == {
        "step": "tasks",
        "outcome": "dropped",
        "detail": "the task is closed: its status stays (open not set)",
    }
    assert ok(cli("task", "show", "t1", "--json"))["status"] == "closed"
    assert ok(cli(*say_closed, "--json"))["status"] == "open"


# --- at the edges (cases a review found): names beyond the BMP, a busy vault, a person's edit
# made while the model answered, a contact answered in another case -------------------------


def decisions(result: dict, step: str) -> list[tuple[str, str]]:
    found = [d for p in result["passes"] for d in p["decisions"] if d["step"] == step]
    return [(d["outcome"], d["detail"]) for d in found]


def test_a_contact_whose_name_holds_a_character_beyond_the_bmp_is_kept(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """A person named 𠮷田 (a Japanese surname; U+20BB7 is outside the BMP) is mentioned: the
    contact is created, and a later pass merges into it by name."""
    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    say(cli, "𠮷田 Aiko handles the venue.", "Noted.")
    model.reply_json({"contacts": [{"name": "𠮷田 Aiko", "bio": "Handles the venue", "evidence": [1]}]})
    first = consolidate()
    assert decisions(first, "contacts") == [("created", "new contact")], decisions(first, "contacts")
    assert [r["name"] for r in contacts(cli)] == ["𠮷田 Aiko"]


def test_a_contact_the_pass_could_not_write_because_the_vault_was_busy_is_not_lost(
    cli, vault: Vault, model: ScriptedModel, consolidate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the tables lock (a long table run) while a pass writes its contacts:
    the write fails "busy". The chunk must be tried again later (README: a pass that fails leaves
    the watermark where it was), not taken as consolidated with its contact dropped for good."""
    from aibuddy_cli.tables.state import TablesState

    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    say(cli, "Maria Lopez handles the venue.", "Noted.")
    ok(cli("table", "create", "contacts", "-c", "name:str", "-c", "bio:str", "--json"))
    reply = {"contacts": [{"name": "Maria Lopez", "bio": "Handles the venue", "evidence": [1]}]}
    # The lock's wait cut from 30 s to a moment; the lock itself is really held, by another handle.
    monkeypatch.setattr(TablesState, "lock", lambda self: self.store.lock("tables", timeout=0.05))
    with Session(vault, "demo") as holder, holder.store.lock("tables"):
        model.reply_json(reply)
        busy = consolidate()
    assert [o for o, detail in decisions(busy, "contacts") if "busy" in detail] == ["failed"]
    model.reply_json(reply)
    consolidate()
    assert [(r["name"], r["bio"]) for r in contacts(cli)] == [("Maria Lopez", "Handles the venue")], (
        watermark(vault)
    )


def test_a_contact_the_pass_could_not_journal_is_not_lost(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """The table journal cannot be written (`.aibuddy/logs` unwritable): the contact's write is
    refused with nothing changed, which says nothing about the contact. The chunk is tried again
    later, as on a busy or read-only vault (the pass moved on and the contact was lost)."""
    from helpers import unwritable_logs

    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    say(cli, "Maria Lopez handles the venue.", "Noted.")
    reply = {"contacts": [{"name": "Maria Lopez", "bio": "Handles the venue", "evidence": [1]}]}
    logs = vault.root / ".aibuddy/logs"
    logs.mkdir(parents=True, exist_ok=True)
    unwritable_logs(vault)
    model.reply_json(reply)
    refused = consolidate()
    assert [o for o, detail in decisions(refused, "contacts") if "journal" in detail] == ["failed"]
    logs.unlink()
    model.reply_json(reply)
    consolidate()
    assert [(r["name"], r["bio"]) for r in contacts(cli)] == [("Maria Lopez", "Handles the venue")], (
        watermark(vault)
    )


def test_a_summary_a_person_wrote_while_the_model_was_answering_is_not_overwritten(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """The request shows Maria's summary; while the model answers, the user rewrites it by hand.
    The reply's summary was folded from the old one, not from what the user wrote: it must be
    added after the user's text (as a summary made without being shown the kept one is), not put
    in its place."""
    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    ok(cli("table", "create", "contacts", "-c", "name:str", "-c", "summary:str", "--json"))
    row = {"name": "Maria Lopez", "summary": "Handles the venue."}
    ok(cli("table", "add", "contacts", "--row", json.dumps(row), "--json"))
    say(cli, "Maria Lopez confirmed the venue for June 3.", "Great.")
    mine = "Handles the venue. Allergic to nuts: never book the caterer she dislikes."

    def answer() -> str:
        with Session(vault, "demo") as person:  # the user, meanwhile, in another terminal
            person.tables.changes.update_rows("contacts", 'name == "Maria Lopez"', {"summary": mine})
        rolled = "Handles the venue; confirmed the venue for June 3."
        return json.dumps({"contacts": [{"name": "Maria Lopez", "summary": rolled, "evidence": [1]}]})

    model.replies.append(answer)
    consolidate()
    assert "Known contacts' summaries:\n- Maria Lopez: Handles the venue." in model.requests[-1][1]["content"]
    (maria,) = contacts(cli)
    assert "Allergic to nuts" in maria["summary"], maria["summary"]


def test_a_plan_a_person_wrote_while_the_model_was_answering_is_not_replaced(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """The request shows the task's plan; while the model answers, the user sets a new plan with
    `task plan`. The pass's plan was made from the old one: it must not replace what the user
    has just written."""
    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--plan", "Find a venue", "--json"))
    say(cli, "Maria Lopez handles the venue; email her.", "I'll email Maria.")

    def answer() -> str:
        ok(cli("task", "plan", "t1", "Cancel the offsite: budget cut", "--json"))  # the user, meanwhile
        return json.dumps({"tasks": {"plan": "Email Maria about the venue", "evidence": [1]}})

    model.replies.append(answer)
    consolidate(only=["tasks"], environ={"AIBUDDY_CONSOLIDATE_TASKS": "1"})
    assert "The task's plan: Find a venue" in model.requests[-1][1]["content"]
    assert ok(cli("task", "show", "t1", "--json"))["plan"] == "Cancel the offsite: budget cut"


def test_a_contact_shown_to_the_model_is_the_one_its_reply_updates(
    cli, vault: Vault, model: ScriptedModel, consolidate
) -> None:
    """The user keeps "maria lopez" in lower case. The chunk names "Maria Lopez": the request shows
    that contact's summary (names are matched in any case) and the model folds the chunk into it,
    answering with the name as the chunk spells it. The reply must update that row, not add a
    second Maria beside it."""
    every(vault, 2)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    ok(cli("table", "create", "contacts", "-c", "name:str", "-c", "summary:str", "--json"))
    maria = {"name": "maria lopez", "summary": "Handles the venue."}
    ok(cli("table", "add", "contacts", "--row", json.dumps(maria), "--json"))
    say(cli, "Maria Lopez confirmed the venue for June 3.", "Great.")
    rolled = "Handles the venue; confirmed the venue for June 3."
    model.reply_json({"contacts": [{"name": "Maria Lopez", "summary": rolled, "evidence": [1]}]})
    consolidate()
    assert "- maria lopez: Handles the venue." in model.requests[-1][1]["content"]
    rows = contacts(cli)
    assert len(rows) == 1, [(r["name"], r["summary"]) for r in rows]


def test_task_context_says_how_far_the_rolling_summary_it_shows_goes(
    cli, vault: Vault, chat: None, model: ScriptedModel, consolidate
) -> None:
    """The summary's own position, not the shared one: after `--only summaries` over messages 1-4
    the summary covers 4 while memory and contacts have seen none; after a pass without summaries
    it still covers 4."""
    model.reply_json(REPLY)
    consolidate(only=["summaries"])
    assert watermark(vault)["last"] == 0
    assert "(consolidated through message 4)" in cli("task", "context", "t1").stdout
    say(cli, "Maria confirmed the venue.", "Good.")
    model.reply_json({"memory": [], "contacts": []})
    consolidate(only=["memory", "contacts"])
    assert watermark(vault)["last"] == 4
    assert "(consolidated through message 4)" in cli("task", "context", "t1").stdout

