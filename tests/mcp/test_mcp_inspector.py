"""`aibuddy mcp` as a client nobody here wrote sees it: the official MCP Inspector's command-line
mode (npm `@modelcontextprotocol/inspector`). `.ci/run` installs it and names its binary in
AIBUDDY_INSPECTOR; without it (a user's clone, no npm) the test is skipped with that reason."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aibuddy_cli.vault import Vault

INSPECTOR = os.environ.get("AIBUDDY_INSPECTOR", "")

pytestmark = pytest.mark.skipif(
    not (INSPECTOR and Path(INSPECTOR).is_file() and os.access(INSPECTOR, os.X_OK)),
    reason="AIBUDDY_INSPECTOR names no MCP Inspector binary (.ci/run installs one with npm)",
)


def inspect(aibuddy_exe: list[str], vault: Vault, env: dict[str, str], *method: str) -> dict:
    # Inspector 2.x starts the server with a minimal environment, not ours: what aibuddy needs goes
    # with -e, and --vault is explicit. --cli comes first.
    passed = ("AIBUDDY_VAULT", "AIBUDDY_USER", "AIBUDDY_WORKER", "PYTHONPATH")
    env_args = [arg for key in passed if key in env for arg in ("-e", f"{key}={env[key]}")]
    server = [*aibuddy_exe, "--vault", str(vault.root), "mcp"]
    command = [INSPECTOR, "--cli", *env_args, *server, *method]  # --tool-arg takes what follows
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def test_the_inspector_lists_annotated_tools_and_calls_one(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli
) -> None:
    cli("memory", "save", "tea", "--type", "user", "--description", "Drinks green tea", "--body", "Sencha")
    tools = {
        tool["name"]: tool for tool in inspect(aibuddy_exe, vault, env, "--method", "tools/list")["tools"]
    }
    recall = tools["memory_recall"]
    assert recall["annotations"]["readOnlyHint"] is True and "outputSchema" in recall
    assert "memory_clear" not in tools
    called = inspect(
        aibuddy_exe,
        vault,
        env,
        "--method",
        "tools/call",
        "--tool-name",
        "memory_recall",
        "--tool-arg",
        "query=green tea",
    )
    assert called["isError"] is False
    assert [r["name"] for r in called["structuredContent"]["records"]] == ["tea"]
    templates = inspect(aibuddy_exe, vault, env, "--method", "resources/templates/list")["resourceTemplates"]
    assert "aibuddy://memory/{name}" in {t["uriTemplate"] for t in templates}
