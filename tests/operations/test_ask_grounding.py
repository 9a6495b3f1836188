"""`kb ask` stays grounded: with nothing to consult it makes no model call, and a model answer
that cites nothing it read is never passed off as coming from the user's documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from aibuddy_cli.app.session import Session
from aibuddy_cli.operations.loops.kb_ask import KnowledgeAgent
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.process  # every test here starts a process or a server

DEPLOY = "# Deploy guide\n\n## Rollback\n\nTo roll back, run `deployctl rollback --to previous`.\n"


@pytest.fixture
def deploy(vault: Vault, tmp_path: Path) -> str:
    path = tmp_path / "deploy.md"
    path.write_text(DEPLOY)
    service = Session(vault, "demo", environ={}).knowledge
    (doc,) = [o.doc for o in service.import_paths([str(path)], scope="system")]
    return doc


def agent(vault: Vault, task: str, environ: dict[str, str]) -> KnowledgeAgent:
    return KnowledgeAgent(Session(Vault.open(vault.root), "demo", environ=environ).knowledge, task)


@pytest.mark.parametrize("attach", ["nothing", "pending", "detached"])
def test_nothing_to_consult_means_no_model_call(
    cli,
    vault: Vault,
    deploy: str,
    fake_openai: FakeOpenAI,
    model_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    attach: str,
) -> None:
    for name, value in model_env.items():
        monkeypatch.setenv(name, value)
    tasks = Session(vault, "demo").tasks
    tasks.new("Ops")
    if attach != "nothing":
        tasks.set_attached("t1", {deploy: True})  # still pending: not usable
    if attach == "detached":
        Session(vault, "demo", environ={}).knowledge.publish(deploy)
        tasks.set_attached("t1", {deploy: False})
    fake_openai.reply_json({"answer": "Use kubectl rollout undo.", "citations": [], "gaps": []})
    result = cli("kb", "ask", "How do I roll back?", "--task", "t1", "--json")
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert fake_openai.requests == []
    assert answer["citations"] == [] and answer["gaps"] == ["How do I roll back?"]
    assert "nothing to consult" in answer["answer"] and "kubectl" not in answer["answer"]


@pytest.fixture
def ops_task(vault: Vault, deploy: str) -> str:
    """Task t1 with the published deploy guide attached."""
    Session(vault, "demo", environ={}).knowledge.publish(deploy)
    tasks = Session(vault, "demo").tasks
    tasks.new("Ops")
    tasks.set_attached("t1", {deploy: True})
    return "t1"


def test_a_model_answer_without_citations_falls_back_to_excerpts(
    vault: Vault, deploy: str, ops_task: str, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    fake_openai.reply_json(
        {"answer": "Use kubectl rollout undo (general knowledge).", "citations": [], "gaps": []}
    )
    ask = agent(vault, ops_task, model_env)
    result = ask.ask("How do I roll back?")
    assert result.method == "extractive" and "kubectl" not in result.answer
    assert [(c.doc, c.anchor) for c in result.citations] == [(deploy, "rollback")]
    assert any("cites no section it read" in w for w in ask.warnings)


def test_a_model_answer_citing_only_unread_sections_falls_back_too(
    vault: Vault, deploy: str, ops_task: str, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    fake_openai.reply_json(
        {
            "answer": "Use kubectl rollout undo.",
            "citations": [{"doc": deploy, "anchor": "rollback"}],
            "gaps": [],
        }
    )
    result = agent(vault, ops_task, model_env).ask("quokka migration plan")
    assert result.method == "extractive" and "kubectl" not in result.answer
    assert result.gaps == ["quokka migration plan"]  # the documents do not cover it
    assert result.dropped_citations == [{"doc": deploy, "anchor": "rollback"}]
