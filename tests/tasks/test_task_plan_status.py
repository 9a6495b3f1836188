"""A task's plan and status after `task new`: `task plan T TEXT` and `task status T STATE`, kept in
task.json, shown by `task show` and `task context`; how `task end` and the message log fit with
them; and how the git merge driver settles two clones' plans and statuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ok, run_in_process

from aibuddy_cli.app.merge_driver import merge_file
from aibuddy_cli.vault import Vault


@pytest.fixture
def task(cli) -> str:
    ok(cli("task", "new", "Plan the offsite", "--json"))
    return "t1"


def task_file(vault: Vault, task: str = "t1") -> dict[str, Any]:
    return json.loads((vault.root / "tasks/demo" / task / "task.json").read_text())


def test_the_plan_changes_after_task_new_and_shows_where_the_task_does(cli, vault: Vault, task: str) -> None:
    planned = ok(cli("task", "plan", task, "  1. find a venue\n2. invite the team\n", "--json"))
    assert planned["plan"] == "1. find a venue\n2. invite the team" and planned["status"] == "open"
    assert task_file(vault)["plan"] == planned["plan"]
    assert ok(cli("task", "show", task, "--json"))["plan"] == planned["plan"]
    assert ok(cli("task", "context", task, "--json"))["plan"] == planned["plan"]
    assert "## Plan\n1. find a venue\n2. invite the team" in cli("task", "context", task).stdout
    shown = cli("task", "show", task).stdout
    assert "plan:\n1. find a venue\n2. invite the team\nconsolidated through message 0" in shown
    # From standard input when asked ('-'), replaced whole; empty: no plan.
    piped = cli("task", "plan", task, "-", "--json", input="Book Hall A first\n")
    assert ok(piped)["plan"] == "Book Hall A first"
    assert ok(cli("task", "plan", task, "   ", "--json"))["plan"] is None
    assert "(no plan)" in cli("task", "plan", task, "").stdout
    # A plan larger than task.json should carry (it is written again with every message).
    big = cli("task", "plan", task, "x" * 20_001)
    assert big.exit_code == 6 and "at most 20,000" in big.stderr
    assert cli("task", "plan", "t9", "x").exit_code == 3


def test_the_status_says_where_the_work_stands_and_only_task_end_closes(cli, vault: Vault, task: str) -> None:
    blocked = ok(cli("task", "status", task, "blocked", "--json"))
    assert blocked["status"] == "blocked" and task_file(vault)["status"] == "blocked"
    assert ok(cli("task", "add-message", task, "Waiting for the venue's answer.", "--role", "user", "--json"))
    assert cli("task", "context", task).stdout.startswith("# t1: Plan the offsite (blocked)")
    assert "\tblocked\t" in cli("task", "list").stdout
    assert ok(cli("task", "status", task, "done", "--json"))["status"] == "done"
    assert ok(cli("task", "add-message", task, "One more thing.", "--role", "user", "--json"))["n"] == 2
    # closed is `task end`'s (it extracts memory): refused here with where to go.
    closing = cli("task", "status", task, "closed")
    assert closing.exit_code == 2
    assert closing.stderr.strip().endswith(
        "a task is closed by 'aibuddy task end t1', which also extracts memory"
    )
    refused = cli("task", "status", task, "finished", "--json")
    assert refused.exit_code == 6
    assert (
        json.loads(refused.stdout)["error"]["message"] == "invalid status 'finished': use open, blocked, done"
    )
    assert ok(cli("task", "end", task, "--json"))["task"]["status"] == "closed"
    assert cli("task", "add-message", task, "x", "--role", "user").exit_code == 4
    # A closed task is reopened by a status; its plan may change either way.
    assert ok(cli("task", "plan", task, "Archive the notes", "--json"))["status"] == "closed"
    assert ok(cli("task", "status", task, "open", "--json"))["status"] == "open"
    assert ok(cli("task", "add-message", task, "Reopened.", "--role", "user", "--json"))["n"] == 3


def test_plan_and_status_as_a_process_runs_them(vault: Vault, env: dict[str, str], task: str) -> None:
    """Through the console script's own entry point: stdin for '-', the exit codes, one line."""
    piped = run_in_process("task", "plan", task, "-", "--json", env=env, input=b"Call the venue\n")
    assert piped.returncode == 0 and json.loads(piped.stdout)["plan"] == "Call the venue"
    status = run_in_process("task", "status", task, "blocked", env=env)
    assert status.returncode == 0 and status.stdout.decode().split("\t")[:2] == ["t1", "blocked"]
    bad = run_in_process("task", "status", task, "closed", env=env)
    assert bad.returncode == 2 and bad.stdout == b"" and len(bad.stderr.decode().strip().splitlines()) == 1


# --- the merge driver ------------------------------------------------------------------------------


BASE = {
    "id": "t1",
    "goal": "Plan",
    "created": "2026-01-01T00:00:00Z",
    "status": "open",
    "attached": [],
    "plan": "Find a venue",
    "recalled": {},
    "messages": 2,
    "in_use": [],
}


def merged(
    tmp_path: Path, ours: dict[str, Any], theirs: dict[str, Any], *, replaying: bool = False
) -> tuple[int, str]:
    files = []
    for name, data in (("base", BASE), ("ours", {**BASE, **ours}), ("theirs", {**BASE, **theirs})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        files.append(path)
    code = merge_file(*files, "tasks/demo/t1/task.json", replaying=replaying)
    return code, files[1].read_text()


@pytest.mark.parametrize(
    ("ours", "theirs", "status"),
    [
        ("blocked", "done", "done"),  # both changed it: the one further along
        ("done", "blocked", "done"),
        ("blocked", "closed", "closed"),  # closed if either side closed it
        ("blocked", "open", "blocked"),  # theirs kept the base's: ours
    ],
)
def test_two_clones_statuses_merge_to_the_one_further_along(
    tmp_path: Path, ours: str, theirs: str, status: str
) -> None:
    code, text = merged(tmp_path, {"status": ours}, {"status": theirs})
    assert code == 0 and json.loads(text)["status"] == status


def test_two_clones_plans_stay_a_conflict_that_leaves_the_task_readable(
    cli, vault: Vault, task: str, tmp_path: Path
) -> None:
    """git is told it is a conflict (exit 1), but task.json stays JSON: the plan holds both,
    between git's markers (ours above, as git writes them); everything else merged. `task show`
    says so and `task plan` settles it."""
    for replaying in (False, True):
        code, text = merged(
            tmp_path,
            {"plan": "Find a venue in Lisbon", "messages": 3},
            {"plan": "Find a venue in Porto", "status": "blocked"},
            replaying=replaying,
        )
        assert code == 1
        document = json.loads(text)
        assert document["plan"] == (
            "<<<<<<< ours\nFind a venue in Lisbon\n=======\nFind a venue in Porto\n>>>>>>> theirs"
        )
        assert (document["status"], document["messages"]) == ("blocked", 3)
    # One side cleared the plan, the other changed it: a conflict too, with nothing above.
    code, text = merged(tmp_path, {"plan": None}, {"plan": "Find a venue in Porto"})
    assert (
        code == 1
        and json.loads(text)["plan"] == "<<<<<<< ours\n=======\nFind a venue in Porto\n>>>>>>> theirs"
    )
    # One side changed it: no conflict.
    code, text = merged(tmp_path, {"plan": "Find a venue in Porto"}, {"status": "done"})
    assert code == 0 and json.loads(text)["plan"] == "Find a venue in Porto"
    # In the vault: readable, said on stderr, settled by a plan.
    path = vault.root / "tasks/demo/t1/task.json"
    both = "<<<<<<< ours\nLisbon\n=======\nPorto\n>>>>>>> theirs"
    path.write_text(json.dumps({**json.loads(path.read_text()), "plan": both}))
    shown = cli("task", "show", task, "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["plan"] == both
    assert "the plan holds both sides of a git merge conflict" in shown.stderr
    assert "aibuddy task plan t1 TEXT" in cli("task", "context", task).stderr
    settled = cli("task", "plan", task, "Porto", "--json")
    assert ok(settled)["plan"] == "Porto" and "conflict" not in settled.stderr
    assert "conflict" not in cli("task", "show", task).stderr
