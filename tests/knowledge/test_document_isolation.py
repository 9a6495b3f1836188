"""Another user's personal document, and a pending system proposal one may not see, are missing:
the same exit code (3) and the same message as a document that does not exist, wherever a
document is named (show, outline, read, attach, review, map, task context, kb ask's tools)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import child_env, kb, ok, run_aibuddy
from helpers import write_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import NotFound
from aibuddy_cli.operations.loops.kb_ask import KnowledgeAgent
from aibuddy_cli.vault import Vault

NOTES = "# Notes\n\nBob's private salary negotiation notes.\n"
PLAN = "# Plan\n\nCarol's secret reorganisation proposal.\n"


@pytest.fixture
def bob_notes(cli, tmp_path: Path) -> str:
    """bob's published personal document personal/bob/notes (demo is the admin; alice, bob and
    carol are not)."""
    ok(cli("--user", "bob", "kb", "import", str(write(tmp_path, "notes.md", NOTES)), "--json"))
    ok(cli("--user", "bob", "kb", "publish", "notes", "--json"))
    return "personal/bob/notes"


@pytest.fixture
def alice_task(vault: Vault) -> str:
    return Session(vault, "alice").tasks.new("write the quarterly plan").id


def assert_missing(result: Any, doc: str) -> None:
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert json.loads(result.stdout)["error"] == {"code": "not_found", "message": f"no document {doc!r}"}


@pytest.mark.parametrize(
    "command",
    [
        ("kb", "show", "{doc}"),
        ("kb", "outline", "{doc}"),
        ("kb", "outline", "{doc}", "--task", "{task}"),
        ("kb", "read", "{doc}", "notes"),
        ("kb", "read", "{doc}#notes", "--task", "{task}"),
        ("task", "attach", "{task}", "{doc}"),
        ("task", "detach", "{task}", "{doc}"),
        ("kb", "publish", "{doc}"),
        ("kb", "reject", "{doc}"),
        ("kb", "reingest", "{doc}"),
    ],
)
def test_another_users_personal_document_is_as_missing_as_one_that_does_not_exist(
    cli, bob_notes: str, alice_task: str, command: tuple[str, ...]
) -> None:
    for doc in (bob_notes, "personal/bob/ghost"):
        args = [part.format(doc=doc, task=alice_task) for part in command]
        assert_missing(cli("--user", "alice", *args, "--json"), doc)
    # In plain text too, the two say the same thing but for the name.
    texts = [
        cli("--user", "alice", *[p.format(doc=doc, task=alice_task) for p in command]).stderr
        for doc in (bob_notes, "personal/bob/ghost")
    ]
    assert texts[0].replace("notes", "ghost") == texts[1]
    assert "personal document" not in texts[0]


@pytest.mark.process
def test_the_fast_path_read_says_missing_too(vault: Vault, bob_notes: str, aibuddy_exe: list[str]) -> None:
    env = child_env(vault.root, "alice")
    for doc in (bob_notes, "personal/bob/ghost"):
        for args in (("kb", "read", doc, "notes", "--json"), ("kb", "read", f"{doc}#notes")):
            result = run_aibuddy(aibuddy_exe, *args, env=env)
            assert result.returncode == 3, result.stderr
            assert f"no document {doc!r}" in (result.stdout + result.stderr).decode()


def attach_by_hand(vault: Vault, task: str, docs: list[str]) -> None:
    """What editing task.json by hand does: references the CLI would refuse."""
    path = vault.root / "tasks" / "alice" / task / "task.json"
    data = json.loads(path.read_text())
    data["attached"] = docs
    path.write_text(json.dumps(data))


def test_map_and_task_context_give_no_reason_that_tells_existing_from_missing(
    cli, vault: Vault, bob_notes: str, alice_task: str
) -> None:
    attach_by_hand(vault, alice_task, [bob_notes, "personal/bob/ghost"])
    unavailable = ok(cli("--user", "alice", "kb", "map", "--task", alice_task, "--json"))["unavailable"]
    context = ok(cli("--user", "alice", "task", "context", alice_task, "--json"))["unavailable_documents"]
    for listing in (unavailable, context):
        assert listing == [
            {"doc": bob_notes, "reason": f"no document {bob_notes!r}"},
            {"doc": "personal/bob/ghost", "reason": "no document 'personal/bob/ghost'"},
        ]
    text = cli("--user", "alice", "kb", "map", "--task", alice_task).stdout
    assert "personal document" not in text and "Bob's private" not in text


@pytest.mark.process
def test_kb_ask_tools_answer_a_foreign_document_as_a_missing_one(
    vault: Vault, tmp_path: Path, bob_notes: str, alice_task: str, fake_openai: FakeOpenAI, model_env
) -> None:
    admin = Session(vault, "demo", environ={}).knowledge
    (guide,) = [
        o.doc
        for o in admin.import_paths([str(write(tmp_path, "guide.md", "# Guide\n\nplans\n"))], scope="system")
    ]
    admin.publish(guide)
    attach_by_hand(vault, alice_task, [guide, bob_notes])
    calls = []
    for doc in (bob_notes, "personal/bob/ghost"):
        calls += [("read_doc", {"doc": doc}), ("read_section", {"doc": doc, "anchor": "notes"})]
    fake_openai.call_tools(*calls)
    fake_openai.reply_json({"answer": "nothing", "citations": [], "gaps": ["salary"]})
    KnowledgeAgent(Session(Vault.open(vault.root), "alice", environ=model_env).knowledge, alice_task).ask(
        "what are bob's notes?"
    )
    results = [
        json.loads(m["content"]) for m in fake_openai.requests[1]["body"]["messages"] if m["role"] == "tool"
    ]
    assert results == [
        {"error": f"no document {bob_notes!r}"},
        {"error": f"no document {bob_notes!r}"},
        {"error": "no document 'personal/bob/ghost'"},
        {"error": "no document 'personal/bob/ghost'"},
    ]


@pytest.fixture
def proposal(cli, tmp_path: Path) -> str:
    """carol's pending proposal system/plan, which only she and the admin (demo) may know of."""
    report = ok(
        cli(
            "--user",
            "carol",
            "kb",
            "import",
            str(write(tmp_path, "plan.md", PLAN)),
            "--scope",
            "system",
            "--json",
        )
    )
    assert report["files"][0]["doc"] == "system/plan"
    return "system/plan"


def listed(cli, user: str, status: str) -> list[str]:
    return [
        d["doc"] for d in ok(cli("--user", user, "kb", "list", "--status", status, "--json"))["documents"]
    ]


def test_pending_system_proposals_are_listed_to_admins_and_their_proposer_only(
    cli, proposal: str, bob_notes: str
) -> None:
    for status in ("pending", "all"):
        assert proposal in listed(cli, "demo", status)
        assert proposal in listed(cli, "carol", status)
        assert proposal not in listed(cli, "bob", status)
    for args in (
        ("kb", "search", "reorganisation"),
        ("kb", "search", "reorganisation", "--status", "pending"),
    ):
        assert ok(cli("--user", "bob", *args, "--json"))["hits"] == []
    assert ok(cli("--user", "demo", "kb", "search", "reorganisation", "--status", "pending", "--json"))[
        "hits"
    ]


@pytest.mark.parametrize(
    "command",
    [
        ("kb", "show", "{doc}"),
        ("kb", "outline", "{doc}"),
        ("kb", "outline", "{doc}", "--status", "pending"),
        ("kb", "read", "{doc}", "plan", "--status", "pending"),
        ("task", "attach", "{task}", "{doc}"),
        ("kb", "publish", "{doc}"),
        ("kb", "reject", "{doc}"),
    ],
)
def test_a_proposal_one_may_not_see_is_as_missing_as_one_that_does_not_exist(
    cli, vault: Vault, proposal: str, command: tuple[str, ...]
) -> None:
    task = Session(vault, "bob").tasks.new("t").id
    for doc in (proposal, "system/nothing-here"):
        args = [part.format(doc=doc, task=task) for part in command]
        assert_missing(cli("--user", "bob", *args, "--json"), doc)
    assert ok(cli("--user", "carol", "kb", "show", proposal, "--json"))["title"] == "Plan"


def test_importing_the_same_content_does_not_reveal_a_proposal(cli, tmp_path: Path, proposal: str) -> None:
    (tmp_path / "copy").mkdir()
    copy = write(tmp_path / "copy", "plan-copy.md", PLAN)
    report = ok(cli("--user", "bob", "kb", "import", str(copy), "--json"))
    assert report["files"][0]["status"] == "imported"  # not "same content as system/plan"
    assert proposal not in json.dumps(report)


def test_a_hidden_pending_version_leaves_the_published_one_visible(cli, vault: Vault, tmp_path: Path) -> None:
    ok(
        cli(
            "kb",
            "import",
            str(write(tmp_path, "guide.md", "# Guide\n\nversion one\n")),
            "--scope",
            "system",
            "--json",
        )
    )
    ok(cli("kb", "publish", "guide", "--json"))
    # A new version put into pending/ by hand: no proposer is known, so only admins see it.
    (vault.root / "knowledge/system/pending/guide.md").write_text("# Guide\n\nversion two\n")
    assert ok(cli("kb", "show", "guide", "--json"))["status"] == "pending"  # the admin's view
    shown = cli("--user", "bob", "kb", "show", "guide", "--json")
    assert ok(shown)["status"] == "ready" and "pending" not in shown.stderr
    assert ok(cli("--user", "bob", "kb", "read", "guide", "guide", "--json"))["text"].endswith(
        "version one\n"
    )


def test_a_file_dropped_into_system_pending_is_not_revealed_to_whoever_runs_a_command_first(
    cli, vault: Vault
) -> None:
    dropped = vault.root / "knowledge/system/pending/layoffs.md"
    dropped.write_text("# Layoffs\n\nlist\n")
    bob = cli("--user", "bob", "kb", "list", "--json")
    assert "layoffs" not in bob.stdout + bob.stderr
    assert_missing(cli("--user", "bob", "kb", "show", "layoffs", "--json"), "layoffs")
    assert "system/layoffs" in listed(cli, "demo", "pending")


# --- the service alone ---------------------------------------------------------------------


def test_refresh_warnings_never_name_other_users_documents(kvault: Vault) -> None:
    secret = kvault.root / "knowledge/personal/alice/pending/acme-merger-plan.md"
    secret.parent.mkdir(parents=True)
    secret.write_text("# Merger\n")
    bob = kb(kvault, "bob")
    bob.documents()
    assert not any("acme" in w for w in bob.warnings)
    alice = kb(kvault, "alice")
    alice.documents()  # already reconciled by bob's refresh: nothing new to say, and no leak
    assert [d.ref.qualified for d in alice.documents("pending")] == ["personal/alice/acme-merger-plan"]


def test_pending_system_documents_are_seen_by_reviewers_and_their_proposer_only(
    kvault: Vault, tmp_path: Path
) -> None:
    carol = kb(kvault, "carol")
    (proposal,) = [
        o.doc
        for o in carol.import_paths([str(write(tmp_path, "plan.md", "# Plan\n\nsecret\n"))], scope="system")
    ]
    assert carol.show(proposal)[1].title == "Plan"
    assert kb(kvault, "alice").body(proposal)[1] == b"# Plan\n\nsecret\n"
    bob = kb(kvault, "bob")
    for action in (lambda: bob.show(proposal), lambda: bob.body(proposal)):
        with pytest.raises(NotFound, match="no document"):
            action()
