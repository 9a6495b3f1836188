from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from helpers import record_path as record_file
from helpers import write_record_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Conflict, InvalidInput, MalformedRecord, NotFound, UsageError
from aibuddy_cli.memory.records import MemoryRecord, parse_record, render_record
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


def test_save_creates_a_manual_record_and_refuses_an_existing_name(
    memory: MemoryService, vault: Vault
) -> None:
    record = memory.save("tea", type="user", description="Drinks green tea", body="No sugar.\n")
    assert record.provenance == "manual" and record.recall_count == 0 and record.created == record.updated
    assert record_file(vault, "tea").read_text().startswith("---\nname: tea\ndescription: Drinks green tea\n")
    before = record_file(vault, "tea").read_bytes()
    with pytest.raises(Conflict, match="memory update tea"):
        memory.save("tea", type="user", description="Other", body="")
    assert record_file(vault, "tea").read_bytes() == before


@pytest.mark.parametrize(
    "name, kind, description",
    [
        ("../escape", "user", "d"),
        ("a/b", "user", "d"),
        ("Tea", "user", "d"),
        ("ok", "opinion", "d"),
        ("ok", "user", ""),
    ],
)
def test_invalid_input_writes_nothing(
    memory: MemoryService, vault: Vault, name: str, kind: str, description: str
) -> None:
    with pytest.raises(InvalidInput):
        memory.save(name, type=kind, description=description, body="b")
    assert not list((vault.root / "memory").rglob("*.md"))
    assert not (vault.root.parent / "escape.md").exists()


def test_update_keeps_identity_provenance_and_telemetry(memory: MemoryService, vault: Vault) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="No sugar.\n")
    memory.recall("green tea")
    # Pretend the record was written by automatic extraction: update must keep that too.
    path = record_file(vault, "tea")
    path.write_text(path.read_text().replace("provenance: manual", "provenance: auto"))
    before = memory.show("tea")
    result = memory.update("tea", description="Drinks green or white tea", type="feedback")
    after = result.record
    assert result.changed
    assert (after.name, after.provenance, after.created) == ("tea", "auto", before.created)
    assert (after.recall_count, after.last_recalled_at) == (1, before.last_recalled_at)
    assert (after.description, after.type, after.body) == (
        "Drinks green or white tea",
        "feedback",
        "No sugar.\n",
    )
    assert memory.show("tea") == after


def test_an_update_that_changes_nothing_leaves_the_file_byte_identical(
    memory: MemoryService, vault: Vault
) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="No sugar.\n")
    before = record_file(vault, "tea").read_bytes()
    result = memory.update("tea", description="Drinks green tea", body="No sugar.\n")
    assert not result.changed
    assert record_file(vault, "tea").read_bytes() == before
    with pytest.raises(UsageError):
        memory.update("tea")
    with pytest.raises(NotFound):
        memory.update("coffee", description="x")


def test_delete_and_show(memory: MemoryService) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="")
    assert memory.show("tea").description == "Drinks green tea"
    memory.delete("tea")
    with pytest.raises(NotFound):
        memory.show("tea")
    with pytest.raises(NotFound):
        memory.delete("tea")
    assert memory.list_records().records == []


def test_users_never_see_each_other(vault: Vault) -> None:
    alice = Session(vault, "alice", environ={}).memory
    bob = Session(vault, "bob", environ={}).memory
    alice.save("secret-plan", type="project", description="Alice's launch codename is Falcon", body="Falcon")
    bob.save("tea", type="user", description="Bob drinks tea", body="")
    assert [r.record.name for r in bob.list_records().records] == ["tea"]
    assert bob.recall("launch codename Falcon").records == []
    assert [line.name for line in bob.manifest("Falcon").lines] == ["tea"]
    with pytest.raises(NotFound):
        bob.show("secret-plan")
    assert bob.clear() == ("bob", ["tea"], [])
    assert [r.record.name for r in alice.list_records().records] == ["secret-plan"]


def test_lexical_recall_ranks_english_and_chinese_and_counts_the_recall(memory: MemoryService) -> None:
    memory.save(
        "weekly-report",
        type="feedback",
        description="Use a concise format for every weekly report",
        body="Five bullets.",
    )
    memory.save(
        "zh-report", type="feedback", description="周报要简洁", body="周报格式：三段式，每段不超过三行。"
    )
    memory.save(
        "deploy", type="project", description="Deploys go through staging first", body="Then production."
    )
    result = memory.recall("周报格式")
    assert result.method == "words+meaning"  # the characters it shares with the records (ngrams.py)
    assert [r.name for r in result.records][0] == "zh-report"
    assert "deploy" not in [r.name for r in result.records]
    english = memory.recall("format of the weekly reports")
    assert [r.name for r in english.records][0] == "weekly-report"
    assert english.records[0].body == "Five bullets."
    assert memory.show("weekly-report").recall_count == 1
    assert memory.show("weekly-report").last_recalled_at is not None


def test_recall_reads_at_most_five_bodies(memory: MemoryService) -> None:
    for i in range(8):
        memory.save(f"tea-{i}", type="user", description=f"Tea preference number {i}", body="tea")
    assert len(memory.recall("tea").records) == 5
    assert len(memory.recall("tea", limit=2).records) == 2
    assert len(memory.recall("tea", limit=50).records) == 5
    with pytest.raises(InvalidInput):
        memory.recall("   ")


def _write_raw(vault: Vault, record: MemoryRecord, mtime: float) -> None:
    path = record_file(vault, record.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_record(record))
    os.utime(path, (mtime, mtime))


def test_an_old_relevant_record_is_not_hidden_by_hundreds_of_newer_ones(
    memory: MemoryService, vault: Vault
) -> None:
    now = time.time()
    _write_raw(
        vault,
        MemoryRecord(
            name="rollback-runbook",
            description="Kubernetes rollback runbook for the payments service",
            type="reference",
            body="kubectl rollout undo deployment/payments",
        ),
        now - 400 * 86400,
    )
    for i in range(300):
        _write_raw(
            vault,
            MemoryRecord(
                name=f"note-{i:03d}",
                description=f"Meeting note {i} about budgets",
                type="project",
                body="budget",
            ),
            now - i * 60,
        )
    manifest = memory.manifest("kubernetes rollback").lines
    assert len(manifest) == 200
    assert "rollback-runbook" in [line.name for line in manifest]
    assert "rollback-runbook" not in [
        line.name for line in memory.manifest().lines
    ]  # only by recency: hidden
    assert (
        memory.recall("how do I roll back kubernetes? rollback runbook").records[0].name == "rollback-runbook"
    )


def test_the_index_follows_edits_deletions_and_new_files_behind_its_back(
    memory: MemoryService, vault: Vault
) -> None:
    memory.save("timetable", type="user", description="Checks the bus timetable", body="")
    assert memory.recall("coffee").records == []
    path = record_file(vault, "timetable")
    path.write_text(path.read_text().replace("Checks the bus timetable", "Drinks black coffee"))
    assert [r.name for r in memory.recall("coffee").records] == ["timetable"]
    shutil.copy(path, record_file(vault, "espresso"))  # e.g. arrived with a git pull
    text = record_file(vault, "espresso").read_text().replace("name: timetable", "name: espresso")
    record_file(vault, "espresso").write_text(text)
    assert sorted(r.record.name for r in memory.list_records().records) == ["espresso", "timetable"]
    path.unlink()
    assert [r.record.name for r in memory.list_records().records] == ["espresso"]
    shutil.rmtree(vault.cache_dir)  # the cache is disposable
    assert [r.name for r in memory.recall("coffee").records] == ["espresso"]


def test_a_corrupt_index_is_rebuilt(memory: MemoryService, vault: Vault) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="")
    memory.list_records()
    vault.memory_index_path("demo").write_bytes(b"this is not a database" * 100)
    fresh = Session(vault, "demo", environ={}).memory
    assert [r.record.name for r in fresh.list_records().records] == ["tea"]


def test_malformed_records_are_reported_skipped_and_never_rewritten(
    memory: MemoryService, vault: Vault
) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    folder = vault.root / "memory" / "demo"
    broken = {
        "broken-yaml.md": "---\nname: [tea\n---\ntea\n",
        "missing-keys.md": "---\nname: missing-keys\n---\ntea\n",
        "twice.md": (
            "---\nname: twice\ndescription: tea\ntype: user\n---\n"
            "---\nname: twice\ndescription: tea\n---\ntea\n"
        ),
        "Bad Name.md": "---\nname: Bad Name\ndescription: tea\ntype: user\n---\ntea\n",
    }
    for filename, text in broken.items():
        (folder / filename).write_text(text)
    listed = memory.list_records()
    assert [r.record.name for r in listed.records] == ["tea"]
    assert sorted(p.name for p in listed.problems) == sorted(f[:-3] for f in broken)
    result = memory.recall("tea")
    assert [r.name for r in result.records] == ["tea"]
    assert len(result.problems) == 4
    assert [line.name for line in memory.manifest("tea").lines] == ["tea"]
    for filename, text in broken.items():
        assert (folder / filename).read_text() == text
    with pytest.raises(MalformedRecord, match="duplicate frontmatter"):
        memory.show("twice")


def test_recall_on_a_read_only_vault_still_answers(
    memory: MemoryService, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="tea")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(memory.store, "write", refuse)
    result = memory.recall("tea")
    assert [r.name for r in result.records] == ["tea"]
    assert any("could not record the recall" in w for w in result.warnings)


def test_clear_removes_only_this_users_records(vault: Vault) -> None:
    alice = Session(vault, "alice", environ={}).memory
    bob = Session(vault, "bob", environ={}).memory
    for i in range(3):
        alice.save(f"a-{i}", type="user", description="alice", body="")
    bob.save("b", type="user", description="bob", body="")
    assert alice.clear() == ("alice", ["a-0", "a-1", "a-2"], [])
    assert alice.list_records().records == []
    assert [r.record.name for r in bob.list_records().records] == ["b"]


@pytest.mark.parametrize(
    "stamp", ["2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "٢٠٢٦-01-01T00:00:00Z"]
)
def test_impossible_dates_make_a_record_malformed_not_a_crash(
    memory: MemoryService, vault: Vault, stamp: str
) -> None:
    header = f"name: odd\ndescription: d\ntype: user\ncreated: {stamp}\n"
    write_record_file(vault, "odd", f"---\n{header}---\nbody\n")
    memory.save("fine", type="user", description="fine", body="")
    listed = memory.list_records()
    assert [r.record.name for r in listed.records] == ["fine"] and [p.name for p in listed.problems] == [
        "odd"
    ]
    with pytest.raises(MalformedRecord):
        memory.show("odd")


@pytest.mark.parametrize(
    "header",
    [
        "recallCount:\n  3\nlastRecalledAt: null\n",  # value on a continuation line
        "recallCount: 3\rowner: alice\nlastRecalledAt: null\n",  # an old Mac line break inside
        # a telemetry key inside a quoted value
        'description2: "two\nrecallCount: 9"\nrecallCount: 1\nlastRecalledAt: null\n',
    ],
)
def test_a_recall_never_corrupts_or_drops_part_of_a_header(
    memory: MemoryService, vault: Vault, header: str
) -> None:
    path = write_record_file(
        vault, "tea", f"---\nname: tea\ndescription: Drinks green tea\ntype: user\n{header}---\ntea body\n"
    )
    before = parse_record("tea", path.read_bytes().decode())
    assert [r.name for r in memory.recall("green tea").records] == ["tea"]
    after = parse_record("tea", path.read_bytes().decode())
    assert after.recall_count == before.recall_count + 1
    assert after.extra == before.extra and after.body == before.body


def test_a_body_that_starts_with_its_own_frontmatter_is_refused(memory: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="frontmatter"):
        memory.save(
            "post", type="project", description="x", body="---\ntitle: T\ndescription: Q3\n---\n# Notes\n"
        )
    memory.save("post", type="project", description="x", body="Intro\n---\ntitle: T\n---\n")


def test_clear_goes_on_past_a_file_it_cannot_remove(
    memory: MemoryService, vault: Vault, tmp_path: Path
) -> None:
    for name in ("a", "b"):
        memory.save(name, type="user", description=name, body="")
    outside = tmp_path / "outside.md"
    outside.write_text("keep me")
    os.symlink(outside, vault.root / "memory" / "demo" / "link.md")
    _, removed, problems = memory.clear()
    assert removed == ["a", "b"] and len(problems) == 1 and "symlink" in problems[0]
    assert outside.read_text() == "keep me"


def test_a_damaged_index_is_rebuilt_wherever_the_damage_is(memory: MemoryService, vault: Vault) -> None:
    for i in range(60):
        memory.save(
            f"note-{i}", type="project", description=f"Note {i} about kubernetes", body="kubernetes " * 50
        )
    memory.recall("kubernetes")
    index = vault.memory_index_path("demo")
    fresh = Session(vault, "demo", environ={}).memory
    fresh.list_records()
    fresh._index.close()
    for page in (3, 5, 7, 8):
        with open(index, "r+b") as handle:
            handle.seek(page * 4096)
            handle.write(b"\xde\xad" * 1000)
    again = Session(vault, "demo", environ={}).memory
    assert len(again.recall("kubernetes").records) == 5
    assert len(again.list_records().records) == 60


def test_a_timestamp_far_in_the_future_does_not_break_the_index(memory: MemoryService, vault: Vault) -> None:
    memory.save("far", type="user", description="far", body="")
    os.utime(vault.root / "memory" / "demo" / "far.md", (300000000000, 300000000000))
    assert [r.record.name for r in memory.list_records().records] == ["far"]
    listed = Session(vault, "demo", environ={}).memory.list_records().records
    assert [r.record.name for r in listed] == ["far"]
