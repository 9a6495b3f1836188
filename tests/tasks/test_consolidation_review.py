"""Consolidation with `[extraction] review = true`: a pass proposes its memory records and its
contacts' rows instead of writing them; a person accepts or rejects each (memory/pending.py)."""

from __future__ import annotations

import json

from consolidation_support import MODEL, REPLY, ScriptedModel, consolidator, every
from helpers import ok

from aibuddy_cli.app.session import Session
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.memory.pending import Pending
from aibuddy_cli.vault import Vault


def chat(cli, vault: Vault) -> None:  # noqa: ANN001 - the CliRunner fixture
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("review = false", "review = true", 1))
    every(vault, 4)
    ok(cli("task", "new", "Plan the offsite", "--json"))
    for role, text in (
        ("user", "I'm vegetarian, remember that for every event."),
        ("assistant", "Noted."),
        ("user", "Maria Lopez handles the venue; she prefers email."),
        ("assistant", "I'll email Maria."),
    ):
        ok(cli("task", "add-message", "t1", text, "--role", role, "--json"))


def run_pass(vault: Vault, model: ScriptedModel) -> dict:
    with Session.locate(str(vault.root), "demo", environ=dict(MODEL)) as session:
        return json.loads(json.dumps(to_json(consolidator(session, model).run("t1"))))


def test_a_pass_proposes_its_records_and_contacts_and_writes_neither(cli, vault: Vault) -> None:
    chat(cli, vault)
    model = ScriptedModel()
    model.reply_json(REPLY)
    (done,) = run_pass(vault, model)["passes"]
    outcomes = {(d["step"], d.get("name"), d["outcome"]) for d in done["decisions"]}
    assert ("memory", "diet", "proposed") in outcomes and ("contacts", "Maria Lopez", "proposed") in outcomes
    assert not (vault.root / "memory" / "demo" / "diet.md").exists()
    assert cli("table", "show", "contacts").exit_code != 0  # no table made for a proposal
    waiting = {p.name: p for p in Pending(Session(vault, "demo", environ={}).memory).proposals()}
    maria = waiting["Maria Lopez"]
    assert (maria.action, maria.values, maria.base_values) == ("contact", {"bio": "Handles the venue"}, None)
    listed = cli("memory", "pending").stdout
    assert "contact\tMaria Lopez" in listed and "    bio: Handles the venue" in listed
    assert cli("memory", "accept", maria.id).stdout.strip() == "contact Maria Lopez written"
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert [(row["name"], row["bio"]) for row in rows] == [("Maria Lopez", "Handles the venue")]
    assert cli("memory", "accept", waiting["diet"].id).stdout.strip() == "created diet (automatic)"


def test_a_contact_proposal_over_a_row_that_changed_since_is_refused(cli, vault: Vault) -> None:
    chat(cli, vault)
    memory = Session(vault, "demo", environ={}).memory
    pending = Pending(memory)
    first = pending.propose_contact("Ada", {"bio": "Engineer"}, None)
    assert cli("memory", "accept", first.id).exit_code == 0
    later = pending.propose_contact("Ada", {"bio": "Engineer at Acme"}, {"bio": "Engineer"})
    changed = ("--where", 'name == "Ada"', "--set", '{"bio": "Mathematician"}')
    ok(cli("table", "update-rows", "contacts", *changed, "--json"))
    refused = cli("memory", "accept", later.id)
    assert refused.exit_code != 0 and "changed since" in refused.stderr
    rows = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert rows[0]["bio"] == "Mathematician"
    assert cli("memory", "accept", later.id, "--body", "x").exit_code != 0  # a contact is not edited here
    assert cli("memory", "reject", later.id).exit_code == 0
