"""Recall through the real litellm client against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import io
import json

import pytest
from fake_openai import FakeOpenAI

from aibuddy_cli.app.session import Session
from aibuddy_cli.cli import fastpath
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.process  # every test here starts a process or a server


@pytest.fixture
def stocked(vault: Vault, model_env: dict[str, str]) -> MemoryService:
    memory = Session(vault, "demo", environ=model_env).memory
    memory.save(
        "weekly-report",
        type="feedback",
        description="Use a concise format for every weekly report",
        body="SECRET-BODY five bullets",
    )
    memory.save("deploy", type="project", description="Deploys go through staging first", body="staging")
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    return memory


def test_the_model_selects_from_manifest_lines_and_never_sees_bodies(
    stocked: MemoryService, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply_json({"selected": ["deploy.md", "tea"]})
    result = stocked.recall("how do we ship?")
    assert result.method == "model"
    assert [r.name for r in result.records] == ["deploy", "tea"]
    assert stocked.show("deploy").recall_count == 1 and stocked.show("weekly-report").recall_count == 0
    request = fake_openai.requests[-1]["body"]
    assert request["model"] == "test-model"
    prompt = json.dumps(request["messages"])
    assert "[project] deploy.md (" in prompt and "Deploys go through staging first" in prompt
    assert "SECRET-BODY" not in prompt


def test_names_outside_the_manifest_are_dropped(
    vault: Vault, stocked: MemoryService, fake_openai: FakeOpenAI
) -> None:
    Session(vault, "bob", environ={}).memory.save(
        "bob-secret", type="user", description="Bob's secret", body="BOB"
    )
    fake_openai.reply_json(
        {"selected": ["../bob/bob-secret.md", "bob-secret.md", "/etc/passwd", "invented.md", 42, "tea.md"]}
    )
    result = stocked.recall("anything")
    assert result.method == "model"
    assert [r.name for r in result.records] == ["tea"]
    assert "../bob/bob-secret.md" in result.dropped and "bob-secret.md" in result.dropped
    assert all("BOB" not in r.body for r in result.records)


def test_more_than_five_names_are_cut_to_five(
    vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    memory = Session(vault, "demo", environ=model_env).memory
    for i in range(8):
        memory.save(f"n-{i}", type="user", description=f"note {i}", body="")
    fake_openai.reply_json({"selected": [f"n-{i}.md" for i in range(8)]})
    result = memory.recall("notes")
    assert [r.name for r in result.records] == [f"n-{i}" for i in range(5)]


@pytest.mark.parametrize(
    "behaviour, warning",
    [
        ({"content": "Sure! The relevant ones are weekly-report and deploy."}, "no JSON"),
        ({"content": '{"selected": "weekly-report.md"}'}, '"selected"'),
        ({"content": '{"selected": ["../../etc/passwd"]}'}, "named no record"),
        ({"status": 500}, "failed"),
        ({"raw": b"<html>not json</html>"}, "failed"),
    ],
)
def test_model_failures_fall_back_to_lexical_ranking(
    stocked: MemoryService, fake_openai: FakeOpenAI, behaviour: dict, warning: str
) -> None:
    fake_openai.enqueue(**behaviour)
    result = stocked.recall("weekly report format")
    assert result.method == "words+meaning"
    assert [r.name for r in result.records] == ["weekly-report"]
    assert any(warning in w and "lexical" in w for w in result.warnings), result.warnings


def test_a_model_timeout_falls_back(
    vault: Vault, stocked: MemoryService, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    memory = Session(vault, "demo", environ={**model_env, "AIBUDDY_TIMEOUT": "1"}).memory
    fake_openai.enqueue(content='{"selected": ["tea.md"]}', delay=4)
    result = memory.recall("weekly report format")
    assert result.method == "words+meaning"
    assert [r.name for r in result.records] == ["weekly-report"]
    assert any("timed out" in w for w in result.warnings), result.warnings
    assert len(fake_openai.requests) == 1  # no silent retries


def test_an_empty_selection_is_respected(stocked: MemoryService, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply_json({"selected": []})
    result = stocked.recall("weekly report")
    assert (result.method, result.records) == ("model", [])


def test_api_base_and_role_model_from_the_vault_config(
    vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = (
        (vault.root / "aibuddy.toml")
        .read_text()
        .replace(
            "timeout = 20", f'recall = "openai/from-config"\napi_base = "{fake_openai.url}"\ntimeout = 5'
        )
    )
    (vault.root / "aibuddy.toml").write_text(config)
    memory = Session(Vault.open(vault.root), "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="")
    fake_openai.reply_json({"selected": ["tea.md"]})
    assert memory.recall("drinks").method == "model"
    assert fake_openai.requests[-1]["body"]["model"] == "from-config"
    off = Session(Vault.open(vault.root), "demo", environ={"AIBUDDY_MODEL_RECALL": "none"}).memory
    before = len(fake_openai.requests)
    assert off.recall("drinks").method == "words+meaning"
    assert len(fake_openai.requests) == before


def test_cli_json_stays_one_document_when_the_model_fails(
    cli,
    stocked: MemoryService,
    fake_openai: FakeOpenAI,
    model_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in model_env.items():
        monkeypatch.setenv(key, value)
    fake_openai.enqueue(status=500)
    result = cli("memory", "recall", "weekly report", "--json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["method"] == "words+meaning" and document["records"][0]["name"] == "weekly-report"
    assert "lexical ranking instead" in result.stderr
    # Said once on stderr, as the JSON lists it; the fast path says it the same way.
    assert result.stderr.splitlines() == [f"warning: {w}" for w in document["warnings"]]
    fake_openai.enqueue(status=500)
    out, err = io.StringIO(), io.StringIO()
    assert fastpath.run(["memory", "recall", "weekly report", "--json"], out, err) == 0
    assert err.getvalue().splitlines() == [f"warning: {w}" for w in json.loads(out.getvalue())["warnings"]]


def test_a_recalls_warnings_go_to_the_sink_and_into_its_result(
    vault: Vault, stocked: MemoryService, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    session = Session(vault, "demo", environ=model_env)
    fake_openai.enqueue(status=500)
    result = session.memory.recall("weekly report format")
    assert result.warnings and session.take_warnings() == result.warnings
    fake_openai.reply_json({"selected": ["tea.md"]})
    assert session.memory.recall("tea").warnings == [] and session.warnings == []
