"""A vault shared through git: two clones of one remote recall and save concurrently, and the
aibuddy merge driver merges them; a real disagreement stays a git conflict."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import child_env, run_aibuddy
from typer.testing import CliRunner

from aibuddy_cli.cli.app import app
from aibuddy_cli.vault import init_vault

GIT_USER = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
# The pre-commit secrets check `git setup` installs is test_secrets' subject (and test_team_vault
# commits through it once): here it would only start two Python processes a commit. The merge
# driver, what these tests are about, runs as git starts it.
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def git(repo: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *GIT_USER, *NO_HOOKS, *args],
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )


@pytest.fixture(scope="module")
def clones_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """origin, the bare remote.git and clones a and b, each set up (`aibuddy git setup`): made once,
    copied by each test (a dozen git processes and two set-ups a test otherwise)."""
    top = tmp_path_factory.mktemp("clones")
    origin = top / "origin"
    init_vault(origin, "demo")
    (top / "home").mkdir()
    env = child_env(origin, HOME=str(top / "home"))
    git(origin, "init", "-q", "-b", "main", env=env)
    git(origin, "add", "-A", env=env)
    git(origin, "commit", "-qm", "vault", env=env)
    remote = top / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(remote)], check=True, env=env)
    for name in ("a", "b"):
        clone = top / name
        subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=env)
        aibuddy([], clone, env, "git", "setup")
    return top


@pytest.fixture
def clones(clones_template: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A copy of the template in this test's folder, the clones' remote pointed at its remote.git."""
    for name in ("origin", "remote.git", "a", "b"):
        shutil.copytree(clones_template / name, tmp_path / name, symlinks=True)
    for name in ("a", "b"):
        config = tmp_path / name / ".git" / "config"
        config.write_text(config.read_text().replace(str(clones_template), str(tmp_path)))
    return tmp_path / "a", tmp_path / "b", child_env(tmp_path / "origin")


def share(a: Path, b: Path, message: str, env: dict[str, str]) -> None:
    """Commit everything in clone a, push it, and pull it into clone b."""
    git(a, "add", "-A", env=env)
    git(a, "commit", "-qm", message, env=env)
    git(a, "push", "-q", env=env)
    git(b, "pull", "-q", "--no-rebase", env=env)


def aibuddy(aibuddy_exe: list[str], clone: Path, env: dict[str, str], *args: str) -> dict:
    """A command in one clone, in-process (a process each would cost the suite minutes): what these
    tests put to the test is git and the merge driver it runs, which stay real processes."""
    command = ["--vault", str(clone), *args, "--json"]
    result = CliRunner().invoke(app, command, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.process
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


@pytest.mark.process
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


@pytest.mark.process
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
    update_rows(aibuddy_exe, b, env, 'name == "Acme"', {"name": "Acme Corp"})
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


@pytest.mark.process
def test_one_row_changed_differently_in_two_clones_is_a_conflict(
    aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = clones
    aibuddy(aibuddy_exe, a, env, "table", "create", "vendors", "-c", "name:str")
    aibuddy(aibuddy_exe, a, env, "table", "add", "vendors", "--row", '{"name": "Acme"}')
    share(a, b, "vendors", env)
    for clone, name in ((a, "Acme A"), (b, "Acme B")):
        update_rows(aibuddy_exe, clone, env, "True", {"name": name})
        git(clone, "commit", "-qam", "rename", env=env)
    git(a, "push", "-q", env=env)
    pulled = git(b, "pull", "-q", "--no-rebase", env=env, check=False)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    assert "<<<<<<<" in (b / "tables/personal/demo/vendors.csv").read_text()


@pytest.mark.process
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


@pytest.mark.process
def test_sidecars_merge_key_by_key(tmp_path: Path) -> None:
    from aibuddy_cli.app.merge_driver import merge_file

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


@pytest.mark.process
def test_init_in_a_git_repository_registers_the_driver(aibuddy_exe: list[str], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = child_env(repo / "vault")
    git(repo, "init", "-q", env=env)
    made = run_aibuddy(aibuddy_exe, "--user", "demo", "init", str(repo / "vault"), env=env)
    assert made.returncode == 0, made.stderr
    driver = git(repo, "config", "--get", "merge.aibuddy.driver", env=env).stdout
    assert driver.strip().endswith("git merge-file %O %A %B %P")
    attributes = (repo / "vault/.gitattributes").read_text()
    assert (
        "tables/**/*.csv merge=aibuddy" in attributes
        and "tasks/**/messages.jsonl merge=aibuddy" in attributes
    )


@pytest.mark.process
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


# --- merge or rebase: keys and message numbers already pushed never change ------------------------

PULLS = ("merge", "rebase")
VENDORS = "tables/personal/demo/vendors.csv"


def commit(clone: Path, message: str, env: dict[str, str]) -> None:
    git(clone, "add", "-A", env=env)
    git(clone, "commit", "-qm", message, env=env)


def pull(clone: Path, how: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`git pull` as a user set it up: a merge, or a rebase through `pull.rebase true`."""
    git(clone, "config", "pull.rebase", "true" if how == "rebase" else "false", env=env)
    return git(clone, "pull", "-q", env=env, check=False)


def rows_of(aibuddy_exe: list[str], clone: Path, env: dict[str, str], table: str = "vendors") -> list[dict]:
    return aibuddy(aibuddy_exe, clone, env, "table", "filter", table)["tables"][0]["rows"]


def next_key(clone: Path, table: str = "vendors") -> int:
    return json.loads((clone / f"tables/personal/demo/{table}.schema.json").read_text())["next_key"]


def add_rows(aibuddy_exe: list[str], clone: Path, env: dict[str, str], *rows: dict) -> list[int]:
    args = [arg for row in rows for arg in ("--row", json.dumps(row))]
    return aibuddy(aibuddy_exe, clone, env, "table", "add", "vendors", *args)["keys"]


def update_rows(aibuddy_exe: list[str], clone: Path, env: dict[str, str], where: str, values: dict) -> None:
    args = ["--where", where, "--set", json.dumps(values)]
    aibuddy(aibuddy_exe, clone, env, "table", "update-rows", "vendors", *args)


@pytest.fixture
def vendors(aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]) -> tuple[Path, Path, dict]:
    """Both clones hold the table vendors with row 1, Acme."""
    a, b, env = clones
    aibuddy(aibuddy_exe, a, env, "table", "create", "vendors", "-c", "name:str")
    add_rows(aibuddy_exe, a, env, {"name": "Acme"})
    share(a, b, "vendors", env)
    return a, b, env


@pytest.mark.process
@pytest.mark.parametrize("how", PULLS)
def test_a_pull_keeps_the_keys_already_pushed_and_the_next_key_above_them(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]], how: str
) -> None:
    a, b, env = vendors
    assert add_rows(aibuddy_exe, a, env, {"name": "Globex"}, {"name": "Hooli"}) == [2, 3]
    commit(a, "two rows", env)
    git(a, "push", "-q", env=env)
    assert add_rows(aibuddy_exe, b, env, {"name": "Initech"}) == [2]
    commit(b, "one row", env)
    pulled = pull(b, how, env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert [(r["row_id"], r["name"]) for r in rows_of(aibuddy_exe, b, env)] == [
        (1, "Acme"),
        (2, "Globex"),
        (3, "Hooli"),
        (4, "Initech"),
    ]
    assert next_key(b) == 5  # the schema itself, not only `table add`, is past every key
    git(b, "push", "-q", env=env)
    assert pull(a, how, env).returncode == 0
    assert next_key(a) == 5
    assert add_rows(aibuddy_exe, a, env, {"name": "Umbrella"}) == [5]


@pytest.mark.process
def test_a_rebase_of_two_commits_keeps_the_edit_of_a_row_it_renumbered(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = vendors
    add_rows(aibuddy_exe, a, env, {"name": "Globex"})
    commit(a, "Globex", env)
    git(a, "push", "-q", env=env)
    add_rows(aibuddy_exe, b, env, {"name": "Initech"})
    commit(b, "Initech", env)
    update_rows(aibuddy_exe, b, env, 'name == "Initech"', {"name": "Initech Inc"})
    commit(b, "rename Initech", env)
    pulled = pull(b, "rebase", env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert [(r["row_id"], r["name"]) for r in rows_of(aibuddy_exe, b, env)] == [
        (1, "Acme"),
        (2, "Globex"),
        (3, "Initech Inc"),
    ]


@pytest.mark.process
def test_stash_pop_after_a_pull_moves_the_stashed_rows_not_the_pulled_ones(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = vendors
    add_rows(aibuddy_exe, a, env, {"name": "Globex"})
    commit(a, "Globex", env)
    git(a, "push", "-q", env=env)
    add_rows(aibuddy_exe, b, env, {"name": "Initech"})  # not committed
    git(b, "stash", "-q", env=env)
    assert pull(b, "merge", env).returncode == 0
    popped = git(b, "stash", "pop", "-q", env=env, check=False)
    assert popped.returncode == 0, popped.stdout + popped.stderr
    assert [(r["row_id"], r["name"]) for r in rows_of(aibuddy_exe, b, env)] == [
        (1, "Acme"),
        (2, "Globex"),
        (3, "Initech"),
    ]


# --- rows and columns merge together, cell by cell -----------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("how", PULLS)
def test_a_column_added_in_one_clone_merges_with_a_cell_edited_in_the_other(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]], how: str
) -> None:
    a, b, env = vendors
    aibuddy(aibuddy_exe, a, env, "table", "column", "add", "vendors", "city", "str")
    update_rows(aibuddy_exe, a, env, "True", {"city": "Oslo"})
    commit(a, "city", env)
    git(a, "push", "-q", env=env)
    aibuddy(aibuddy_exe, b, env, "table", "column", "add", "vendors", "phone", "str")
    update_rows(aibuddy_exe, b, env, "True", {"name": "Acme Corp", "phone": "555"})
    add_rows(aibuddy_exe, b, env, {"name": "Initech"})
    commit(b, "name and phone", env)
    pulled = pull(b, how, env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    rows = rows_of(aibuddy_exe, b, env)
    assert [(r["row_id"], r["name"], r["city"], r["phone"]) for r in rows] == [
        (1, "Acme Corp", "Oslo", "555"),
        (2, "Initech", None, None),
    ]
    header = (b / VENDORS).read_text().splitlines()[0]
    assert header == "row_id,name,city,phone"  # the pushed order, then the merged clone's new column
    assert git(b, "status", "--porcelain", env=env).stdout == ""


@pytest.mark.process
def test_two_clones_changing_different_cells_of_one_row_merge(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = vendors
    aibuddy(aibuddy_exe, a, env, "table", "column", "add", "vendors", "city", "str")
    share(a, b, "city", env)
    for clone, values in ((a, {"name": "Acme Corp"}), (b, {"city": "Oslo"})):
        update_rows(aibuddy_exe, clone, env, "True", values)
        commit(clone, "edit", env)
    git(a, "push", "-q", env=env)
    pulled = pull(b, "merge", env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert [(r["name"], r["city"]) for r in rows_of(aibuddy_exe, b, env)] == [("Acme Corp", "Oslo")]


@pytest.mark.process
def test_one_cell_changed_differently_beside_a_new_column_is_a_conflict_reported_as_one(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = vendors
    aibuddy(aibuddy_exe, a, env, "table", "column", "add", "vendors", "city", "str")
    update_rows(aibuddy_exe, a, env, "True", {"name": "Acme A"})
    commit(a, "A", env)
    git(a, "push", "-q", env=env)
    update_rows(aibuddy_exe, b, env, "True", {"name": "Acme B"})
    commit(b, "B", env)
    pulled = pull(b, "merge", env)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    text = (b / VENDORS).read_text()
    assert "<<<<<<<" in text and "Acme A" in text and "Acme B" in text
    assert text.splitlines()[0] == "row_id,name,city"  # the columns merged; the one row conflicts
    shown = run_aibuddy(aibuddy_exe, "--vault", str(b), "table", "filter", "vendors", env=env)
    error = shown.stderr.decode()
    assert shown.returncode == 6 and "unresolved merge conflict" in error and "fields where" not in error
    assert f"{VENDORS}: unresolved merge conflict (lines 2-6)" in error
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    as_json = run_aibuddy(aibuddy_exe, "--vault", str(b), "table", "filter", "vendors", "--json", env=env)
    assert as_json.returncode == 6
    assert "unresolved merge conflict" in json.loads(as_json.stdout)["error"]["message"]


# --- task logs ----------------------------------------------------------------------------------

LOG = "tasks/demo/t1/messages.jsonl"


def say(aibuddy_exe: list[str], clone: Path, env: dict[str, str], *texts: str) -> list[int]:
    return [
        aibuddy(aibuddy_exe, clone, env, "task", "add-message", "t1", text, "--role", "user")["n"]
        for text in texts
    ]


def logged(clone: Path) -> list[tuple[int, str]]:
    lines = (clone / LOG).read_text().splitlines()
    return [(m["n"], m["content"]) for m in map(json.loads, lines)]


@pytest.fixture
def task(aibuddy_exe: list[str], clones: tuple[Path, Path, dict[str, str]]) -> tuple[Path, Path, dict]:
    """Both clones hold task t1 with message 1."""
    a, b, env = clones
    aibuddy(aibuddy_exe, a, env, "task", "new", "Plan the offsite")
    say(aibuddy_exe, a, env, "hello")
    share(a, b, "t1", env)
    return a, b, env


@pytest.mark.process
@pytest.mark.parametrize(("how", "in_b"), [("merge", 2), ("rebase", 2), ("merge", 1)])
def test_messages_added_in_two_clones_merge_the_pushed_ones_keeping_their_numbers(
    aibuddy_exe: list[str], task: tuple[Path, Path, dict[str, str]], how: str, in_b: int
) -> None:
    """in_b 1: both clones add one message, their task.json are the same, and git keeps it."""
    a, b, env = task
    say(aibuddy_exe, a, env, "from a")
    commit(a, "a", env)
    git(a, "push", "-q", env=env)
    said = ["from b", "b again"][:in_b]
    for text in said:  # a commit each: a rebase replays them one after the other
        say(aibuddy_exe, b, env, text)
        commit(b, text, env)
    pulled = pull(b, how, env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert logged(b) == [(1, "hello"), (2, "from a"), *((3 + i, text) for i, text in enumerate(said))]
    count = 2 + in_b
    assert aibuddy(aibuddy_exe, b, env, "task", "show", "t1")["messages"] == count
    assert git(b, "status", "--porcelain", env=env).stdout == ""
    assert say(aibuddy_exe, b, env, "after the pull") == [count + 1]
    commit(b, "b after", env)
    git(b, "push", "-q", env=env)
    assert pull(a, how, env).returncode == 0
    assert say(aibuddy_exe, a, env, "a after") == [count + 2]


@pytest.mark.process
def test_a_task_closed_in_one_clone_stays_closed_with_the_other_clones_messages(
    aibuddy_exe: list[str], task: tuple[Path, Path, dict[str, str]]
) -> None:
    a, b, env = task
    say(aibuddy_exe, a, env, "from a")
    aibuddy(aibuddy_exe, a, env, "task", "end", "t1")
    commit(a, "a closes", env)
    git(a, "push", "-q", env=env)
    say(aibuddy_exe, b, env, "from b")
    commit(b, "b", env)
    pulled = pull(b, "merge", env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    shown = aibuddy(aibuddy_exe, b, env, "task", "show", "t1")
    assert (shown["status"], shown["messages"]) == ("closed", 3)
    assert logged(b) == [(1, "hello"), (2, "from a"), (3, "from b")]


@pytest.mark.process
@pytest.mark.parametrize(("how", "consolidated_in"), [("merge", "b"), ("rebase", "b"), ("merge", "ab")])
def test_a_consolidation_watermark_never_claims_the_other_clones_messages(
    aibuddy_exe: list[str],
    task: tuple[Path, Path, dict[str, str]],
    fake_openai,
    how: str,
    consolidated_in: str,
) -> None:
    a, b, env = task
    model = {
        **env,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
        "AIBUDDY_MODEL_CONSOLIDATE": "openai/consolidate-test",
        "AIBUDDY_TIMEOUT": "30",
    }
    say(aibuddy_exe, a, env, "from a")
    if "a" in consolidated_in:
        assert aibuddy(aibuddy_exe, a, model, "task", "consolidate", "t1")["status"]["through"] == 2
    commit(a, "a", env)
    git(a, "push", "-q", env=env)
    say(aibuddy_exe, b, env, "from b", "b again")
    assert aibuddy(aibuddy_exe, b, model, "task", "consolidate", "t1")["status"]["through"] == 3
    commit(b, "b consolidated", env)
    pulled = pull(b, how, env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert logged(b) == [(1, "hello"), (2, "from a"), (3, "from b"), (4, "b again")]
    status = aibuddy(aibuddy_exe, b, env, "task", "show", "t1")["consolidation"]
    # a's message 2 was consolidated only if a did it; b's messages now come after it.
    through = 2 if "a" in consolidated_in else 0
    assert (status["through"], status["pending"]) == (through, 4 - through)
    done = aibuddy(aibuddy_exe, b, model, "task", "consolidate", "t1")
    assert [p["chunk"] for p in done["passes"]] == [[through + 1, 4]]
    prompt = json.dumps(fake_openai.requests[-1]["body"]["messages"])
    assert "from a" in prompt or through == 2
    assert "b again" in prompt


@pytest.mark.process
def test_git_setup_routes_task_files_in_a_vault_made_before_it_did(
    aibuddy_exe: list[str], tmp_path: Path
) -> None:
    origin = tmp_path / "old"
    init_vault(origin, "demo")
    attributes = origin / ".gitattributes"
    attributes.write_text(
        "".join(f"{line}\n" for line in attributes.read_text().splitlines() if "tasks/" not in line)
    )
    env = child_env(origin)
    git(origin, "init", "-q", "-b", "main", env=env)
    commit(origin, "an older vault", env)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, env=env)
    setup = run_aibuddy(aibuddy_exe, "--vault", str(clone), "git", "setup", "--json", env=env)
    assert setup.returncode == 0, setup.stderr
    routed = git(clone, "check-attr", "merge", "--", LOG, "tasks/demo/t1/task.json", env=env).stdout
    assert routed.count("merge: aibuddy") == 2
    assert git(clone, "status", "--porcelain", env=env).stdout == " M .gitattributes\n"


@pytest.mark.process
def test_task_files_merge_field_by_field(tmp_path: Path) -> None:
    """What git passes the driver for task.json (a merge: ours is the local clone)."""
    from aibuddy_cli.app.merge_driver import merge_file

    base = {
        "id": "t1",
        "goal": "Plan",
        "created": "2026-01-01T00:00:00Z",
        "status": "open",
        "attached": ["system/guide"],
        "plan": None,
        "recalled": {"tea": 1},
        "messages": 2,
        "in_use": ["system/guide"],
    }
    ours = {
        **base,
        "attached": ["system/guide", "system/map"],
        "recalled": {"tea": 1, "coffee": 3},
        "messages": 4,
        "in_use": ["system/guide", "system/map"],
    }
    theirs = {
        **base,
        "status": "closed",
        "attached": [],
        "recalled": {"tea": 1, "coffee": 2, "milk": 3},
        "messages": 3,
        "in_use": [],
    }
    files = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        files.append(path)
    assert merge_file(*files, "tasks/demo/t1/task.json", replaying=False) == 0
    merged = json.loads(files[1].read_text())
    # ours' messages 3 and 4 are renumbered 4 and 5, after theirs' 3: coffee at ours' 3 is now 4.
    assert merged == {
        **base,
        "status": "closed",
        "attached": ["system/map"],
        "messages": 5,
        "recalled": {"tea": 1, "coffee": 2, "milk": 3},
        "in_use": ["system/guide", "system/map"],
    }
    files[1].write_text(json.dumps({**ours, "goal": "Plan the offsite"}))
    files[2].write_text(json.dumps({**theirs, "goal": "Plan the party"}))
    assert merge_file(*files, "tasks/demo/t1/task.json", replaying=False) == 1
    assert "<<<<<<<" in files[1].read_text()


def test_a_vault_in_a_folder_of_the_repository_merges_its_files_too(tmp_path: Path) -> None:
    """git names the file from the top of the repository (%P), where it runs the driver."""
    from aibuddy_cli.app.merge_driver import merge_file

    init_vault(tmp_path / "notes", "demo")  # tmp_path is the current folder: the repository's top
    line = (
        '{{"n": {n}, "role": "user", "content": "{text}", "at": "2026-01-01T00:00:0{n}Z", "attached": []}}\n'
    )
    files = []
    for name, texts in (("base", ["hello"]), ("ours", ["hello", "mine"]), ("theirs", ["hello", "yours"])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(line.format(n=n, text=text) for n, text in enumerate(texts, 1)))
        files.append(path)
    assert merge_file(*files, "notes/tasks/demo/t1/messages.jsonl", replaying=False) == 0
    merged = [json.loads(text) for text in files[1].read_text().splitlines()]
    assert [(m["n"], m["content"]) for m in merged] == [(1, "hello"), (2, "yours"), (3, "mine")]


@pytest.mark.process
def test_a_cherry_pick_keeps_the_branch_keys_and_moves_the_picked_rows(
    aibuddy_exe: list[str], vendors: tuple[Path, Path, dict[str, str]]
) -> None:
    _, b, env = vendors
    git(b, "switch", "-q", "-c", "fix", env=env)
    add_rows(aibuddy_exe, b, env, {"name": "Globex"})
    commit(b, "Globex on fix", env)
    git(b, "switch", "-q", "main", env=env)
    add_rows(aibuddy_exe, b, env, {"name": "Initech"})
    commit(b, "Initech on main", env)
    picked = git(b, "cherry-pick", "fix", env=env, check=False)
    assert picked.returncode == 0, picked.stdout + picked.stderr
    assert [(r["row_id"], r["name"]) for r in rows_of(aibuddy_exe, b, env)] == [
        (1, "Acme"),
        (2, "Initech"),
        (3, "Globex"),
    ]
    # Both sides' schemas said next_key 3, so git kept that one without asking the driver:
    # `table add` starts past the largest key all the same.
    assert add_rows(aibuddy_exe, b, env, {"name": "Hooli"}) == [4]
