"""Memory that ages, at its edges: a review's ids name what applying them does, merges never drop
words, expiry headers as editors write them, and `.history` files damaged by hand, by another
editor or by git's union merge (each case a bug a review found)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import Any

import pytest
from helpers import record_path
from helpers import write_record_file as write
from memory_review_support import NOW, record

from aibuddy_cli.errors import NotFound
from aibuddy_cli.memory import expiry
from aibuddy_cli.memory.review import find_proposals, merged_body, review
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> dt.datetime:
    moment = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    monkeypatch.setattr(expiry, "now", lambda: moment)
    return moment


def history_file(vault: Vault, name: str):  # noqa: ANN201
    return vault.root / "memory" / "demo" / ".history" / f"{name}.jsonl"


def test_a_recall_between_listing_and_applying_swaps_which_duplicate_a_merge_keeps(
    vault: Vault, memory: MemoryService
) -> None:
    # Two auto records stating one fact; "tea-b" is the more recently written, so it is kept.
    write(vault, "tea-a", record("tea-a", "Drinks green tea", "user", "2025-05-01T10:00:00Z",
                                 "Sencha from Shizuoka.\n", provenance="auto"))
    write(vault, "tea-b", record("tea-b", "Drinks green tea every morning", "user", "2025-05-20T10:00:00Z",
                                 "Every morning.\n", provenance="auto"))
    (listed,) = find_proposals(memory, 100_000)[0]
    assert (listed.kind, listed.keep) == ("duplicate", "tea-b")
    # The person reads "merge tea-a into tea-b"; then a recall touches tea-a, the more recently used
    # now: applying the id read must do what it said (keep tea-b) or no longer match (exit 3).
    assert [r.name for r in memory.recall("sencha shizuoka", limit=1).records] == ["tea-a"]
    with contextlib.suppress(NotFound):
        done = review(memory, 100_000, [listed.id])
        assert done.applied[0].detail.startswith("merged tea-a into tea-b"), done.applied[0].detail
    assert record_path(vault, "tea-b").exists()


def test_a_merge_into_a_record_an_earlier_proposal_of_the_call_archived_is_skipped(
    vault: Vault, memory: MemoryService, judged: dt.datetime
) -> None:
    write(vault, "tea", record("tea", "Drinks green tea", "user", "2027-05-02T10:00:00Z", "Sencha.\n"))
    write(vault, "tea-auto", record("tea-auto", "Drinks green tea every morning", "user",
                                    "2027-05-25T10:00:00Z", "Every morning.\n", provenance="auto"))
    proposals = find_proposals(memory, unused_days=5)[0]
    merge = next(p for p in proposals if p.kind == "duplicate")
    assert merge.keep == "tea"
    archive = next(p for p in proposals if p.kind == "unused" and p.records == ("tea",))
    done = review(memory, 5, [archive.id, merge.id])
    # README: "a proposal whose records an earlier one of the same call removed or changed is skipped"
    assert [(a.id, a.outcome) for a in done.applied] == [(archive.id, "applied"), (merge.id, "skipped")]
    assert record_path(vault, "tea-auto").exists()


def test_a_merge_never_drops_a_body_that_is_only_a_substring_of_the_kept_one() -> None:
    # "No sugar." is not said by "No sugary drinks."; "Room 1" is not "Room 12".
    assert merged_body("No sugary drinks.\n", "No sugar") == "No sugary drinks.\n\nNo sugar"
    assert merged_body("Desk in room 12.\n", "room 1") != "Desk in room 12.\n"


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("written", ["''", '""', "Never", "NEVER"])
def test_an_empty_or_never_expires_means_none(fast: bool, written: str) -> None:
    from aibuddy_cli.memory.records import parse_record

    text = record("trip", "Trip to Rome", "project", "2027-05-01T10:00:00Z", "Rome.\n", expires=written)
    assert parse_record("trip", text, fast=fast).expires is None


# --- .history files: damaged, merged by git, written by other editors ---------------------------


def _version(description: str, body: str, replaced: str) -> str:
    return json.dumps(
        {"description": description, "type": "project", "created": "2026-01-01T00:00:00Z",
         "updated": "2026-01-01T00:00:00Z", "replaced": replaced, "body": body, "provenance": "auto",
         "by": "auto"}
    ) + "\n"


def test_a_history_file_saved_with_a_bom_keeps_its_first_version(memory: MemoryService, vault: Vault) -> None:
    memory.create_auto("due", type="project", description="Report due on Tuesday", body="Tuesday")
    path = history_file(vault, "due")
    path.parent.mkdir(parents=True, exist_ok=True)
    # A text editor on Windows saved the file as "UTF-8 with BOM".
    friday = _version("Report due on Friday", "Friday", "2026-02-01T00:00:00Z")
    path.write_bytes(b"\xef\xbb\xbf" + friday.encode())
    assert [v["body"] for v in memory.history("due")] == ["Friday"]
    memory.update_auto("due", description="Report now due on Monday", body="Monday")
    assert [v["body"] for v in memory.history("due")] == ["Tuesday", "Friday"]  # nothing silently dropped


@pytest.mark.process
def test_a_history_line_holding_nan_does_not_break_show_json(
    cli: Any, memory: MemoryService, vault: Vault
) -> None:
    memory.create_auto("due", type="project", description="Report due on Tuesday", body="Tuesday")
    path = history_file(vault, "due")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"description": "Old", "body": "x", "replaced": NaN}\n'
                    + _version("Report due on Friday", "Friday", "2026-02-01T00:00:00Z"))
    shown = cli("memory", "show", "due", "--json")
    assert shown.exit_code == 0, shown.stdout  # the damaged line is skipped, as any damaged line
    assert [v["body"] for v in json.loads(shown.stdout)["history"]] == ["Friday"]
    listed = cli("memory", "history", "due", "--json")
    assert listed.exit_code == 0, listed.stdout


def test_a_history_line_with_a_lone_surrogate_does_not_block_revert_or_automatic_updates(
    memory: MemoryService, vault: Vault
) -> None:
    memory.create_auto("due", type="project", description="Report due on Tuesday", body="Tuesday")
    path = history_file(vault, "due")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        '{"description": "Old \\ud800", "type": "project", "body": "x", "replaced": "2026-01-01T00:00:00Z"}\n'
        + _version("Report due on Friday", "Friday", "2026-02-01T00:00:00Z")
    )
    memory.update_auto("due", description="Report now due on Monday", body="Monday")  # no UnicodeEncodeError
    assert memory.revert("due", 2).record.body == "Friday"


def test_a_deeply_nested_history_line_is_skipped_not_a_crash(memory: MemoryService, vault: Vault) -> None:
    memory.create_auto("due", type="project", description="Report due on Tuesday", body="Tuesday")
    path = history_file(vault, "due")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
                    + _version("Report due on Friday", "Friday", "2026-02-01T00:00:00Z"))
    assert [v["body"] for v in memory.history("due")] == ["Friday"]  # not RecursionError


def test_history_after_a_union_merge_is_newest_first_by_when_it_was_replaced(
    memory: MemoryService, vault: Vault
) -> None:
    # git's union driver puts our new line, then theirs: file order is no longer time order.
    memory.create_auto("due", type="project", description="Report now due on Wednesday", body="Wednesday")
    path = history_file(vault, "due")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        _version("Report due on Friday", "Friday", "2026-02-01T00:00:00Z")
        + _version("Report now due on Tuesday", "Tuesday", "2026-04-01T00:00:00Z")  # ours
        + _version("Report now due on Monday", "Monday", "2026-03-01T00:00:00Z")  # theirs
    )
    assert [v["body"] for v in memory.history("due")] == ["Tuesday", "Monday", "Friday"]


@pytest.mark.process
def test_history_of_a_record_a_hand_edit_broke_still_answers(
    cli: Any, memory: MemoryService, vault: Vault
) -> None:
    # The record exists (malformed: a hand edit typed a wrong type); its versions are what you need.
    write(vault, "due", record("due", "Report due Friday", "bogus", "2026-01-01T00:00:00Z", "Friday\n"))
    found = cli("memory", "history", "due", "--json")
    assert found.exit_code == 0, found.stdout
    assert json.loads(found.stdout)["path"] == "memory/demo/due.md"


def test_a_delete_that_removed_the_record_does_not_report_failure(
    cli: Any, memory: MemoryService, vault: Vault
) -> None:
    memory.save("due", type="project", description="Report due Friday", body="Friday")
    history_file(vault, "due").mkdir(parents=True)  # something left a folder where the history goes
    deleted = cli("memory", "delete", "due", "--json")
    # The record is gone and the answer says so (with a warning that the history was left).
    assert deleted.exit_code == 0 and not record_path(vault, "due").exists(), deleted.stdout
    assert "was left in place" in deleted.stderr
