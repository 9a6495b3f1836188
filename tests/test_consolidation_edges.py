"""Consolidation and task state at their edges: names beyond the BMP, a vault busy during a pass
(the chunk is tried again, nothing lost), what a person wrote while the model answered (kept),
and a contact shown in one case answered in another (the same row); each case a bug a review
found."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import ok
from test_consolidation import MODEL, ScriptedModel, consolidator, every, watermark

from aibuddy_cli.session import Session
from aibuddy_cli.vault import Vault


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def consolidate(vault: Vault, model: ScriptedModel) -> Callable[..., dict]:
    def run(*, environ: dict[str, str] | None = None, **options: Any) -> dict:
        with Session.locate(str(vault.root), "demo", environ={**MODEL, **(environ or {})}) as session:
            result = consolidator(session, model).run("t1", **options)
        return json.loads(json.dumps(result.to_json()))

    return run


def say(cli, *texts: str, role: str = "user") -> None:
    for text in texts:
        ok(cli("task", "add-message", "t1", text, "--role", role, "--json"))


def contacts(cli) -> list[dict[str, Any]]:
    return ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]


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
