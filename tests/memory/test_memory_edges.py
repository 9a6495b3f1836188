"""Memory records at their edges (each case a bug a review found): a recallCount past SQLite's
integers is a malformed record, not a crash of every read; a recall at the largest count keeps it;
the two header readers agree on a key longer than YAML allows."""

from __future__ import annotations

from helpers import write_record_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import MalformedRecord
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault

SQLITE_MAX = 2**63 - 1


def header(name: str, *lines: str) -> str:
    head = ["---", f"name: {name}", "description: Drinks green tea", "type: user"]
    return "\n".join([*head, *lines, "---", "b\n"])


def names(listed) -> list[str]:  # noqa: ANN001
    return [item.record.name for item in listed.records]


def test_a_recall_count_past_sqlite_integers_is_reported_not_a_crash_of_every_read(
    memory: MemoryService, vault: Vault
) -> None:
    """A hand-written (or merged) recallCount larger than SQLite's INTEGER is a malformed record,
    reported by name, while every other record is listed and recalled (it crashed every read)."""
    memory.save("coffee", type="user", description="Drinks coffee", body="")
    write_record_file(vault, "huge", header("huge", f"recallCount: {SQLITE_MAX + 1}"))
    listed = memory.list_records()
    assert "coffee" in names(listed)
    assert "huge" in names(listed) or "huge" in [p.name for p in listed.problems]
    assert memory.recall("coffee").records[0].name == "coffee"


def test_a_recall_of_a_record_at_the_largest_count_does_not_break_the_index(
    memory: MemoryService, vault: Vault
) -> None:
    """recallCount 2**63-1 stays there on a recall: the file and the index stay good (the recall
    wrote 2**63, then every list of the user failed)."""
    write_record_file(vault, "tea", header("tea", f"recallCount: {SQLITE_MAX}"))
    assert names(memory.list_records()) == ["tea"]
    result = memory.recall("green tea")
    assert [record.name for record in result.records] == ["tea"]
    fresh = Session(Vault.open(vault.root), "demo", environ={}).memory
    listed = fresh.list_records()
    assert "tea" in names(listed) or "tea" in [p.name for p in listed.problems]


def test_list_and_show_agree_on_a_header_key_longer_than_yaml_allows(
    memory: MemoryService, vault: Vault
) -> None:
    """A hand-added key longer than YAML's simple keys (1,024 characters) is judged by YAML on every
    path: `list` and `show` agree that the record is malformed."""
    write_record_file(vault, "long", header("long", "k" * 1100 + ": v"))
    listed = "long" in names(memory.list_records())
    try:
        memory.show("long")
        shown = True
    except MalformedRecord:
        shown = False
    assert listed == shown, f"list says {'well-formed' if listed else 'malformed'}, show the opposite"
