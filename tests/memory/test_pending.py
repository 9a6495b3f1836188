"""Changes that wait for a person (`[extraction] review = true`, memory/pending.py): automatic
memory proposes instead of writing; a person accepts (as proposed, or edited), or rejects."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Conflict, InvalidInput, NotFound
from aibuddy_cli.memory.extraction import Extractor, Message
from aibuddy_cli.memory.pending import Pending
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


def reviewed(vault: Vault) -> Vault:
    """The vault with `[extraction] review = true`."""
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("review = false", "review = true", 1))
    assert Vault.open(vault.root).config.extraction.review
    return Vault.open(vault.root)


@pytest.fixture
def memory(vault: Vault) -> MemoryService:
    return Session(reviewed(vault), "demo", environ={}).memory


def records(memory: MemoryService) -> list[str]:
    return [item.record.name for item in memory.list_records().records]


@pytest.mark.process
def test_with_review_on_extraction_proposes_and_writes_nothing(
    vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    memory = Session(reviewed(vault), "demo", environ=model_env).memory
    old = "Use three sections in every weekly report"
    memory.create_auto("report-style", type="feedback", description=old, body="old")
    new = {"type": "user", "name": "tea", "description": "Drinks green tea", "body": "Sencha.",
           "salience": 0.9, "durable": True, "recoverable": False}  # fmt: skip
    update = {**new, "type": "feedback", "name": "x", "body": "Done, next, risks.",
              "description": "Use three sections in each weekly report"}  # fmt: skip
    fake_openai.reply_json({"candidates": [new, update]})
    said = "Remember: I drink green tea, and always use three sections in each weekly report."
    talk = [Message("user", said), Message("assistant", "Noted.")]
    result = Extractor(memory).run(talk)
    assert [d.outcome for d in result.decisions if d.step == "write"] == ["proposed", "proposed"]
    assert result.written == [] and records(memory) == ["report-style"]
    assert memory.show("report-style").body == "old"
    waiting = {p.name: p for p in Pending(memory).proposals()}
    assert set(waiting) == {"tea", "report-style"}
    assert waiting["tea"].action == "create" and waiting["report-style"].action == "update"
    assert waiting["report-style"].body == "Done, next, risks."


def test_accepting_applies_as_automatic_memory_would(memory: MemoryService) -> None:
    pending = Pending(memory)
    created = pending.propose("create", "tea", type="user", description="Drinks green tea", body="Sencha.")
    done = pending.accept(created.id)
    assert (done.action, done.edited, done.record.provenance) == ("create", False, "auto")
    update = pending.propose("update", "tea", type="user", description="Drinks green tea", body="Oolong.")
    assert pending.accept(update.id).record.body == "Oolong."
    assert memory.history("tea")[0]["body"] == "Sencha."  # the version it replaced is kept
    assert pending.proposals() == []


def test_a_proposal_a_person_edits_before_accepting_becomes_theirs(memory: MemoryService) -> None:
    pending = Pending(memory)
    first = pending.propose("create", "tea", type="user", description="Drinks green tea", body="Sencha.")
    assert pending.accept(first.id, body="Gyokuro.").record.provenance == "manual"
    memory.delete("tea")
    memory.create_auto("tea", type="user", description="Drinks green tea", body="Sencha.")
    update = pending.propose("update", "tea", type="user", description="Drinks green tea", body="Oolong.")
    done = pending.accept(update.id, description="Drinks oolong")
    assert (done.edited, done.record.provenance, done.record.description) == (True, "manual", "Drinks oolong")
    assert memory.history("tea")[0]["by"] == "person"


def test_an_update_of_a_record_that_changed_since_is_refused(memory: MemoryService) -> None:
    memory.create_auto("tea", type="user", description="Drinks green tea", body="Sencha.")
    pending = Pending(memory)
    update = pending.propose("update", "tea", type="user", description="Drinks green tea", body="Oolong.")
    memory.update("tea", body="Matcha, written by me.")
    with pytest.raises(Conflict, match="changed since"):
        pending.accept(update.id)
    assert memory.show("tea").body == "Matcha, written by me."
    assert [p.id for p in pending.proposals()] == [update.id]  # still there to reject


def test_rejecting_drops_the_proposal_and_changes_nothing(memory: MemoryService) -> None:
    pending = Pending(memory)
    proposal = pending.propose("create", "tea", type="user", description="Drinks green tea", body="Sencha.")
    assert pending.reject(proposal.id).name == "tea"
    assert pending.proposals() == [] and records(memory) == []
    with pytest.raises(NotFound, match="no proposal"):
        pending.reject(proposal.id)
    with pytest.raises(InvalidInput):
        pending.accept("../../aibuddy")


def test_one_proposal_waits_per_record_and_a_credential_never_reaches_the_vault(
    memory: MemoryService, vault: Vault
) -> None:
    pending = Pending(memory)
    pending.propose("create", "tea", type="user", description="Drinks green tea", body="Sencha.")
    key = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY"
    later = pending.propose("create", "tea", type="user", description="Drinks green tea", body=f"key {key}")
    assert [p.id for p in pending.proposals()] == [later.id]
    stored = "".join(p.read_text() for p in (vault.root / "memory" / "demo" / ".pending").iterdir())
    assert key not in stored and json.loads(stored)["name"] == "tea"


def test_the_command_line_lists_accepts_and_rejects(cli, vault: Vault) -> None:
    memory = Session(reviewed(vault), "demo", environ={}).memory
    pending = Pending(memory)
    first = pending.propose("create", "tea", type="user", description="Drinks green tea", body="Sencha.")
    second = pending.propose("create", "vim", type="feedback", description="Prefers vim", body="Use vim.")
    listed = cli("memory", "pending", "--json")
    assert listed.exit_code == 0
    assert [p["id"] for p in json.loads(listed.stdout)["proposals"]] == [first.id, second.id]
    assert cli("memory", "accept", first.id).stdout.strip() == "created tea (automatic)"
    assert cli("memory", "reject", second.id).stdout.strip() == f"rejected {second.id} (vim unchanged)"
    assert cli("memory", "pending").stdout.strip() == "no change waits for you"
    assert cli("memory", "accept", first.id).exit_code == 3  # not found: it was applied
