"""Document summaries start on import and re-ingest without the import waiting for the model;
a summary lands on the version it describes, and only there."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import in_vault, run_aibuddy

from aibuddy_cli.app.session import Session
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.knowledge.service import KnowledgeService
from aibuddy_cli.knowledge.summaries import SummaryOutcome
from aibuddy_cli.models import worker
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault

GUIDE = "# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback`.\n"


def sidecar(vault: Vault, status: str, doc: str = "guide") -> dict:
    return json.loads((vault.root / f"knowledge/system/{status}/{doc}.meta.json").read_text())


def starting_summaries(vault: Vault, environ: dict[str, str], started: list[list[str]]) -> KnowledgeService:
    """A session's knowledge service, but summaries are started by appending to started."""
    session = Session(vault, "demo", environ=environ)
    return KnowledgeService(
        vault, "demo", store=session.store, settings=Settings.read(environ), tasks=session.tasks,
        warnings=session.warnings, start_summaries=started.append,
    )


def test_import_and_reingest_start_summaries_when_a_summary_model_is_configured(
    vault: Vault, tmp_path: Path
) -> None:
    started: list[list[str]] = []
    source = tmp_path / "guide.md"
    source.write_text(GUIDE)
    environ = {"AIBUDDY_MODEL_SUMMARY": "openai/summary-test"}
    service = starting_summaries(vault, environ, started)
    outcomes = service.import_paths([str(source), str(tmp_path / "missing.md")], scope="system")
    assert started == [["system/guide"]] and outcomes[0].status == "failed"
    assert service.import_paths([str(source)], scope="system")[0].status == "duplicate"
    assert started == [["system/guide"]]  # nothing new, nothing to summarise
    source.write_text(GUIDE + "\n## Forward fix\n\nShip a patch.\n")
    service.reingest("guide")
    assert started == [["system/guide"], ["system/guide"]]
    quiet = starting_summaries(vault, {}, started)
    source.write_text(GUIDE + "\nv3\n")
    quiet.reingest("guide")
    assert len(started) == 2  # no summary model: no summary job


@pytest.mark.process
def test_a_pending_versions_summary_is_kept_beside_a_ready_version(
    vault: Vault, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    source = tmp_path / "guide.md"
    source.write_text(GUIDE)
    service = Session(vault, "demo", environ={}).knowledge
    service.publish(service.import_paths([str(source)], scope="system")[0].doc)
    # A new version proposed beside the published one (dropped into pending/).
    (vault.root / "knowledge/system/pending/guide.md").write_text(GUIDE + "\n## Forward fix\n\nPatch.\n")
    environ = {"AIBUDDY_MODEL_SUMMARY": "openai/summary-test", "AIBUDDY_TIMEOUT": "30"}
    fake_openai.enqueue(content="How to roll back and when to patch forward.")
    results = Session(vault, "demo", environ=environ).knowledge.summarize(["system/guide"])
    assert results == [
        SummaryOutcome("system/guide", True, summary="How to roll back and when to patch forward.")
    ]
    assert sidecar(vault, "pending")["summary"] == "How to roll back and when to patch forward."
    assert sidecar(vault, "ready")["summary"] is None


@pytest.mark.process
def test_a_failed_or_stale_summary_leaves_the_document_as_it_was_and_says_why(
    vault: Vault, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    source = tmp_path / "guide.md"
    source.write_text(GUIDE)
    Session(vault, "demo", environ={}).knowledge.import_paths([str(source)], scope="system")
    environ = {"AIBUDDY_MODEL_SUMMARY": "openai/summary-test", "AIBUDDY_TIMEOUT": "30"}
    service = Session(vault, "demo", environ=environ).knowledge
    fake_openai.enqueue(status=500)
    (failed,) = service.summarize(["system/guide"])
    assert failed.doc == "system/guide" and failed.summarized is False and failed.summary is None
    assert list(to_json(failed)) == ["doc", "summarized", "reason"]
    assert to_json(failed)["reason"] == failed.reason
    (warning,) = service.warnings
    assert warning == f"system/guide: {failed.reason}; summary left as it was"
    assert sidecar(vault, "pending")["summary"] is None
    ref, _ = service.show("system/guide")
    stale = service.summaries.store_summary(ref, "0" * 64, "stale")
    assert to_json(stale) == {"doc": "system/guide", "summarized": False, "reason": "document changed"}
    assert sidecar(vault, "pending")["summary"] is None
    kept = service.summaries.store_summary(ref, sidecar(vault, "pending")["sha256"], "Rolling back.")
    assert list(to_json(kept).items()) == [
        ("doc", "system/guide"),
        ("summarized", True),
        ("summary", "Rolling back."),
    ]
    assert sidecar(vault, "pending")["summary"] == "Rolling back."


@pytest.mark.process
def test_the_import_does_not_wait_for_the_summary_which_lands_later(
    vault: Vault,
    tmp_path: Path,
    warm_worker: tuple[FakeOpenAI, dict[str, str]],
    aibuddy_exe: list[str],
) -> None:
    """A real `kb import`, whose background child asks the pytest process's warm model worker (a
    litellm import in the child would cost seconds of CPU; the worker is not the subject here)."""
    fake_openai, worker_env = warm_worker
    source = tmp_path / "guide.md"
    source.write_text(GUIDE)
    release = threading.Event()
    fake_openai.enqueue(content="How to roll back a deploy.", hold=release)
    calls = worker.status(worker_env).calls
    env = in_vault(worker_env, vault.root, AIBUDDY_MODEL_SUMMARY="openai/summary-test", AIBUDDY_TIMEOUT="60")
    try:
        imported = run_aibuddy(
            aibuddy_exe, "kb", "import", str(source), "--scope", "system", "--json", env=env
        )
        # The import has answered while the model still holds its reply.
        assert imported.returncode == 0, imported.stderr
        assert json.loads(imported.stdout)["imported"] == 1
        assert sidecar(vault, "pending")["summary"] is None
    finally:
        release.set()
    deadline = time.monotonic() + 90
    while sidecar(vault, "pending")["summary"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    meta = sidecar(vault, "pending")
    assert meta["summary"] == "How to roll back a deploy." and meta["summary_sha256"] == meta["sha256"]
    log = vault.cache_dir / "logs" / "summaries.jsonl"
    deadline = time.monotonic() + 60  # generous: an event, not a timing
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    entry = json.loads(log.read_text().splitlines()[-1])
    assert entry["doc"] == "system/guide" and entry["summarized"] is True
    assert worker.status(worker_env).calls == calls + 1  # the summary came through the worker
