"""What an auto record said before automatic memory changed it: memory/<user>/.history/<name>.jsonl."""

from __future__ import annotations

import json
import subprocess

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.service import HISTORY_LIMIT, MemoryService
from aibuddy_cli.vault import Vault


def history_file(vault: Vault, name: str):  # noqa: ANN201 - a Path
    return vault.root / "memory" / "demo" / ".history" / f"{name}.jsonl"


def test_an_auto_update_keeps_the_previous_version_with_its_dates(memory: MemoryService) -> None:
    first = memory.create_auto("due", type="project", description="Report due on Friday", body="Friday\n")
    second = memory.update_auto("due", description="Report now due on Monday", body="Monday\n")
    assert memory.history("due") == [
        {
            "description": "Report due on Friday",
            "type": "project",
            "created": first.created,
            "updated": first.updated,
            "replaced": second.updated,
            "body": "Friday\n",
            "provenance": "auto",
            "by": "auto",
        }
    ]
    memory.update_auto("due", description="Report now due on Tuesday", body="Tuesday\n")
    assert [v["body"] for v in memory.history("due")] == ["Monday\n", "Friday\n"]  # newest first


def test_an_unchanged_update_adds_no_version(memory: MemoryService) -> None:
    memory.create_auto("due", type="project", description="Report due on Friday", body="Friday")
    memory.update_auto("due", description="Report due on Friday", body="Friday")
    assert memory.history("due") == []


def test_the_history_is_bounded(memory: MemoryService, vault: Vault) -> None:
    memory.create_auto("due", type="project", description="Report due on day 0", body="0")
    for day in range(1, HISTORY_LIMIT + 4):
        memory.update_auto("due", description=f"Report due on day {day}", body=str(day))
    kept = memory.history("due")
    assert [v["body"] for v in kept] == [str(day) for day in range(HISTORY_LIMIT + 2, 2, -1)]
    assert len(history_file(vault, "due").read_text().splitlines()) == HISTORY_LIMIT


def test_records_list_manifest_and_recall_never_see_the_history(memory: MemoryService) -> None:
    memory.create_auto("due", type="project", description="Report due on Friday", body="Friday")
    memory.update_auto("due", description="Report now due on Monday", body="Monday")
    listed = memory.list_records()
    assert [item.record.name for item in listed.records] == ["due"] and listed.problems == []
    assert [line.filename for line in memory.manifest().lines] == ["due.md"]
    assert memory.count() == 1
    assert [r.name for r in memory.recall("report due").records] == ["due"]


def test_delete_and_clear_take_the_history_with_the_records(memory: MemoryService, vault: Vault) -> None:
    for name in ("a", "b"):
        memory.create_auto(name, type="user", description=f"Fact {name}", body="old")
        memory.update_auto(name, description=f"Fact {name}", body="new")
    memory.delete("a")
    assert not history_file(vault, "a").exists() and history_file(vault, "b").exists()
    assert memory.clear().removed == ["b"]
    assert not history_file(vault, "b").exists()


def test_a_new_record_does_not_inherit_a_stale_history(memory: MemoryService, vault: Vault) -> None:
    memory.create_auto("due", type="project", description="Report due on Friday", body="Friday")
    memory.update_auto("due", description="Report now due on Monday", body="Monday")
    (vault.root / "memory" / "demo" / "due.md").unlink()  # removed outside aibuddy (git rm)
    memory.save("due", type="project", description="Something else", body="x")
    assert memory.history("due") == []


def test_a_damaged_history_line_is_skipped(memory: MemoryService, vault: Vault) -> None:
    memory.create_auto("due", type="project", description="Report due on Friday", body="Friday")
    memory.update_auto("due", description="Report now due on Monday", body="Monday")
    path = history_file(vault, "due")
    path.write_text("not json\n" + path.read_text())
    memory.update_auto("due", description="Report now due on Tuesday", body="Tuesday")
    assert [v["body"] for v in memory.history("due")] == ["Monday", "Friday"]


def test_memory_show_json_lists_the_history(cli, vault: Vault) -> None:
    memory = Session(vault, "demo", environ={}).memory
    memory.create_auto("due", type="project", description="Report due on Friday", body="Friday")
    memory.update_auto("due", description="Report now due on Monday", body="Monday")
    shown = json.loads(cli("memory", "show", "due", "--json").stdout)
    assert shown["body"] == "Monday"
    assert [(v["description"], v["body"]) for v in shown["history"]] == [("Report due on Friday", "Friday")]
    text = cli("memory", "show", "due").stdout
    assert "history: 1 previous version(s): aibuddy memory history due" in text
    memory.save("tea", type="user", description="Drinks green tea", body="b")
    assert json.loads(cli("memory", "show", "tea", "--json").stdout)["history"] == []
    assert "history:" not in cli("memory", "show", "tea").stdout


@pytest.mark.process
def test_git_merges_two_clones_histories_by_keeping_both(vault: Vault) -> None:
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    found = subprocess.run(
        ["git", "-C", str(vault.root), "check-attr", "merge", "memory/demo/.history/due.jsonl"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip().endswith("merge: union")


def test_a_version_that_held_a_key_goes_into_the_history_redacted(
    memory: MemoryService, vault: Vault
) -> None:
    key = "sk-proj-" + "A1b2C3d4" * 5
    memory.create_auto("deploy", type="project", description="Deploys use the ops key", body="none yet")
    memory.update("deploy", body=f"key {key}")  # a person's explicit write keeps it (with a warning)
    memory.update_auto("deploy", description="Deploys now use the vault key", body="from the vault")
    assert memory.history("deploy")[0]["body"] == "key [redacted: api key]"
    assert key not in history_file(vault, "deploy").read_text()


@pytest.mark.process
def test_memory_history_shows_what_each_committed_version_said(cli, vault: Vault) -> None:
    """"What did this say before?": each commit of the record comes with its body (`--json`:
    `body`); a commit that changed only the header points to the older version's body."""

    def commit(message: str) -> None:
        git = ["git", "-C", str(vault.root), "-c", "user.name=T", "-c", "user.email=t@example.org"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "--no-verify", "-m", message], check=True)

    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    memory = Session(vault, "demo", environ={}).memory
    memory.save("due", type="project", description="Report due on Friday", body="Due Friday.\nAsk Ana.\n")
    commit("first")
    memory.update("due", body="Due Monday.\n")
    commit("moved")
    memory.update("due", description="The weekly report is due on Monday")
    commit("reworded")
    found = json.loads(cli("memory", "history", "due", "--json").stdout)
    assert [(c["subject"], c["description"], c["body"]) for c in found["commits"]] == [
        ("reworded", "The weekly report is due on Monday", "Due Monday.\n"),
        ("moved", "Report due on Friday", "Due Monday.\n"),
        ("first", "Report due on Friday", "Due Friday.\nAsk Ana.\n"),
    ]
    moved = found["commits"][1]["commit"][:12]
    lines = cli("memory", "history", "due").stdout.splitlines()
    assert lines[1:2] == [f"    (the body of {moved})"]
    assert lines[2].endswith("\tReport due on Friday") and lines[3:4] == ["    Due Monday."]
    assert lines[5:7] == ["    Due Friday.", "    Ask Ana."]
