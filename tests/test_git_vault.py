"""A vault shared through git: two clones of one remote recall and save concurrently, and the
aibuddy merge driver merges them; a real disagreement stays a git conflict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import child_env, run_aibuddy

from aibuddy_cli.vault import init_vault

GIT_USER = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def git(repo: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *GIT_USER, *args], env=env, capture_output=True, text=True, check=check
    )


@pytest.fixture
def clones(tmp_path: Path, aibuddy_exe: list[str]) -> tuple[Path, Path, dict[str, str]]:
    origin = tmp_path / "origin"
    init_vault(origin, "demo")
    env = child_env(origin)
    git(origin, "init", "-q", "-b", "main", env=env)
    git(origin, "add", "-A", env=env)
    git(origin, "commit", "-qm", "vault", env=env)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(remote)], check=True, env=env)
    clones = []
    for name in ("a", "b"):
        clone = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=env)
        setup = run_aibuddy(aibuddy_exe, "--vault", str(clone), "git", "setup", "--json", env=env)
        assert setup.returncode == 0, setup.stderr
        clones.append(clone)
    return clones[0], clones[1], env


def share(a: Path, b: Path, message: str, env: dict[str, str]) -> None:
    """Commit everything in clone a, push it, and pull it into clone b."""
    git(a, "add", "-A", env=env)
    git(a, "commit", "-qm", message, env=env)
    git(a, "push", "-q", env=env)
    git(b, "pull", "-q", "--no-rebase", env=env)


def aibuddy(aibuddy_exe: list[str], clone: Path, env: dict[str, str], *args: str) -> dict:
    result = run_aibuddy(aibuddy_exe, "--vault", str(clone), *args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_recalls_and_saves_in_two_clones_merge_without_conflict(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = clones
    assert ".gitattributes" in git(a, "ls-files", env=env).stdout
    aibuddy(
        aibuddy_exe, a, env, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea"
    )
    share(a, b, "tea", env)
    for _ in range(2):
        aibuddy(aibuddy_exe, a, env, "memory", "recall", "green tea")
    for _ in range(3):
        aibuddy(aibuddy_exe, b, env, "memory", "recall", "green tea")
    aibuddy(aibuddy_exe, b, env, "memory", "save", "coffee", "--type", "user", "--description", "No coffee")
    for clone, message in ((a, "recalls in a"), (b, "recalls in b")):
        git(clone, "add", "-A", env=env)
        git(clone, "commit", "-qm", message, env=env)
    git(a, "push", "-q", env=env)
    pulled = git(b, "pull", "-q", "--no-rebase", env=env, check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    record = aibuddy(aibuddy_exe, b, env, "memory", "show", "tea")
    assert record["recallCount"] == 5
    assert {r["name"] for r in aibuddy(aibuddy_exe, b, env, "memory", "list")["records"]} == {"tea", "coffee"}
    assert git(b, "status", "--porcelain", env=env).stdout == ""


def test_two_different_body_edits_stay_a_conflict(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = clones
    aibuddy(
        aibuddy_exe,
        a,
        env,
        "memory",
        "save",
        "tea",
        "--type",
        "user",
        "--description",
        "Tea",
        "--body",
        "Green.",
    )
    share(a, b, "tea", env)
    aibuddy(aibuddy_exe, a, env, "memory", "update", "tea", "--body", "Green, no sugar.")
    aibuddy(aibuddy_exe, b, env, "memory", "update", "tea", "--body", "Black with milk.")
    for clone in (a, b):
        git(clone, "commit", "-qam", "edit", env=env)
    git(a, "push", "-q", env=env)
    pulled = git(b, "pull", "-q", "--no-rebase", env=env, check=False)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    text = (b / "memory/demo/tea.md").read_text()
    assert "<<<<<<<" in text and "Green, no sugar." in text and "Black with milk." in text
    shown = run_aibuddy(aibuddy_exe, "--vault", str(b), "memory", "show", "tea", env=env)
    assert shown.returncode == 6 and b"merge conflict" in shown.stderr


def test_rows_added_in_two_clones_merge_with_unique_keys(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = clones
    aibuddy(aibuddy_exe, a, env, "table", "create", "vendors", "-c", "name:str")
    aibuddy(aibuddy_exe, a, env, "table", "add", "vendors", "--row", '{"name": "Acme"}')
    share(a, b, "vendors", env)
    aibuddy(
        aibuddy_exe,
        a,
        env,
        "table",
        "add",
        "vendors",
        "--row",
        '{"name": "Globex"}',
        "--row",
        '{"name": "Hooli"}',
    )
    aibuddy(aibuddy_exe, b, env, "table", "add", "vendors", "--row", '{"name": "Initech", "city": "Austin"}')
    aibuddy(
        aibuddy_exe,
        b,
        env,
        "table",
        "update-rows",
        "vendors",
        "--where",
        'name == "Acme"',
        "--set",
        '{"name": "Acme Corp"}',
    )
    for clone in (a, b):
        git(clone, "add", "-A", env=env)
        git(clone, "commit", "-qm", "rows", env=env)
    git(a, "push", "-q", env=env)
    pulled = git(b, "pull", "-q", "--no-rebase", env=env, check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    rows = aibuddy(aibuddy_exe, b, env, "table", "filter", "vendors")["tables"][0]["rows"]
    assert [(r["row_id"], r["name"]) for r in rows] == [
        (1, "Acme Corp"),
        (2, "Globex"),
        (3, "Hooli"),
        (4, "Initech"),
    ]
    assert rows[3]["city"] == "Austin" and rows[1]["city"] is None
    assert git(b, "status", "--porcelain", env=env).stdout == ""
    added = aibuddy(aibuddy_exe, b, env, "table", "add", "vendors", "--row", '{"name": "Umbrella"}')
    assert added["keys"] == [5]


def test_one_row_changed_differently_in_two_clones_is_a_conflict(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = clones
    aibuddy(aibuddy_exe, a, env, "table", "create", "vendors", "-c", "name:str")
    aibuddy(aibuddy_exe, a, env, "table", "add", "vendors", "--row", '{"name": "Acme"}')
    share(a, b, "vendors", env)
    for clone, name in ((a, "Acme A"), (b, "Acme B")):
        aibuddy(
            aibuddy_exe,
            clone,
            env,
            "table",
            "update-rows",
            "vendors",
            "--where",
            "True",
            "--set",
            json.dumps({"name": name}),
        )
        git(clone, "commit", "-qam", "rename", env=env)
    git(a, "push", "-q", env=env)
    pulled = git(b, "pull", "-q", "--no-rebase", env=env, check=False)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    assert "<<<<<<<" in (b / "tables/personal/demo/vendors.csv").read_text()


def test_a_clone_without_the_driver_gets_a_hint_once(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    _, _, env = clones
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "remote.git"), str(fresh)], check=True, env=env)
    first = run_aibuddy(aibuddy_exe, "--vault", str(fresh), "memory", "list", "--json", env=env)
    assert first.returncode == 0 and first.stderr.decode().count("aibuddy git setup") == 1
    again = run_aibuddy(aibuddy_exe, "--vault", str(fresh), "memory", "list", "--json", env=env)
    assert again.stderr == b""
    assert git(fresh, "status", "--porcelain", env=env).stdout == ""  # the marker is under .aibuddy/


def test_sidecars_merge_key_by_key(tmp_path: Path) -> None:
    from aibuddy_cli.gitmerge import merge_file

    base = {"title": "Guide", "sha256": "a", "summary": None, "reviewed_by": None}
    ours = {**base, "summary": "Ours."}
    theirs = {**base, "reviewed_by": "alice"}
    files = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        files.append(path)
    assert merge_file(*files, "knowledge/system/ready/guide.meta.json") == 0
    assert json.loads(files[1].read_text()) == {**base, "summary": "Ours.", "reviewed_by": "alice"}
    files[1].write_text(json.dumps({**base, "reviewed_by": "bob"}))
    assert merge_file(*files, "knowledge/system/ready/guide.meta.json") == 1  # a review both changed


def test_init_in_a_git_repository_registers_the_driver(aibuddy_exe: list[str], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = child_env(repo / "vault")
    git(repo, "init", "-q", env=env)
    made = run_aibuddy(aibuddy_exe, "--user", "demo", "init", str(repo / "vault"), env=env)
    assert made.returncode == 0, made.stderr
    driver = git(repo, "config", "--get", "merge.aibuddy.driver", env=env).stdout
    assert driver.strip().endswith("git merge-file %O %A %B %P")
    assert "tables/**/*.csv merge=aibuddy" in (repo / "vault/.gitattributes").read_text()


def test_init_in_a_folder_the_repository_ignores_registers_nothing_there(
    aibuddy_exe: list[str], tmp_path: Path
) -> None:
    """A vault made under a project's git-ignored folder (a benchmark's bench/out/) is not that
    repository's content: its driver and pre-commit hook would meddle with the project's commits."""
    repo = tmp_path / "project"
    (repo / "out").mkdir(parents=True)
    env = child_env(repo / "out" / "vault")
    git(repo, "init", "-q", env=env)
    (repo / ".gitignore").write_text("out/\n")
    made = run_aibuddy(aibuddy_exe, "--user", "demo", "init", str(repo / "out" / "vault"), env=env)
    assert made.returncode == 0, made.stderr
    config = git(repo, "config", "--get", "merge.aibuddy.driver", env=env, check=False)
    assert config.returncode == 1 and config.stdout == ""
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
