"""The message log: appended to, never rewritten; numbered from the count kept in task.json."""

from __future__ import annotations

import json

from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault


def test_messages_are_appended_and_counted_without_rereading_the_log(vault: Vault) -> None:
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Chat")
    for i in range(3):
        tasks.add_message(task.id, "user", f"m{i}")
    stored = json.loads((vault.root / "tasks/demo/t1/task.json").read_text())
    assert stored["messages"] == 3 and stored["in_use"] == []
    log = vault.root / "tasks/demo/t1/messages.jsonl"
    log.write_text(log.read_text().rstrip("\n"))  # a hand edit drops the last newline
    message = tasks.add_message(task.id, "assistant", "m3")
    assert message.n == 4
    assert [m.content for m in tasks.messages(task.id)] == ["m0", "m1", "m2", "m3"]
    assert not tasks.warnings


def test_a_task_from_before_the_count_is_counted_once(vault: Vault) -> None:
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Old task")
    tasks.add_message(task.id, "user", "first")
    path = vault.root / "tasks/demo/t1/task.json"
    stored = json.loads(path.read_text())
    del stored["messages"], stored["in_use"]
    path.write_text(json.dumps(stored))
    assert tasks.attached_in_use(task.id) == ([], 1)
    assert tasks.add_message(task.id, "user", "second").n == 2
    assert json.loads(path.read_text())["messages"] == 2


def test_attachments_in_use_come_from_the_latest_message(vault: Vault) -> None:
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Docs")
    tasks.set_attached(task.id, {"system/a": True})
    tasks.add_message(task.id, "user", "q")
    tasks.set_attached(task.id, {"system/b": True})
    assert tasks.attached_in_use(task.id) == (["system/a"], 1)
    tasks.add_message(task.id, "user", "q2")
    assert tasks.attached_in_use(task.id) == (["system/a", "system/b"], 2)
