"""sample_vault/ is what newcomers see first: it must stay well-formed and realistic."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import SAMPLE_VAULT

from aibuddy_cli.app.session import Session
from aibuddy_cli.text import tokens
from aibuddy_cli.vault import Vault


def test_sample_vault_is_well_formed_and_covers_every_type(tmp_path: Path) -> None:
    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".aibuddy"))
    vault = Vault.open(copy)
    assert vault.config.default_user == "demo"
    listed = Session(vault, "demo", environ={}).memory.list_records()
    assert listed.problems == []
    records = [item.record for item in listed.records]
    assert len(records) >= 10
    assert {r.type for r in records} == {"user", "feedback", "project", "reference"}
    assert any(len(tokens(r.description)) > 0 and not r.description.isascii() for r in records)
    for folder in ("knowledge/system/pending", "knowledge/system/ready", "knowledge/personal", "tasks"):
        assert (copy / folder).is_dir()


def test_sample_vault_knowledge_covers_the_review_states(tmp_path: Path) -> None:

    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".aibuddy"))
    service = Session(Vault.open(copy), "demo", environ={}).knowledge
    docs = {d.ref.qualified: d for d in service.documents()}
    assert service.warnings == []  # every body matches its sidecar
    assert {d.ref.status for d in docs.values()} == {"pending", "ready"}
    assert any(d.ref.scope == "personal" and d.ref.status == "ready" for d in docs.values())
    assert any(not d.title.isascii() and d.ref.status == "ready" for d in docs.values())
    entries, unavailable = service.map("t1")
    assert len(entries) >= 3 and unavailable
