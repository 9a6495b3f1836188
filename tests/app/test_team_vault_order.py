"""A team's remote never receives personal data, and a person's records stay theirs, whatever order
people set up, clone, save, pull and commit in. Each case was a leak or a loss an issue found; each
is played with real git, a bare remote and two users on two "machines" (HOME, XDG_DATA_HOME), as
tests/app/test_team_vault.py does."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import child_env, run_in_process
from team_support import TEAM, commit_all, git, personal_keys

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.vault import Vault, init_vault


def aibuddy(clone: Path, env: dict[str, str], *args: str, cwd: Path | None = None) -> tuple[int, dict, str]:
    """A command in clone (in this process, as the other team tests run it): exit code, its JSON
    answer (or {}), and what it said on stderr."""
    done = run_in_process("--vault", str(clone), *args, "--json", env=env, cwd=cwd)
    try:
        document = json.loads(done.stdout) if done.stdout else {}
    except ValueError:
        document = {}
    return done.returncode, document, done.stderr.decode("utf-8", "replace")


def ok(clone: Path, env: dict[str, str], *args: str) -> tuple[dict, str]:
    code, document, said = aibuddy(clone, env, *args)
    assert code == 0, (args, document, said)
    return document, said


def unset_team_remote(tmp_path: Path) -> Path:
    """A team vault alice made and pushed before anyone ran `aibuddy git setup` in it."""
    origin = tmp_path / "origin"
    init_vault(origin, "alice")
    (origin / "aibuddy.toml").write_text((origin / "aibuddy.toml").read_text() + TEAM)
    env = child_env(origin, "alice", HOME=str(tmp_path / "admin"))
    git(origin, "init", "-q", "-b", "main", env=env)
    commit_all(origin, "vault", env)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(remote)], check=True, env=env)
    return remote


def clone_for(tmp_path: Path, remote: Path, user: str) -> tuple[Path, dict[str, str], Path]:
    """user's clone on their own machine, no set-up run: the clone, its environment, and where
    that machine keeps personal vaults."""
    home = tmp_path / f"home-{user}"
    home.mkdir()
    clone = tmp_path / f"clone-{user}"
    env = child_env(clone, user, HOME=str(home))
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=env)
    return clone, env, home / ".local" / "share" / "aibuddy" / "vaults"


def remote_paths(tmp_path: Path, remote: Path, env: dict[str, str]) -> list[str]:
    """Every path any commit of the remote ever held."""
    fresh = tmp_path / "fresh-look"
    shutil.rmtree(fresh, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(fresh)], check=True, env=env)
    return git(fresh, "log", "--all", "--name-only", "--format=", env=env).stdout.split()


# --- 1. memories saved before the vault_id arrives ------------------------------------------------


@pytest.mark.process
def test_a_memory_saved_before_the_vault_id_arrived_is_still_yours_after_the_pull(tmp_path: Path) -> None:
    """bob clones before alice's `git setup` commit reaches him and saves a memory (into a folder
    named after his clone's path); once he pulls her vault_id, `memory list` still shows it (moved
    into the vault id's folder, and said so), `git setup` has nothing left to move, and `doctor`
    finds no personal folder the vault does not use."""
    remote = unset_team_remote(tmp_path)
    b, bob, bob_vaults = clone_for(tmp_path, remote, "bob")
    _, said = ok(b, bob, "memory", "save", "coffee", "--type", "user", "--description", "Bob takes no coffee")
    assert "has no vault_id" in said
    early = [folder for folder in bob_vaults.iterdir() if folder.is_dir()]
    assert [f.name.startswith("clone-bob-") for f in early] == [True]

    a, alice, _ = clone_for(tmp_path, remote, "alice")
    vault_id = ok(a, alice, "git", "setup")[0]["team"]["vault_id"]
    commit_all(a, "a team vault", alice)
    git(a, "push", "-q", env=alice)
    git(b, "pull", "-q", "--no-rebase", env=bob)

    listed, said = ok(b, bob, "memory", "list")
    assert [r["name"] for r in listed["records"]] == ["coffee"]
    assert "moved 1 personal file(s)" in said and str(early[0]) in said
    assert (bob_vaults / vault_id / "memory" / "bob" / "coffee.md").is_file()
    assert not early[0].exists()
    setup = ok(b, bob, "git", "setup")[0]["team"]
    assert setup["moved_folder"] is None and setup["stranded_folder"] is None
    report = aibuddy(b, bob, "doctor")[1]
    assert report["unused_personal_folders"] == []
    assert git(b, "status", "--porcelain", env=bob).stdout == ""
    assert personal_keys(remote_paths(tmp_path, remote, bob)) == []


@pytest.mark.process
def test_git_setup_run_first_after_the_pull_moves_the_early_folder_and_says_so(tmp_path: Path) -> None:
    """The same, when the first command after the pull is `git setup`: its answer names the folder
    it moved (`moved_folder`), and the record is listed."""
    remote = unset_team_remote(tmp_path)
    b, bob, bob_vaults = clone_for(tmp_path, remote, "bob")
    ok(b, bob, "memory", "save", "coffee", "--type", "user", "--description", "Bob takes no coffee")
    [early] = list(bob_vaults.iterdir())
    a, alice, _ = clone_for(tmp_path, remote, "alice")
    ok(a, alice, "git", "setup")
    commit_all(a, "a team vault", alice)
    git(a, "push", "-q", env=alice)
    git(b, "pull", "-q", "--no-rebase", env=bob)

    setup = ok(b, bob, "git", "setup")[0]["team"]
    assert setup["moved_folder"] == str(early) and setup["stranded_folder"] is None
    assert setup["vault_id_added"] is False
    assert [r["name"] for r in ok(b, bob, "memory", "list")[0]["records"]] == ["coffee"]


@pytest.mark.process
def test_a_record_both_folders_hold_differently_is_kept_and_named_until_someone_chooses(
    tmp_path: Path,
) -> None:
    """bob saves `coffee` in a clone made before the vault_id, and another `coffee` in a second
    clone made after it: when the first clone pulls the vault_id, the other records move, that
    one stays in the early folder (never overwritten, never merged blindly), every command says
    so, `git setup` names the folder and `doctor` lists what is in it."""
    remote = unset_team_remote(tmp_path)
    b, bob, bob_vaults = clone_for(tmp_path, remote, "bob")
    for name, description in (("coffee", "No coffee after noon"), ("tea", "Green tea")):
        ok(b, bob, "memory", "save", name, "--type", "user", "--description", description)
    [early] = list(bob_vaults.iterdir())
    a, alice, _ = clone_for(tmp_path, remote, "alice")
    vault_id = ok(a, alice, "git", "setup")[0]["team"]["vault_id"]
    commit_all(a, "a team vault", alice)
    git(a, "push", "-q", env=alice)
    second = tmp_path / "clone-bob-2"
    subprocess.run(["git", "clone", "-q", str(remote), str(second)], check=True, env=bob)
    ok(second, bob, "memory", "save", "coffee", "--type", "user", "--description", "Two coffees a day")

    git(b, "pull", "-q", "--no-rebase", env=bob)
    listed, said = ok(b, bob, "memory", "list")
    assert sorted((r["name"], r["description"]) for r in listed["records"]) == [
        ("coffee", "Two coffees a day"), ("tea", "Green tea")
    ]
    assert "moved 1 personal file(s)" in said and f"{early} still holds 1 personal file(s)" in said
    assert "No coffee after noon" in (early / "memory" / "bob" / "coffee.md").read_text()
    setup = ok(b, bob, "git", "setup")[0]["team"]
    assert setup["stranded_folder"] == str(early)
    report = aibuddy(b, bob, "doctor")[1]
    assert report["unused_personal_folders"] == [
        {"path": str(early), "why": "this clone's, from before the vault had its vault_id",
         "files": ["memory/bob/coffee.md"]}
    ]
    assert (bob_vaults / vault_id / "memory" / "bob" / "tea.md").is_file()


@pytest.mark.process
def test_doctor_names_the_vault_ids_folder_while_the_environment_names_another_and_moves_it(
    tmp_path: Path,
) -> None:
    """alice's records are in the vault id's folder; she then sets AIBUDDY_PERSONAL_VAULT. doctor
    names the folder she no longer uses (with its files), `doctor --move` moves them into the one
    she does, and her records are listed again."""
    remote = unset_team_remote(tmp_path)
    a, alice, alice_vaults = clone_for(tmp_path, remote, "alice")
    vault_id = ok(a, alice, "git", "setup")[0]["team"]["vault_id"]
    ok(a, alice, "memory", "save", "tea", "--type", "user", "--description", "Green tea")
    mine = {**alice, "AIBUDDY_PERSONAL_VAULT": str(tmp_path / "mine")}
    assert ok(a, mine, "memory", "list")[0]["records"] == []
    by_id = alice_vaults / vault_id
    report = aibuddy(a, mine, "doctor")[1]
    assert [(f["path"], f["files"]) for f in report["unused_personal_folders"]] == [
        (str(by_id), ["memory/alice/tea.md"])
    ]
    code, moved, said = aibuddy(a, mine, "doctor", "--move", "--yes")
    assert moved["moved"] == [f"{by_id}/memory/alice/tea.md"] and moved["unused_personal_folders"] == []
    assert [r["name"] for r in ok(a, mine, "memory", "list")[0]["records"]] == ["tea"]
    assert not by_id.exists()


@pytest.mark.process
def test_moving_an_unused_personal_folder_asks_for_no_commit(tmp_path: Path) -> None:
    """Nothing of the shared tree moved, so git has nothing to commit: `doctor --move` does not
    say to commit a removal (it did, with the history purge hint)."""
    remote = unset_team_remote(tmp_path)
    a, alice, _ = clone_for(tmp_path, remote, "alice")
    ok(a, alice, "memory", "save", "tea", "--type", "user", "--description", "Green tea")
    ok(a, alice, "git", "setup")
    mine = {**alice, "AIBUDDY_PERSONAL_VAULT": str(tmp_path / "mine")}
    done = run_in_process("--vault", str(a), "doctor", "--move", "--yes", env=mine)
    said = done.stdout.decode()
    assert done.returncode == 0 and "moved " in said, said
    assert "commit the removal" not in said and "git history" not in said, said


# --- 2. a committed .aibuddy symlink ------------------------------------------------------------------


def set_up_team(tmp_path: Path) -> tuple[Path, tuple[Path, dict[str, str]], tuple[Path, dict[str, str]]]:
    """The remote of a team vault alice set up and pushed, and alice's and bob's clones, set up."""
    remote = unset_team_remote(tmp_path)
    a, alice, _ = clone_for(tmp_path, remote, "alice")
    ok(a, alice, "git", "setup")
    commit_all(a, "a team vault", alice)
    git(a, "push", "-q", env=alice)
    b, bob, _ = clone_for(tmp_path, remote, "bob")
    ok(b, bob, "git", "setup")
    return remote, (a, alice), (b, bob)


@pytest.mark.process
def test_a_committed_aibuddy_symlink_never_carries_the_indexes_to_the_remote(tmp_path: Path) -> None:
    """alice links `.aibuddy` to a tracked folder: `git add -A` leaves the link out (the ignore rule
    matches a link too); forced in and pulled by bob, git swaps bob's cache folder for it, and
    every command of bob's refuses to run (exit 6, saying what to do) rather than write his
    indexes, which hold his records' text and contact rows, where his next `git add -A` takes them."""
    remote, (a, alice), (b, bob) = set_up_team(tmp_path)
    ok(b, bob, "memory", "save", "coffee", "--type", "user", "--description", "bob-secret-record")
    ok(b, bob, "table", "create", "contacts", "-c", "name:str", "-c", "bio:str")
    ok(b, bob, "table", "add", "contacts", "--row", json.dumps({"name": "Carol", "bio": "bob-secret-bio"}))
    ok(b, bob, "memory", "recall", "coffee")
    assert (b / ".aibuddy" / "index" / "memory-bob.sqlite").is_file()

    (a / "docs").mkdir()
    (a / "docs" / "README.md").write_text("# Docs\n")
    shutil.rmtree(a / ".aibuddy")
    (a / ".aibuddy").symlink_to("docs")
    git(a, "add", "-A", env=alice)
    assert git(a, "diff", "--cached", "--name-only", env=alice).stdout.split() == ["docs/README.md"]
    git(a, "add", "-f", ".aibuddy", env=alice)
    git(a, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "docs, and the cache linked there", env=alice)
    git(a, "push", "-q", env=alice)
    git(b, "pull", "-q", "--no-rebase", env=bob)
    assert (b / ".aibuddy").is_symlink()

    for command in (("memory", "list"), ("memory", "recall", "coffee"), ("table", "filter", "contacts")):
        code, document, said = aibuddy(b, bob, *command)
        assert code == 6, (command, document, said)
        assert f"{b / '.aibuddy'} is a symlink to docs, not a folder" in json.dumps(document) + said
    assert sorted(p.name for p in (b / "docs").iterdir()) == ["README.md"]
    git(b, "add", "-A", env=bob)
    assert git(b, "diff", "--cached", "--name-only", env=bob).stdout == ""


def test_a_cache_folder_that_is_a_file_or_holds_a_linked_index_folder_is_refused(tmp_path: Path) -> None:
    """The same refusal for a `.aibuddy` that is a file, and for its index/ linked elsewhere."""
    root = init_vault(tmp_path / "v", "demo").root
    env = child_env(root)
    shutil.rmtree(root / ".aibuddy", ignore_errors=True)
    (root / ".aibuddy").write_text("not a folder\n")
    code, document, said = aibuddy(root, env, "memory", "list")
    assert code == 6 and "/.aibuddy is a file, not a folder" in json.dumps(document) + said
    (root / ".aibuddy").unlink()
    (root / "docs").mkdir()
    (root / ".aibuddy").mkdir()
    (root / ".aibuddy" / "index").symlink_to("../docs")
    code, document, said = aibuddy(root, env, "memory", "list")
    assert code == 6 and "/.aibuddy/index is a symlink to ../docs" in json.dumps(document) + said
    assert list((root / "docs").iterdir()) == []


# --- 4. the pre-commit check and force-added files ------------------------------------------------


@pytest.mark.process
def test_the_pre_commit_check_refuses_a_force_added_personal_file_and_the_cache(tmp_path: Path) -> None:
    """In a team vault the .gitignore keeps personal folders out of `git add -A`; `git add -f` puts
    one in anyway, and the pre-commit check refuses it (and anything under .aibuddy), naming each;
    `git commit --no-verify` bypasses it as usual, and a commit that takes a personal file out of
    git (what `doctor --move` leaves to commit) passes. doctor fails when git tracks the cache."""
    remote, (a, alice), (b, bob) = set_up_team(tmp_path)
    ok(a, alice, "memory", "recall", "anything")  # builds alice's index under .aibuddy/
    (a / "memory" / "alice").mkdir(parents=True)
    (a / "memory" / "alice" / "x.md").write_text("---\nname: x\n---\nalice-secret-record\n")
    git(a, "add", "-A", env=alice)
    assert git(a, "diff", "--cached", "--name-only", env=alice).stdout == ""
    git(a, "add", "-f", "memory/alice/x.md", ".aibuddy/index/memory-alice.sqlite", env=alice)
    refused = git(a, "commit", "-qm", "mine", env=alice, check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    assert "memory/alice/x.md: never committed: a personal file" in said
    assert ".aibuddy/index/memory-alice.sqlite: never committed: aibuddy's derived cache" in said
    assert git(a, "log", "--format=%s", env=alice).stdout.split("\n")[0] == "a team vault"

    git(a, "reset", "-q", env=alice)
    ok(a, alice, "table", "create", "team/eng/vendors", "-c", "name:str")
    git(a, "add", "-A", env=alice)
    git(a, "commit", "-qm", "vendors", env=alice)  # through the check: nothing personal staged
    git(a, "push", "-q", env=alice)
    git(b, "pull", "-q", "--no-rebase", env=bob)
    assert (b / "tables" / "team" / "eng" / "vendors.csv").is_file() and not (b / "memory" / "alice").exists()
    assert personal_keys(remote_paths(tmp_path, remote, bob)) == []

    git(a, "add", "-f", "memory/alice/x.md", env=alice)
    git(a, "commit", "--no-verify", "-qm", "mine, knowingly", env=alice)  # the usual bypass
    git(a, "rm", "-q", "--cached", "memory/alice/x.md", env=alice)
    git(a, "commit", "-qm", "out of git again", env=alice)  # a deletion passes the check
    # An index forced past the check too: doctor says git tracks the cache, and how to stop it.
    assert next(c for c in aibuddy(a, alice, "doctor")[1]["checks"] if c["name"] == "derived cache")["ok"]
    git(a, "add", "-f", ".aibuddy/index/memory-alice.sqlite", env=alice)
    git(a, "commit", "--no-verify", "-qm", "an index, knowingly", env=alice)
    code, report, _ = aibuddy(a, alice, "doctor")
    cache = next(c for c in report["checks"] if c["name"] == "derived cache")
    assert code == 4 and not cache["ok"] and "git rm -r --cached .aibuddy" in cache["detail"], cache


# --- 3. Claude Code's project settings --------------------------------------------------------------


@pytest.mark.process
def test_hook_install_for_the_project_makes_git_ignore_the_settings_file(tmp_path: Path) -> None:
    """`hook install claude-code --project` in a clone writes .claude/settings.local.json with this
    machine's paths and alice's --user: git is made to ignore it first (a line in the clone's own
    .git/info/exclude, as Claude Code does for the file it makes), so `git add -A` leaves it out
    and bob never receives it. A settings file git already tracks is refused (exit 4), unwritten."""
    remote, (a, alice), (b, bob) = set_up_team(tmp_path)
    exclude = a / ".git" / "info" / "exclude"
    before = exclude.read_text() if exclude.exists() else None
    unasked = run_in_process("hook", "install", "claude-code", "--project", env=alice, cwd=a)
    assert unasked.returncode == 2 and b"without --yes" in unasked.stderr  # refused: nothing changed
    assert (exclude.read_text() if exclude.exists() else None) == before
    assert not (a / ".claude" / "settings.local.json").exists()
    install = ("hook", "install", "claude-code", "--project", "--yes")
    done = run_in_process(*install, "--json", env=alice, cwd=a)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    settings = a / ".claude" / "settings.local.json"
    assert answer["written"] and "--user alice" in settings.read_text()
    assert answer["git_ignored"] == {"repository": str(a), "added_to": str(a / ".git" / "info" / "exclude")}
    assert "**/.claude/settings.local.json" in (a / ".git" / "info" / "exclude").read_text().splitlines()
    git(a, "add", "-A", env=alice)
    assert git(a, "status", "--porcelain", env=alice).stdout == ""
    said = run_in_process(*install, env=alice, cwd=a).stdout.decode()
    assert "has aibuddy's hooks already; git ignores it already" in said

    (b / ".claude").mkdir()
    (b / ".claude" / "settings.local.json").write_text("{}\n")
    git(b, "add", "-f", ".claude/settings.local.json", env=bob)
    git(b, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "a project's local settings", env=bob)
    refused = run_in_process(*install, "--json", env=bob, cwd=b)
    assert refused.returncode == 4, refused.stdout
    assert b"git tracks" in refused.stdout and b"git rm --cached" in refused.stdout
    assert (b / ".claude" / "settings.local.json").read_text() == "{}\n"

    outside = tmp_path / "no-repository"
    outside.mkdir()
    done = run_in_process(*install, "--json", env=alice, cwd=outside)
    assert done.returncode == 0 and json.loads(done.stdout)["git_ignored"] is None
    assert personal_keys(remote_paths(tmp_path, remote, bob)) == []


# --- 6. git setup in a fresh clone ------------------------------------------------------------------


@pytest.mark.process
def test_git_setup_in_a_fresh_clone_does_not_tell_to_run_itself(tmp_path: Path) -> None:
    """bob clones a vault alice set up and pushed: his `git setup` registers the driver and says
    nothing about running `git setup`; the next command does not either, nor doctor."""
    remote, (a, alice), _ = set_up_team(tmp_path)
    b, bob, _ = clone_for(tmp_path, remote, "carol")
    _, said = ok(b, bob, "git", "setup")
    assert "git setup" not in said, said
    _, said = ok(b, bob, "memory", "list")
    assert said == ""
    assert "git setup" not in aibuddy(b, bob, "doctor")[2]


def test_a_cache_folder_swapped_for_a_symlink_under_a_running_session_is_refused(tmp_path: Path) -> None:
    """A long-running process (the MCP server, kb watch) opened the vault before a pull swapped its
    .aibuddy for a link: the next index it opens is refused too, nothing lands where the link leads."""
    root = init_vault(tmp_path / "v", "demo").root
    (root / "docs").mkdir()
    with Session(Vault.open(root), "demo", environ={}) as session:
        shutil.rmtree(root / ".aibuddy", ignore_errors=True)
        (root / ".aibuddy").symlink_to("docs")
        try:
            session.memory.list_records()
        except InvalidInput as refused:
            assert "is a symlink to docs, not a folder" in refused.message
        else:
            raise AssertionError("the index was opened through the link")
    assert list((root / "docs").iterdir()) == []
