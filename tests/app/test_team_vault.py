"""A team vault (`[teams.*]` in aibuddy.toml) keeps what is personal out of the shared folder:
each user's memory, tasks, personal documents and tables live in their personal vault, composed
with the shared vault at run time, so the team's git remote never receives them. Tested with
real git: a bare remote, two users on two "machines" (HOME, XDG_DATA_HOME), and a fresh clone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import child_env, ok, run_in_process
from memory_store import MemoryStore
from team_support import TEAM, commit_all, git, personal_keys

from aibuddy_cli import background
from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Busy, Conflict
from aibuddy_cli.knowledge.watch import watched_folders
from aibuddy_cli.store.composed import RoutedStore
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.vault import Vault, init_vault


def run(exe: list[str], clone: Path, env: dict[str, str], *args: str) -> dict:
    """A command in clone, in this process (the entry point a child runs; a child each cost this
    file half a minute): git and what git starts stay real processes. `doctor`'s checks may find
    only that the clone's git lacks the merge driver (these clones skip `git setup`) and that a
    record written by hand here is not a whole one."""
    result = run_in_process("--vault", str(clone), *args, "--json", env=env)
    document = json.loads(result.stdout) if result.stdout else {}
    failed = [check["name"] for check in document.get("checks", []) if not check["ok"]]
    assert result.returncode == (4 if failed else 0), result.stderr
    assert set(failed) <= {"merge driver", "memory records"}, failed
    return document


def team_remote(tmp_path: Path, exe: list[str]) -> tuple[Path, str]:
    """A team vault made by alice, set up and pushed to a bare remote; the remote and vault_id."""
    origin = tmp_path / "origin"
    init_vault(origin, "alice")
    (origin / "aibuddy.toml").write_text((origin / "aibuddy.toml").read_text() + TEAM)
    env = child_env(origin, "alice", HOME=str(tmp_path / "admin"))
    git(origin, "init", "-q", "-b", "main", env=env)
    commit_all(origin, "vault", env)
    setup = run(exe, origin, env, "git", "setup")
    assert setup["team"]["vault_id_added"] and setup["team"]["gitignore_added"]
    commit_all(origin, "a team vault", env)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(remote)], check=True, env=env)
    return remote, setup["team"]["vault_id"]


def machine(tmp_path: Path, exe: list[str], remote: Path, user: str, *, xdg: bool) -> tuple[Path, dict, Path]:
    """user's clone on their own machine: the clone, its environment, where personal vaults go."""
    home = tmp_path / f"home-{user}"
    home.mkdir()
    extra = {"HOME": str(home)}
    data = home / ".local" / "share"
    if xdg:
        data = home / "data"
        extra["XDG_DATA_HOME"] = str(data)
    clone = tmp_path / f"clone-{user}"
    env = child_env(clone, user, **extra)
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=env)
    run(exe, clone, env, "git", "setup")
    return clone, env, data / "aibuddy" / "vaults"


SECRETS = {
    "alice": ("Alice drinks green tea", "alice-secret-message", "alice-secret-bio", "alice-doc"),
    "bob": ("Bob takes no coffee", "bob-secret-message", "bob-secret-bio", "bob-doc"),
}


def personal_work(exe: list[str], clone: Path, env: dict, user: str, record: str, notes: Path) -> None:
    """A memory record, a published personal document attached to a task, a message, a contact."""
    description, message, bio, doc_word = SECRETS[user]
    run(exe, clone, env, "memory", "save", record, "--type", "user", "--description", description)
    note = notes / f"{user}-note.md"
    note.write_text(f"# {user} notes\n\n## Travel\n\nThe {doc_word} says: window seat.\n")
    run(exe, clone, env, "kb", "import", str(note), "--scope", "personal")
    run(exe, clone, env, "kb", "publish", f"personal/{user}-note")
    assert run(exe, clone, env, "task", "new", f"{user}'s plan")["id"] == "t1"
    run(exe, clone, env, "task", "attach", "t1", f"personal/{user}-note")
    run(exe, clone, env, "task", "add-message", "t1", message, "--role", "user")
    run(exe, clone, env, "table", "create", "contacts", "-c", "name:str", "-c", "bio:str")
    run(exe, clone, env, "table", "add", "contacts", "--row", json.dumps({"name": "Carol", "bio": bio}))


@pytest.mark.process
def test_two_users_push_nothing_personal_and_each_recalls_their_own(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    exe = aibuddy_exe
    remote, vault_id = team_remote(tmp_path, exe)
    a, alice, alice_vaults = machine(tmp_path, exe, remote, "alice", xdg=True)
    b, bob, bob_vaults = machine(tmp_path, exe, remote, "bob", xdg=False)

    personal_work(exe, a, alice, "alice", "tea", tmp_path)
    run(exe, a, alice, "table", "create", "team/eng/vendors", "-c", "name:str")
    run(exe, a, alice, "table", "add", "team/eng/vendors", "--row", '{"name": "Acme"}')
    commit_all(a, "alice's work", alice)
    git(a, "push", "-q", env=alice)
    git(b, "pull", "-q", "--no-rebase", env=bob)
    personal_work(exe, b, bob, "bob", "coffee", tmp_path)
    run(exe, b, bob, "table", "add", "team/eng/vendors", "--row", '{"name": "Globex"}')
    run(exe, b, bob, "memory", "recall", "coffee")  # its telemetry goes to the personal vault too
    commit_all(b, "bob's work", bob)
    git(b, "push", "-q", env=bob)
    git(a, "pull", "-q", "--no-rebase", env=alice)

    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(remote), str(fresh)], check=True, env=alice)
    tree = [p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()]
    tree = [path for path in tree if not path.startswith(".git/")]
    assert "tables/team/eng/vendors.csv" in tree and "aibuddy.toml" in tree
    assert personal_keys(tree) == []
    every_path = git(fresh, "log", "--all", "--name-only", "--format=", env=alice).stdout.split()
    assert "tables/team/eng/vendors.csv" in every_path and personal_keys(every_path) == []
    history = git(fresh, "log", "--all", "-p", env=alice).stdout
    assert "Acme" in history and "Globex" in history  # team tables are shared through the remote
    assert [word for words in SECRETS.values() for word in words if word in history] == []

    for clone, env, user, mine, theirs in ((a, alice, "alice", "tea", "coffee"), (b, bob, "bob", "coffee", "tea")):  # noqa: E501
        other_user = "bob" if user == "alice" else "alice"
        recalled = run(exe, clone, env, "memory", "recall", SECRETS[user][0])  # the fast path
        assert [r["name"] for r in recalled["records"]] == [mine]
        assert [r["name"] for r in run(exe, clone, env, "memory", "list")["records"]] == [mine]
        other = run_in_process("--vault", str(clone), "memory", "show", theirs, "--json", env=env)
        assert other.returncode == 3
        context = json.dumps(run(exe, clone, env, "task", "context", "t1"), ensure_ascii=False)
        assert SECRETS[user][1] in context and SECRETS[other_user][1] not in context
        rows = run(exe, clone, env, "table", "filter", "contacts")["tables"][0]["rows"]
        assert [r["bio"] for r in rows] == [SECRETS[user][2]]
        hits = run(exe, clone, env, "kb", "search", "window seat", "--task", "t1")["hits"]
        assert [h["doc"] for h in hits] == [f"personal/{user}/{user}-note"]
        vendors = run(exe, clone, env, "table", "filter", "team/eng/vendors")["tables"][0]["rows"]
        assert [r["name"] for r in vendors] == ["Acme", "Globex"]
        assert git(clone, "status", "--porcelain", env=env).stdout == ""
    assert (alice_vaults / vault_id / "memory" / "alice" / "tea.md").is_file()
    assert (bob_vaults / vault_id / "memory" / "bob" / "coffee.md").is_file()
    assert (bob_vaults / vault_id / "tasks" / "bob" / "t1" / "messages.jsonl").is_file()
    assert (bob_vaults / vault_id / "tables" / "personal" / "bob" / "contacts.csv").is_file()
    assert not (alice_vaults / vault_id / "memory" / "bob").exists()
    assert alice_vaults.stat().st_mode & 0o077 == 0  # the personal vaults are private


@pytest.mark.process
def test_a_shared_vault_with_personal_files_reports_them_and_moves_them_on_request(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    """A vault that was shared before it became a team vault: alice's and bob's files are in its
    tree and history. doctor lists them; --move moves alice's, checked, out of the work tree and
    git's index, never out of history; bob's stay for bob to move."""
    exe = aibuddy_exe
    shared = tmp_path / "shared"
    init_vault(shared, "alice")
    for user, record in (("alice", "tea"), ("bob", "coffee")):
        with Session(Vault.open(shared), user, environ={}) as session:  # one folder: no team yet
            session.memory.save(record, type="user", description=SECRETS[user][0], body="")
    with Session(Vault.open(shared), "alice", environ={}) as session:
        task = session.tasks.new("plan")
        session.tasks.add_message(task.id, "user", SECRETS["alice"][1])
    home = tmp_path / "home-alice"
    env = child_env(shared, "alice", HOME=str(home))
    git(shared, "init", "-q", "-b", "main", env=env)
    commit_all(shared, "a vault shared before teams", env)
    (shared / "aibuddy.toml").write_text((shared / "aibuddy.toml").read_text() + TEAM)
    commit_all(shared, "now a team vault", env)
    mine = ["memory/alice/tea.md", "tasks/alice/t1/messages.jsonl", "tasks/alice/t1/task.json"]
    original = {key: (shared / key).read_bytes() for key in mine}

    listed = run_in_process("memory", "list", "--json", env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout)["records"] == []
    assert b"3 personal file(s) of alice" in listed.stderr and b"aibuddy doctor --move" in listed.stderr
    report = run(exe, shared, env, "doctor")
    assert report["team_vault"]
    assert report["personal_files"] == {"alice": mine, "bob": ["memory/bob/coffee.md"]}
    assert report["tracked"] == sorted([*mine, "memory/bob/coffee.md"])
    assert report["gitignore_missing"] == ["/memory/", "/tasks/", "/knowledge/personal/", "/tables/personal/"]
    dry = run(exe, shared, env, "doctor", "--move", "--dry-run")
    assert dry["moved"] == mine and dry["dry_run"] and all((shared / key).exists() for key in mine)
    refused = run_in_process("doctor", "--move", "--json", env=env)  # no terminal, no --yes
    assert refused.returncode == 2 and all((shared / key).exists() for key in mine)

    moved = run(exe, shared, env, "doctor", "--move", "--yes")
    vault_id = Vault.open(shared).config.vault_id
    personal = home / ".local" / "share" / "aibuddy" / "vaults" / vault_id
    assert moved["moved"] == mine and moved["skipped"] == []
    assert moved["personal_vault"]["path"] == str(personal)
    assert {key: (personal / key).read_bytes() for key in mine} == original
    assert not any((shared / key).exists() for key in mine) and not (shared / "memory" / "alice").exists()
    assert moved["personal_files"] == {"bob": ["memory/bob/coffee.md"]} and moved["gitignore_missing"] == []
    assert git(shared, "ls-files", "memory", "tasks", env=env).stdout.split() == ["memory/bob/coffee.md"]
    commit_all(shared, "alice's files leave the shared folder", env)
    history = git(shared, "log", "--format=%h", "--", "memory/alice/tea.md", env=env).stdout.split()
    assert len(history) == 2  # added, then removed: nothing left the history
    recalled = run(exe, shared, env, "memory", "recall", "green tea")
    assert [r["name"] for r in recalled["records"]] == ["tea"]
    assert SECRETS["alice"][1] in json.dumps(run(exe, shared, env, "task", "context", "t1"))

    # Defence in depth: a personal file put in the shared folder by hand is not committed either.
    (shared / "memory" / "alice").mkdir()
    (shared / "memory" / "alice" / "by-hand.md").write_text("---\nname: by-hand\n---\n")
    git(shared, "add", "-A", env=env)
    assert git(shared, "status", "--porcelain", env=env).stdout == ""


@pytest.mark.process
def test_a_move_never_overwrites_a_different_file_in_the_personal_vault(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    shared = tmp_path / "shared"
    init_vault(shared, "alice")
    (shared / "aibuddy.toml").write_text((shared / "aibuddy.toml").read_text() + TEAM)
    personal = tmp_path / "mine"
    env = child_env(shared, "alice", AIBUDDY_PERSONAL_VAULT=str(personal))
    for folder, text in ((shared, "in the shared folder"), (personal, "in the personal vault")):
        (folder / "memory" / "alice").mkdir(parents=True)
        (folder / "memory" / "alice" / "tea.md").write_text(f"---\nname: tea\n---\n{text}\n")
    (shared / "memory" / "alice" / "same.md").write_text("same\n")
    (personal / "memory" / "alice" / "same.md").write_text("same\n")
    # An old t1 in the shared folder, and the new t1 the personal vault numbered from 1 again:
    # none of the old one's files (its messages) may join the new one.
    for folder, goal in ((shared, "old task"), (personal, "new task")):
        (folder / "tasks" / "alice" / "t1").mkdir(parents=True)
        (folder / "tasks" / "alice" / "t1" / "task.json").write_text(json.dumps({"goal": goal}))
    (shared / "tasks" / "alice" / "t1" / "messages.jsonl").write_text('{"n": 1, "content": "old"}\n')
    moved = run(aibuddy_exe, shared, env, "doctor", "--move", "--yes")  # not a git repository: no index
    assert moved["moved"] == ["memory/alice/same.md"]
    assert moved["skipped"] == [
        {"key": key, "reason": f"the personal vault holds a different {unit}"}
        for key, unit in (
            ("memory/alice/tea.md", "memory/alice/tea"),
            ("tasks/alice/t1/messages.jsonl", "tasks/alice/t1"),
            ("tasks/alice/t1/task.json", "tasks/alice/t1"),
        )
    ]
    assert not (personal / "tasks" / "alice" / "t1" / "messages.jsonl").exists()
    assert "in the shared folder" in (shared / "memory" / "alice" / "tea.md").read_text()
    assert "in the personal vault" in (personal / "memory" / "alice" / "tea.md").read_text()
    assert not (shared / "memory" / "alice" / "same.md").exists()


# --- where the personal vault is ---------------------------------------------------------------------


@pytest.fixture
def team_vault(vault: Vault) -> Vault:
    config = vault.root / "aibuddy.toml"
    config.write_text('vault_id = "team-1"\n' + config.read_text() + TEAM)
    return Vault.open(vault.root)


def test_the_personal_vault_is_under_xdg_data_home_or_where_the_environment_says(
    team_vault: Vault, tmp_path: Path
) -> None:
    with Session(team_vault, "eve", environ={"HOME": str(tmp_path / "h")}) as session:  # in no team
        session.memory.save("tea", type="user", description="Drinks tea", body="")
    assert (tmp_path / "h" / ".local/share/aibuddy/vaults/team-1/memory/eve/tea.md").is_file()
    with Session(team_vault, "eve", environ={"XDG_DATA_HOME": str(tmp_path / "x")}) as session:
        session.memory.save("tea", type="user", description="Drinks tea", body="")
    assert (tmp_path / "x" / "aibuddy/vaults/team-1/memory/eve/tea.md").is_file()
    with Session(team_vault, "eve", environ={"AIBUDDY_PERSONAL_VAULT": str(tmp_path / "p")}) as session:
        assert session.memory.count() == 0
        session.tasks.new("mine")
    assert (tmp_path / "p" / "tasks" / "eve" / "t1" / "task.json").is_file()
    assert not any((team_vault.root / folder / "eve").exists() for folder in ("memory", "tasks"))
    assert (tmp_path / "p" / ".gitignore").read_text().splitlines()[0] == ".aibuddy"


def test_a_team_table_with_a_mistake_still_keeps_personal_files_out_of_the_shared_folder(
    vault: Vault, tmp_path: Path
) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[teams.eng]\nmembers = "alice, bob"\n')  # not a list
    broken = Vault.open(vault.root)
    assert dict(broken.config.teams) == {} and any("[teams.eng]" in w for w in broken.config.warnings)
    with Session(broken, "alice", environ={"AIBUDDY_PERSONAL_VAULT": str(tmp_path / "p")}) as session:
        session.memory.save("tea", type="user", description="Drinks tea", body="")
    assert (tmp_path / "p" / "memory" / "alice" / "tea.md").is_file()
    assert not (vault.root / "memory" / "alice").exists()


def test_a_personal_vault_inside_the_shared_folder_is_refused(cli, team_vault: Vault, monkeypatch) -> None:
    monkeypatch.setenv("AIBUDDY_PERSONAL_VAULT", str(team_vault.root / "memory" / "mine"))
    result = cli("memory", "list", "--json")
    assert result.exit_code == 6 and "must be outside the shared vault" in result.stdout


@pytest.mark.process
def test_a_team_vault_without_vault_id_gets_one_from_git_setup_and_keeps_its_files(
    vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    (vault.root / "aibuddy.toml").write_text((vault.root / "aibuddy.toml").read_text() + TEAM)
    env = child_env(vault.root, "alice")
    git(vault.root, "init", "-q", "-b", "main", env=env)
    commit_all(vault.root, "vault", env)
    saved = run_in_process("memory", "save", "tea", "--type", "user", "--description", "T", env=env)
    assert saved.returncode == 0 and b"has no vault_id: run `aibuddy git setup`" in saved.stderr
    again = run_in_process("memory", "list", "--json", env=env)
    assert b"vault_id" not in again.stderr  # said once per clone
    setup = run(aibuddy_exe, vault.root, env, "git", "setup")["team"]
    first_commit = git(vault.root, "rev-list", "--max-parents=0", "HEAD", env=env).stdout.strip()
    assert setup["vault_id"] == first_commit[:16] and setup["vault_id_added"]
    assert setup["moved_folder"] is not None and setup["personal_vault"].endswith(setup["vault_id"])
    assert f'vault_id = "{setup["vault_id"]}"' in (vault.root / "aibuddy.toml").read_text()
    assert [r["name"] for r in run(aibuddy_exe, vault.root, env, "memory", "list")["records"]] == ["tea"]
    assert run(aibuddy_exe, vault.root, env, "git", "setup")["team"]["vault_id_added"] is False


@pytest.mark.process
def test_a_single_person_vault_keeps_everything_in_its_folder(vault: Vault, tmp_path: Path, cli) -> None:
    with Session(vault, "demo", environ={"HOME": str(tmp_path / "home")}) as session:
        assert isinstance(session.store, FileStore)
        session.memory.save("tea", type="user", description="Drinks tea", body="")
    assert (vault.root / "memory" / "demo" / "tea.md").is_file()
    assert not (tmp_path / "home" / ".local" / "share" / "aibuddy").exists()
    report = ok(cli("doctor", "--json"))
    assert report["team_vault"] is False and report["personal_vault"] is None
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    assert sorted(ok(cli("git", "setup", "--json"))) == ["attributes", "driver", "pre_commit", "repository"]


def test_the_knowledge_watcher_watches_the_personal_documents_too(team_vault: Vault, tmp_path: Path) -> None:
    with Session(team_vault, "demo", environ={"AIBUDDY_PERSONAL_VAULT": str(tmp_path / "p")}) as session:
        assert watched_folders(session.knowledge) == [
            team_vault.root / "knowledge",
            (tmp_path / "p").resolve() / "knowledge" / "personal" / "demo",
        ]


# --- the routing store, over two in-memory stores ---------------------------------------------------


def test_the_routed_store_sends_only_the_users_personal_keys_to_the_personal_side() -> None:
    shared, personal = MemoryStore(), MemoryStore()
    store = RoutedStore(shared, personal, "alice")
    for key in ("memory/alice/tea.md", "tasks/alice/t1/task.json", "knowledge/personal/alice/ready/a.md",
                "tables/personal/alice/contacts.csv"):
        store.write(key, b"mine")
        assert personal.exists(key) and not shared.exists(key)
    for key in ("memory/bob/x.md", "memory/alice-2/x.md", "knowledge/system/ready/s.md",
                "tables/team/eng/vendors.csv", ".aibuddy/logs/tables.jsonl"):
        store.write(key, b"shared")
        assert shared.exists(key) and not personal.exists(key)
    shared.write("memory/alice/left-over.md", b"old")  # in the shared tree from before: not read
    assert [e.key for e in store.scan("memory/alice", ".md")] == ["memory/alice/tea.md"]
    assert store.folders("memory") == ["alice", "alice-2", "bob"]
    assert store.folders("knowledge") == ["personal", "system"]
    assert store.folders("knowledge/personal") == ["alice"]
    assert store.folders("tables") == ["personal", "team"]
    store.move("tables/personal/alice/contacts.csv", "tables/team/eng/contacts.csv")  # across roots
    assert shared.read("tables/team/eng/contacts.csv")[0] == b"mine"
    assert not personal.exists("tables/personal/alice/contacts.csv")
    with pytest.raises(Conflict):
        store.move("memory/alice/tea.md", "tables/team/eng/vendors.csv")
    assert personal.exists("memory/alice/tea.md")  # a refused move leaves its source
    store.replace("memory/alice/tea.md", "memory/bob/x.md")
    assert shared.read("memory/bob/x.md")[0] == b"mine" and not personal.exists("memory/alice/tea.md")


def test_the_routed_store_lock_holds_both_sides(tmp_path: Path) -> None:
    shared = FileStore(tmp_path / "s", tmp_path / "s-locks")
    personal = FileStore(tmp_path / "p", tmp_path / "p-locks")
    store = RoutedStore(shared, personal, "alice")
    for side in (shared, personal):
        with store.lock("tables"), pytest.raises(Busy):
            with side.lock("tables", timeout=0):
                pass
    with store.lock("tables"):
        pass  # released again
    assert os.path.exists(tmp_path / "p-locks" / "tables.lock")
    # Who holds a lock is asked of the side taken first (consolidation's cancel proves its pass so).
    assert store.locks_dir == tmp_path / "s-locks"
    assert background.flock_holders(tmp_path / "s-locks" / "tables.lock") in (None, set())
    with store.lock("tables"):
        assert background.flock_holders(tmp_path / "s-locks" / "tables.lock") in (None, {os.getpid()})
        assert not background._lock_is_free(tmp_path / "s-locks" / "tables.lock")
    assert background._lock_is_free(tmp_path / "s-locks" / "tables.lock")


@pytest.mark.process
def test_git_setup_personal_makes_the_personal_vault_a_repository_of_its_own(
    team_vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    personal = tmp_path / "mine"
    env = child_env(team_vault.root, "alice", AIBUDDY_PERSONAL_VAULT=str(personal))
    run(aibuddy_exe, team_vault.root, env, "memory", "save", "tea", "--type", "user", "--description", "Tea")
    done = run(aibuddy_exe, team_vault.root, env, "git", "setup", "--personal")
    assert done["repository"] == str(personal) and done["personal"] is True
    assert '[merge "aibuddy"]' in (personal / ".git" / "config").read_text()
    commit_all(personal, "my memory", env, hooks=True)  # through the check git setup installed there
    tracked = git(personal, "ls-files", env=env).stdout.split()
    assert tracked == [".gitattributes", ".gitignore", "memory/alice/tea.md"]
    key = "sk-proj-" + "A1b2C3d4" * 5
    save = ("memory", "save", "k", "--type", "user", "--description", "K", "--body", key)
    run(aibuddy_exe, team_vault.root, env, *save)
    git(personal, "add", "-A", env=env)
    refused_commit = git(personal, "commit", "-qm", "a key", env=env, check=False)
    said = refused_commit.stdout + refused_commit.stderr
    assert refused_commit.returncode != 0 and "memory/alice/k.md" in said
    # A scan of the team vault reads the personal vault too: that is where the record is.
    scanned = run_in_process("--vault", str(team_vault.root), "scan", "--json", env=env)
    assert scanned.returncode == 4
    assert [f["path"] for f in json.loads(scanned.stdout)["findings"]] == [f"{personal}/memory/alice/k.md"]
    (team_vault.root / "aibuddy.toml").write_text('default_user = "demo"\n')  # no team any more
    refused = run_in_process("git", "setup", "--personal", "--json", env=env)
    assert refused.returncode == 2 and b"for a team vault" in refused.stdout


@pytest.mark.process
def test_kb_watch_follows_the_personal_documents_of_a_team_vault(
    team_vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    from helpers import BODY

    personal = (tmp_path / "p").resolve()
    pending = personal / "knowledge" / "personal" / "demo" / "pending"
    pending.mkdir(parents=True)
    shutil.copy(BODY, pending / "first.md")  # found by the first refresh, which then says so
    env = child_env(team_vault.root, "demo", AIBUDDY_PERSONAL_VAULT=str(personal))
    watcher = subprocess.Popen(
        [*aibuddy_exe, "kb", "watch", "--debounce", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = watcher.stderr.readline()
        while line and not line.startswith("watching"):  # the team vault's set-up hint comes first
            line = watcher.stderr.readline()
        assert f"{team_vault.root / 'knowledge'} and {personal / 'knowledge/personal/demo'}" in line
        while line and "personal/demo/first" not in line:  # the first refresh is over
            line = watcher.stderr.readline()
        shutil.copy(BODY, pending / "guide.md")  # seen only by watching the personal vault
        deadline = time.monotonic() + 120  # generous: an event, not a timing
        while time.monotonic() < deadline and not (pending / "guide.meta.json").exists():
            time.sleep(0.1)
        assert json.loads((pending / "guide.meta.json").read_text())["owner"] == "demo"
        assert not (team_vault.root / "knowledge" / "personal" / "demo").exists()
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.communicate(timeout=120)
