"""The Session: one user in one vault, each service built once over one store, one warnings sink
that every front end reports once, and SQLite handles closed at the end."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BODY, ok, published, run_aibuddy

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import UsageError
from aibuddy_cli.tasks.context import ContextAssembler
from aibuddy_cli.vault import Vault, init_vault


def test_the_services_share_one_store_one_sink_and_one_task_service(vault: Vault) -> None:
    session = Session(vault, "demo", environ={})
    assert session.memory is session.memory and session.knowledge is session.knowledge
    stores = {id(s.store) for s in (session.memory, session.tasks, session.knowledge)}
    assert stores == {id(session.store)}
    assert session.knowledge.retrieval.tasks is session.tasks
    assert session.context.tasks is session.tasks and session.context.knowledge is session.knowledge
    sinks = (session.tasks.warnings, session.knowledge.warnings, session.context.warnings)
    assert all(sink is session.warnings for sink in sinks)


def test_a_context_of_services_with_separate_sinks_is_refused(vault: Vault) -> None:
    one, other = Session(vault, "demo", environ={}), Session(vault, "demo", environ={})
    with pytest.raises(ValueError, match="one warnings sink"):
        ContextAssembler(one.tasks, one.memory, other.knowledge)


def test_take_warnings_hands_each_warning_over_once(vault: Vault) -> None:
    (vault.root / "tasks" / "demo" / "t7").mkdir(parents=True)
    (vault.root / "tasks" / "demo" / "t7" / "task.json").write_text("{not json")
    session = Session(vault, "demo", environ={})
    assert session.tasks.list_tasks() == []
    (warning,) = session.take_warnings()
    assert "tasks/demo/t7/task.json: unreadable task file" in warning
    assert session.take_warnings() == [] and session.warnings == []


def test_task_list_reports_a_damaged_task_instead_of_dropping_it(cli, vault: Vault) -> None:
    ok(cli("task", "new", "Fine task", "--json"))
    (vault.root / "tasks" / "demo" / "t2").mkdir()
    (vault.root / "tasks" / "demo" / "t2" / "task.json").write_text('{"id": "t2"}')
    result = cli("task", "list", "--json")
    assert [t["id"] for t in ok(result)["tasks"]] == ["t1"]
    assert result.stderr.count("warning:") == 1 and "tasks/demo/t2/task.json" in result.stderr


def test_the_config_warnings_come_first_and_once(cli, vault: Vault) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + "\nwindw = 1\n")
    (vault.root / "tasks" / "demo" / "t1").mkdir(parents=True)
    (vault.root / "tasks" / "demo" / "t1" / "task.json").write_text("[]")
    result = cli("task", "list", "--json")
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and "windw" in lines[0] and "tasks/demo/t1/task.json" in lines[1]


def test_the_config_warnings_go_out_with_an_error_when_no_user_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = init_vault(tmp_path / "v", "demo")
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace('default_user = "demo"', 'default_user = "../x"'))
    monkeypatch.delenv("AIBUDDY_USER", raising=False)
    sink: list[str] = []
    with pytest.raises(UsageError, match="no current user"):
        Session.locate(str(vault.root), None, environ={}, warnings=sink)
    assert sink and "default_user" in sink[0]


@pytest.mark.process
def test_a_fast_path_command_reports_the_sessions_warnings(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str]
) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + "\nwindw = 1\n")
    result = run_aibuddy(aibuddy_exe, "memory", "recall", "tea", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().count("windw") == 1


def test_closing_a_session_closes_its_sqlite_handles(vault: Vault) -> None:
    session = Session(vault, "demo", environ={})
    session.memory.save("tea", type="user", description="likes tea", body="Green tea.")
    published(session.knowledge, BODY)
    assert session.memory.recall("tea").records and session.knowledge.search("request body")
    memory_index, knowledge_index = session.memory._index, session.knowledge.state.index
    assert memory_index is not None and knowledge_index is not None
    with session:
        pass
    assert knowledge_index._db is None and session.memory._index is None
    assert session.knowledge.search("request body")  # opens again on next use
