"""The tool as a real process: concurrency, the fast path, start-up imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO, run_aibuddy
from typer.testing import CliRunner

from aibuddy_cli.cli.app import app
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.storage import TEMP_PREFIX
from aibuddy_cli.vault import Vault


@pytest.fixture
def env(vault: Vault) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    # PYTHONPATH: child processes run this checkout's code even if the installed copy is older.
    return {**clean, "AIBUDDY_VAULT": str(vault.root), "AIBUDDY_USER": "demo", "PYTHONPATH": str(REPO)}


def test_a_real_process_saves_and_recalls(aibuddy_exe: list[str], env: dict[str, str]) -> None:
    saved = run_aibuddy(
        aibuddy_exe,
        "memory",
        "save",
        "zh-report",
        "-t",
        "feedback",
        "-d",
        "周报要简洁",
        "--body-file",
        "-",
        env=env,
        input="周报格式：三段式\n".encode(),
    )
    assert saved.returncode == 0, saved.stderr
    recalled = run_aibuddy(aibuddy_exe, "memory", "recall", "周报格式", "--json", env=env)
    assert recalled.returncode == 0, recalled.stderr
    document = json.loads(recalled.stdout)
    assert document["method"] == "lexical"
    assert document["records"][0]["body"] == "周报格式：三段式\n"
    missing = run_aibuddy(aibuddy_exe, "memory", "show", "nope", "--json", env=env)
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "not_found"


def test_twenty_concurrent_saves_leave_twenty_intact_records(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    def save(i: int) -> subprocess.CompletedProcess[bytes]:
        return run_aibuddy(
            aibuddy_exe,
            "memory",
            "save",
            f"note-{i:02d}",
            "-t",
            "project",
            "-d",
            f"Concurrent note {i}",
            "--body",
            f"body {i}\n",
            env=env,
        )

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(save, range(20)))
    assert [r.returncode for r in results] == [0] * 20, [r.stderr for r in results]
    folder = vault.root / "memory" / "demo"
    assert sorted(p.name for p in folder.iterdir()) == [f"note-{i:02d}.md" for i in range(20)]
    memory = MemoryService(vault, "demo", environ={})
    for i in range(20):
        assert memory.show(f"note-{i:02d}").body == f"body {i}\n"
    assert not [p for p in vault.root.rglob(f"{TEMP_PREFIX}*")]


def test_twenty_concurrent_recalls_lose_no_update(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    memory = MemoryService(vault, "demo", environ={})
    memory.save("tea", type="user", description="Drinks green tea", body="tea")

    def recall(_: int) -> subprocess.CompletedProcess[bytes]:
        return run_aibuddy(aibuddy_exe, "memory", "recall", "green tea", "--json", env=env)

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(recall, range(20)))
    assert [r.returncode for r in results] == [0] * 20, [r.stderr for r in results]
    assert memory.show("tea").recall_count == 20
    assert not [p for p in vault.root.rglob(f"{TEMP_PREFIX}*")]


HEAVY = ("typer", "click", "rich", "pydantic", "litellm", "markdown_it", "watchdog", "frontmatter")


def test_the_recall_fast_path_imports_no_heavy_module(vault: Vault, env: dict[str, str]) -> None:
    MemoryService(vault, "demo", environ={}).save(
        "tea", type="user", description="Drinks green tea", body="tea"
    )
    probe = (
        "import io, sys\n"
        "from aibuddy_cli import fastpath\n"
        "out = io.StringIO()\n"
        "code = fastpath.run(['memory', 'recall', 'tea', '--json'], out, sys.stderr)\n"
        "assert code == 0 and '\"tea\"' in out.getvalue(), (code, out.getvalue())\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_help_does_not_import_litellm(env: dict[str, str]) -> None:
    probe = (
        "import sys\n"
        "from aibuddy_cli.__main__ import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('litellm' in sys.modules, 'watchdog' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip().endswith("False False"), result.stdout + result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "recall", "green tea", "--json"],
        ["memory", "recall", "green tea"],
        ["memory", "recall", "--limit", "1", "tea", "--json"],
        ["--user", "bob", "memory", "recall", "tea", "--json"],
        ["--vault=MISSING", "memory", "recall", "tea", "--json"],
        ["memory", "recall", "   ", "--json"],
        ["--user", "../x", "memory", "recall", "tea"],
    ],
)
def test_fast_path_and_typer_app_print_the_same(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]
) -> None:
    import io

    from aibuddy_cli import fastpath

    memory = MemoryService(vault, "demo", environ={})
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    memory.save("coffee", type="user", description="Dislikes coffee", body="no coffee")
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    args = [f"--vault={tmp_path / 'missing'}" if a == "--vault=MISSING" else a for a in args]

    def telemetry_free(text: str) -> str:
        # Each run bumps recallCount/lastRecalledAt, so compare everything else.
        try:
            document = json.loads(text)
        except ValueError:
            return text
        for record in document.get("records", []):
            record.pop("recallCount"), record.pop("lastRecalledAt")
        return json.dumps(document)

    out, err = io.StringIO(), io.StringIO()
    fast_code = fastpath.run(args, out, err)
    assert fast_code is not None, "the fast path should handle this call"
    typer_result = CliRunner().invoke(app, args)
    assert typer_result.exit_code == fast_code
    assert telemetry_free(typer_result.stdout) == telemetry_free(out.getvalue())
    assert typer_result.stderr == err.getvalue()


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "recall", "--help"],
        ["memory", "recall"],
        ["memory", "recall", "x", "--limit", "0"],
        ["memory", "recall", "x", "--bogus"],
        ["memory", "list"],
        ["--verbose", "memory", "recall", "x"],
        ["kb", "read", "doc"],
        ["kb", "search", "x", "--max-chars", "3"],
        ["kb", "read", "a", "b", "--limit", "2"],
        ["kb", "read", "a", "b", "--max-chars", "zero"],
        ["kb", "list"],
    ],
)
def test_the_fast_path_leaves_anything_unusual_to_typer(args: list[str]) -> None:
    import io

    from aibuddy_cli import fastpath

    assert fastpath.run(args, io.StringIO(), io.StringIO()) is None


KB_CALLS = [
    ["kb", "search", "字符串 push_str", "--json"],
    ["kb", "search", "字符串", "--task", "t1", "--limit", "2"],
    ["kb", "search", '"UTF-8 编码"', "--json"],
    ["kb", "search", "nothing-matches-this", "--json"],
    ["kb", "search", "the", "--json"],
    ["kb", "read", "ch08-02-strings", "更新字符串", "--json"],
    ["kb", "read", "ch08-02-strings", "字符串-slice", "--max-chars", "100"],
    ["kb", "read", "ch08-02-strings", "更新字符", "--json"],
    ["kb", "read", "ch08-02-strings", "更新字符串", "--cursor", "bad", "--json"],
    ["kb", "read", "../x", "a", "--json"],
    ["--user", "bob", "kb", "read", "ch08-02-strings", "更新字符串", "--task", "t1", "--json"],
]


@pytest.fixture
def kb_vault(vault: Vault) -> Vault:
    from conftest import STRINGS

    from aibuddy_cli.knowledge.service import KnowledgeService
    from aibuddy_cli.tasks.service import TaskService

    service = KnowledgeService(vault, "demo", environ={})
    service.import_paths([str(STRINGS)], scope="system")
    service.publish("ch08-02-strings")
    tasks = TaskService(vault, "demo")
    tasks.set_attached(tasks.new("strings").id, {"system/ch08-02-strings": True})
    return vault


@pytest.mark.parametrize("args", KB_CALLS)
def test_kb_fast_path_and_typer_app_print_the_same(
    kb_vault: Vault, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    import io

    from aibuddy_cli import fastpath

    monkeypatch.setenv("AIBUDDY_VAULT", str(kb_vault.root))
    out, err = io.StringIO(), io.StringIO()
    fast_code = fastpath.run(args, out, err)
    assert fast_code is not None, "the fast path should handle this call"
    typer_result = CliRunner().invoke(app, args)
    assert (typer_result.exit_code, typer_result.stdout, typer_result.stderr) == (
        fast_code,
        out.getvalue(),
        err.getvalue(),
    )


def test_the_kb_fast_path_imports_no_heavy_module(kb_vault: Vault, env: dict[str, str]) -> None:
    probe = (
        "import io, sys\n"
        "from aibuddy_cli import fastpath\n"
        "calls = (['kb', 'search', '字符串', '--json'], ['kb', 'read', 'ch08-02-strings', '更新字符串'])\n"
        "for args in calls:\n"
        "    out = io.StringIO()\n"
        "    assert fastpath.run(args, out, sys.stderr) == 0, out.getvalue()\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
