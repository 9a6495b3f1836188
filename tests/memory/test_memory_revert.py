"""Records that age well, part 2: what automatic memory changed is kept with its dates
(`.history/<name>.jsonl`), shown by `memory history`, and put back by `memory revert`, a
person's act that makes the record manual."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import record_path
from helpers import write_record_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.extraction import Extractor
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.operations.registry import REGISTRY, load, offered
from aibuddy_cli.vault import Vault


def candidate(description: str, body: str, name: str = "report-due") -> dict[str, Any]:
    """What the extract (or consolidate) model proposes, as reconcile weighs it."""
    return {
        "type": "project",
        "name": name,
        "description": description,
        "body": body,
        "salience": 0.9,
        "durable": True,
        "recoverable": False,
    }


def moved_deadline(memory: MemoryService) -> None:
    """Extraction wrote a deadline, then a second reply moved it (an automatic update)."""
    extractor = Extractor(memory)
    assert (
        extractor.reconcile(candidate("Weekly report due Friday", "Due Friday.\n"), False).outcome
        == "created"
    )
    extractor.begin_reply()
    decision = extractor.reconcile(candidate("Weekly report now due Monday", "Due Monday.\n"), False)
    assert (decision.outcome, decision.name) == ("updated", "report-due")


def test_an_automatic_change_keeps_the_previous_value_with_its_dates(memory: MemoryService) -> None:
    moved_deadline(memory)
    current = memory.show("report-due")
    assert current.description == "Weekly report now due Monday" and current.provenance == "auto"
    (previous,) = memory.history("report-due")
    assert previous["description"] == "Weekly report due Friday" and previous["body"] == "Due Friday.\n"
    assert previous["replaced"] == current.updated and previous["created"] == current.created
    assert (previous["provenance"], previous["by"]) == ("auto", "auto")


@pytest.mark.process
def test_history_shows_what_was_said_before_numbered_for_revert(cli, memory: MemoryService) -> None:
    moved_deadline(memory)
    shown = cli("memory", "history", "report-due")
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    first = next(line for line in lines if line.startswith("#1\t"))
    assert "by automatic memory" in first and first.endswith("\tWeekly report due Friday")
    assert "    Due Friday." in lines
    assert lines[-1] == "(put one back: aibuddy memory revert report-due --to N)"
    document = json.loads(cli("memory", "show", "report-due", "--json").stdout)
    assert [v["description"] for v in document["history"]] == ["Weekly report due Friday"]


def test_revert_puts_the_previous_value_back_as_a_persons_act(cli, memory: MemoryService) -> None:
    moved_deadline(memory)
    memory.recall("weekly report")
    before = memory.show("report-due")
    result = cli("memory", "revert", "report-due", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["changed"], document["version"], document["path"]) == (
        True,
        1,
        "memory/demo/report-due.md",
    )
    record = memory.show("report-due")
    assert (record.description, record.body) == ("Weekly report due Friday", "Due Friday.\n")
    assert record.provenance == "manual"  # a person chose this value
    assert (record.created, record.recall_count, record.last_recalled_at) == (
        before.created,
        before.recall_count,
        before.last_recalled_at,
    )
    assert record.updated is not None and record.updated >= (before.updated or "")
    # The value the revert replaced is kept too: nothing is lost, and a revert can be reverted.
    newest = memory.history("report-due")[0]
    assert (newest["description"], newest["by"], newest["provenance"]) == (
        "Weekly report now due Monday",
        "revert",
        "auto",
    )
    assert cli("memory", "revert", "report-due").stdout == (
        "reverted memory/demo/report-due.md to version 1 (now manual: automatic memory leaves it alone)\n"
    )
    assert memory.show("report-due").description == "Weekly report now due Monday"


def test_after_a_revert_automatic_memory_leaves_the_record_alone(memory: MemoryService) -> None:
    moved_deadline(memory)
    memory.revert("report-due")
    decision = Extractor(memory).reconcile(candidate("Weekly report now due Monday", "Due Monday.\n"), False)
    assert decision.outcome == "protected"
    assert memory.show("report-due").description == "Weekly report due Friday"


def test_revert_to_an_older_version(memory: MemoryService) -> None:
    memory.create_auto("due", type="project", description="Report due on day 0", body="0\n")
    for day in (1, 2, 3):
        memory.update_auto("due", description=f"Report due on day {day}", body=f"{day}\n")
    assert [v["body"] for v in memory.history("due")] == ["2\n", "1\n", "0\n"]
    reverted = memory.revert("due", to=3)
    assert reverted.changed and memory.show("due").body == "0\n"
    assert memory.revert("due", to=1).record.body == "3\n"  # the version the revert replaced


def test_what_cannot_be_reverted_says_why(cli, memory: MemoryService) -> None:
    memory.save("tea", type="user", description="Drinks green tea", body="")
    none = cli("memory", "revert", "tea")
    assert none.exit_code == 3
    assert none.stderr == "error: memory record 'tea' has no earlier version kept to go back to\n"
    moved_deadline(memory)
    far = cli("memory", "revert", "report-due", "--to", "4")
    assert far.exit_code == 3
    assert far.stderr == (
        "error: memory record 'report-due' keeps 1 earlier version(s): --to 4 is not one of them "
        "(see 'aibuddy memory history report-due')\n"
    )
    assert cli("memory", "revert", "missing").exit_code == 3
    assert cli("memory", "revert", "report-due", "--to", "0").exit_code == 2
    assert memory.show("report-due").description == "Weekly report now due Monday"


def test_revert_edits_a_hand_written_header_line_by_line(memory: MemoryService, vault: Vault) -> None:
    header = (
        "---\r\n# kept by hand\r\nname: due\r\ndescription: Report due Friday  # note\r\n"
        "type: project\r\nprovenance: auto\r\n"
    )
    path = write(vault, "due", f"{header}---\r\nFriday.\r\n")
    memory.update_auto("due", description="Report now due Monday", body="Monday.\n")
    memory.revert("due")
    text = path.read_bytes().decode()
    assert text.startswith("---\r\n# kept by hand\r\nname: due\r\ndescription: Report due Friday  # note\r\n")
    assert "provenance: manual\r\n" in text and text.endswith("---\r\nFriday.\r\n")


def test_revert_and_review_are_never_offered_to_a_model() -> None:
    load()
    for name in ("memory revert", "memory review"):
        op = REGISTRY[name]
        assert op.model is False and not op.tools, name
    audiences = ("mcp", "table_read", "table_write", "knowledge")
    offered_names = {op.name for audience in audiences for op in offered(audience)}
    assert not offered_names & {"memory revert", "memory review", "memory clear"}


def test_a_model_can_never_choose_provenance_through_save_or_update() -> None:
    from aibuddy_cli.operations.schemas import input_schema

    load()
    for name in ("memory save", "memory update"):
        assert "provenance" not in input_schema(REGISTRY[name])["properties"], name


def test_the_history_file_is_what_git_merges_with_union(vault: Vault, memory: MemoryService) -> None:
    moved_deadline(memory)
    attributes = (vault.root / ".gitattributes").read_text()
    assert "memory/**/.history/*.jsonl merge=union" in attributes
    lines = (
        (record_path(vault, "report-due").parent / ".history" / "report-due.jsonl").read_text().splitlines()
    )
    assert len(lines) == 1 and json.loads(lines[0])["by"] == "auto"


def test_a_consolidation_pass_changes_a_fact_with_history_too(vault: Vault) -> None:
    """Consolidation's memory items go through the same reconcile (tasks/consolidation/handlers.py),
    one pass being one reply: begin_reply, then each item."""
    memory = Session(vault, "demo", environ={}).memory
    moved_deadline(memory)
    reconciler = Extractor(memory)
    reconciler.begin_reply()
    decision = reconciler.reconcile(candidate("Weekly report now due Tuesday", "Due Tuesday.\n"), False)
    assert decision.outcome == "updated"
    assert [v["description"] for v in memory.history("report-due")] == [
        "Weekly report now due Monday",
        "Weekly report due Friday",
    ]
    memory.revert("report-due", to=2)
    assert memory.show("report-due").description == "Weekly report due Friday"
