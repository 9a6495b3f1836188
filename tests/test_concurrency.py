"""The tool as real processes running at once: saves and recalls from twenty processes lose nothing
and leave no temporary files."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from conftest import run_aibuddy

from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.storage import TEMP_PREFIX
from aibuddy_cli.vault import Vault


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
