"""Shared by the tests of test_pgstore and those that build on them."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_in_process


def aibuddy(env: dict[str, str], *args: str) -> dict:
    done = run_in_process(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def vault_files(root: Path) -> dict[str, bytes]:
    """The files `store copy` carries, by their path in the vault."""
    found = {}
    parts = ("memory", "knowledge", "tables", "tasks", ".aibuddy/logs", ".aibuddy/undo")
    for part in [*parts, ".aibuddy/tokens.json"]:
        for path in [root / part] if (root / part).is_file() else sorted((root / part).rglob("*")):
            if path.is_file():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found
