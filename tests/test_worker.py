"""The model worker: a shell loop of model commands pays litellm's import once. Real processes,
the real litellm client, the local fake server; the worker never makes a command fail or hang."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from conftest import run_aibuddy
from fake_openai import FakeOpenAI

from aibuddy_cli import models, worker
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


@pytest.fixture
def worker_env(env: dict[str, str], fake_openai: FakeOpenAI, tmp_path: Path, vault: Vault) -> dict[str, str]:
    MemoryService(vault, "demo", environ={}).save(
        "tea", type="user", description="Drinks green tea", body="tea"
    )
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    return {
        **env,
        "AIBUDDY_WORKER": "1",
        "AIBUDDY_WORKER_IDLE": "30",
        "XDG_RUNTIME_DIR": str(runtime),
        "AIBUDDY_MODEL_RECALL": "openai/recall-test",
        "AIBUDDY_TIMEOUT": "30",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
    }


def recall(aibuddy_exe: list[str], env: dict[str, str]) -> dict:
    result = run_aibuddy(aibuddy_exe, "memory", "recall", "tea", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def status(aibuddy_exe: list[str], env: dict[str, str]) -> dict:
    return json.loads(run_aibuddy(aibuddy_exe, "worker", "status", "--json", env=env).stdout)


def test_the_first_model_call_starts_a_worker_that_serves_the_next(
    aibuddy_exe: list[str], worker_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.default.content = '{"selected": ["tea"]}'
    try:
        assert recall(aibuddy_exe, worker_env)["method"] == "model"  # in-process; a worker starts
        deadline = time.monotonic() + 20
        while not status(aibuddy_exe, worker_env)["running"] and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(3):
            assert recall(aibuddy_exe, worker_env)["method"] == "model"
        found = status(aibuddy_exe, worker_env)
        assert found["running"] and found["calls"] == 3
        assert (Path(found["socket"]).stat().st_mode & 0o777) == 0o600
    finally:
        stopped = json.loads(run_aibuddy(aibuddy_exe, "worker", "stop", "--json", env=worker_env).stdout)
    assert stopped["running"] is False and not Path(stopped["socket"]).exists()


def test_a_stale_socket_never_fails_or_hangs_a_command(
    worker_env: dict[str, str], vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, as the command runs it (use_worker on), so litellm is imported only once."""
    import aibuddy_cli

    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AIBUDDY_WORKER_IDLE", "0")  # no worker is started: the socket stays stale
    monkeypatch.setattr(aibuddy_cli, "use_worker", True)
    fake_openai.default.content = '{"selected": ["tea"]}'
    path = worker.socket_path(dict(os.environ))
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # bound, never listening: connections are refused
    memory = MemoryService(Vault.open(vault.root), "demo")
    models.import_litellm(600)  # litellm's import (seconds, more on a busy machine) is not the point
    started = time.monotonic()
    assert memory.recall("tea").method == "model"
    assert time.monotonic() - started < 25  # a hang would wait out the 30 s timeout
    path.unlink()
    path.write_text("not a socket")
    assert memory.recall("tea").method == "model"


def test_lexical_commands_never_start_a_worker(aibuddy_exe: list[str], worker_env: dict[str, str]) -> None:
    del worker_env["AIBUDDY_MODEL_RECALL"]
    assert recall(aibuddy_exe, worker_env)["method"] == "lexical"
    time.sleep(0.3)
    assert not list(Path(worker_env["XDG_RUNTIME_DIR"]).glob("aibuddy/*.sock"))
