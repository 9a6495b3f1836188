"""Shared by the tests of test_team_vault and those that build on them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from aibuddy_cli.store.composed import PERSONAL_FOLDERS

TEAM = '\n[teams.eng]\nmembers = ["alice", "bob"]\n'


def git(repo: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *GIT_USER, *args], env=env, capture_output=True, text=True, check=check
    )


def commit_all(repo: Path, message: str, env: dict[str, str], *, hooks: bool = False) -> None:
    """Without the pre-commit secrets check (two Python processes a commit) unless hooks: one test
    here commits through it, test_secrets tests it."""
    git(repo, "add", "-A", env=env)
    skip = [] if hooks else ["-c", "core.hooksPath=/dev/null"]
    git(repo, *skip, "commit", "-qm", message, env=env)


def personal_keys(tree: list[str]) -> list[str]:
    return [path for path in tree if path.startswith(tuple(f"{folder}/" for folder in PERSONAL_FOLDERS))]


GIT_USER = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
