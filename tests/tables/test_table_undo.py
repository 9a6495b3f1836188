"""`table undo` after any ending of a run: a `table update` killed by SIGTERM, SIGHUP or SIGKILL
after it applied a change is undone like one that exited cleanly, and does not block the undo of
an earlier run; and an undo into a team's tables checks membership now, as every other path does."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import child_env, in_vault, ok, run_in_process, wait_for
from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.models import worker
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.tables.state import TablesState
from aibuddy_cli.tables.undo import SnapshotStore, undo_last
from aibuddy_cli.vault import Vault

ENV = {"AIBUDDY_MODEL_TABLES": "openai/tables-test", "AIBUDDY_TIMEOUT": "30"}
VENDORS = "tables/personal/demo/vendors.csv"


@pytest.fixture
def stocked(cli, vault: Vault) -> Vault:
    ok(cli("table", "create", "vendors", "-c", "name:str", "-c", "rating:int", "--json"))
    rows = [{"name": "Acme", "rating": 4}, {"name": "Globex", "rating": 2}]
    ok(cli("table", "add", "vendors", *[a for r in rows for a in ("--row", json.dumps(r))], "--json"))
    return vault


def agent(vault: Vault, model: ScriptedModel, user: str = "demo") -> TableAgent:
    session = Session(Vault.open(vault.root), user, environ=ENV)
    return TableAgent(session.tables, session.settings, connect=lambda settings: model)


def rate_acme(vault: Vault, rating: int, table: str = "vendors", user: str = "demo") -> None:
    """A finished update run (in-process, scripted) that sets Acme's rating."""
    model = ScriptedModel()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme and Globex")
    model.call(("update_rows", {"table": table, "filter": 'name == "Acme"', "values": {"rating": rating}}))
    model.answer("done")
    agent(vault, model, user).change("update", f"Acme is rated {rating}")


@pytest.mark.process
@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_an_update_ended_by_a_signal_after_a_change_can_be_undone_and_does_not_block_earlier_runs(
    aibuddy_exe: list[str],
    stocked: Vault,
    warm_worker: tuple[FakeOpenAI, dict[str, str]],
    ending: signal.Signals,
) -> None:
    """The run is a real `table update` process, ended by a real signal; its model calls go to the
    pytest process.s warm worker (the same answers; a litellm import in each child would cost seconds)."""
    fake_openai, worker_env = warm_worker
    fake_openai.reset()
    calls_before = worker.status(worker_env).calls
    path = stocked.root / VENDORS
    original = path.read_bytes()
    rate_acme(stocked, 1)  # an earlier run, finished
    after_first = path.read_bytes()
    assert after_first != original
    fake_openai.call_tools(("ask", {"question": "vendors?"}))
    fake_openai.enqueue(content="Acme and Globex")
    fake_openai.call_tools(("delete_rows", {"table": "vendors", "filter": 'name == "Globex"'}))
    release = threading.Event()
    fake_openai.enqueue(content="Dropped Globex.", hold=release)  # the turn after the change waits
    slow = {**ENV, "AIBUDDY_TIMEOUT": "300"}  # a loaded machine's first call is no failure
    env = in_vault(worker_env, stocked.root, **slow)
    command = [*aibuddy_exe, "table", "update", "Globex is no longer a vendor", "--json"]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the fourth model request comes only after delete_rows was applied and its result sent
        changed = wait_for(lambda: len(fake_openai.requests) >= 4 or child.poll() is not None, 300)
        assert changed, "timed out waiting for the change"
        assert child.poll() is None, child.communicate()
        assert b"Globex" not in path.read_bytes()
        assert worker.status(worker_env).calls - calls_before >= 3  # through the worker
        child.send_signal(ending)
        child.communicate(timeout=60)
        assert child.returncode == -ending
    finally:
        release.set()
        if child.poll() is None:
            child.kill()
            child.communicate()
    undone = run_in_process("table", "undo", "--yes", "--json", env=env)
    assert undone.returncode == 0, undone.stderr
    assert path.read_bytes() == after_first
    earlier = run_in_process("table", "undo", "--yes", "--json", env=env)
    assert earlier.returncode == 0, earlier.stderr
    assert path.read_bytes() == original
    found = run_in_process("table", "filter", "vendors", "--json", env=env)
    assert [r["name"] for r in json.loads(found.stdout)["tables"][0]["rows"]] == ["Acme", "Globex"]


class DyingStore(FileStore):
    """A store whose process "dies" (an exception no one catches) just before it writes `key`."""

    def __init__(self, root: Path, locks: Path, key: str) -> None:
        super().__init__(root, locks)
        self.dying = key

    def write(self, key: str, data: bytes, *, create: bool = False):  # type: ignore[no-untyped-def]
        if key == self.dying:
            raise SystemExit("killed")
        return super().write(key, data, create=create)


def test_a_run_killed_between_noting_a_change_and_making_it_is_undone(stocked: Vault) -> None:
    """The snapshot notes a change before it is made: a run that dies in between (the file still
    as it was) is undone all the same, and nothing needs the run's clean end."""
    rate_acme(stocked, 1)
    after_first = (stocked.root / VENDORS).read_bytes()
    vault = Vault.open(stocked.root)
    session = Session(vault, "demo", environ={})
    state: TablesState = session.tables.state
    dying = DyingStore(vault.root, vault.locks_dir(), VENDORS)
    snapshots = SnapshotStore(dying, "2099-01-01T00:00:00Z-dead00", lambda: None)
    state.run, state.source, state.store = snapshots.run, "update", snapshots
    state.journal("start_run", "", {}, {"undo": snapshots.key})
    with pytest.raises(SystemExit):
        session.tables.changes.update_rows("vendors", "True", {"rating": 3})
    assert (stocked.root / VENDORS).read_bytes() == after_first  # no finish(): the process is gone
    fresh = Session(Vault.open(stocked.root), "demo", environ={}).tables.state
    assert undo_last(fresh).run == snapshots.run
    assert (stocked.root / VENDORS).read_bytes() == after_first
    assert undo_last(fresh).run != snapshots.run  # the earlier run is next, not blocked
    assert b"Acme,4" in (stocked.root / VENDORS).read_bytes()


def test_ctrl_c_during_a_run_leaves_it_undoable(stocked: Vault) -> None:
    original = (stocked.root / VENDORS).read_bytes()

    class Interrupting(ScriptedModel):
        def __call__(self, messages, tools):  # type: ignore[no-untyped-def]
            if len(self.seen) == 3:
                raise KeyboardInterrupt
            return super().__call__(messages, tools)

    model = Interrupting()
    model.call(("ask", {"question": "vendors?"}))
    model.answer("Acme and Globex")
    model.call(("delete_rows", {"table": "vendors", "filter": "True"}))
    run = agent(stocked, model).change("update", "No vendors")  # stopped, not crashed
    assert run.interrupted and run.applied == 1
    assert b"Acme" not in (stocked.root / VENDORS).read_bytes()
    undo_last(Session(Vault.open(stocked.root), "demo", environ={}).tables.state)
    assert (stocked.root / VENDORS).read_bytes() == original


def test_a_user_removed_from_a_team_cannot_undo_into_its_tables(
    aibuddy_exe: list[str], cli, vault: Vault
) -> None:
    config = vault.root / "aibuddy.toml"
    with_team = config.read_text() + '\n[teams.eng]\nmembers = ["demo", "bob"]\n'
    config.write_text(with_team)
    ok(cli("table", "create", "team/eng/vendors", "-c", "name:str", "-c", "rating:int", "--json"))
    ok(cli("table", "add", "team/eng/vendors", "--row", '{"name": "Acme", "rating": 4}', "--json"))
    rate_acme(vault, 1, table="team/eng/vendors")
    path = vault.root / "tables/team/eng/vendors.csv"
    after_run = path.read_bytes()
    config.write_text(with_team.replace('["demo", "bob"]', '["bob"]'))
    env = child_env(vault.root)
    refused = run_in_process("table", "undo", "--yes", "--json", env=env)
    assert refused.returncode == 5, refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "not_allowed"
    assert path.read_bytes() == after_run
    assert run_in_process("table", "filter", "team/eng/vendors", env=env).returncode == 5
    config.write_text(with_team)  # a member again: the undo goes through
    assert run_in_process("table", "undo", "--yes", env=env).returncode == 0
    assert b"Acme,4" in path.read_bytes()


def test_a_snapshot_written_by_an_earlier_version_is_undone_and_one_naming_other_files_refused(
    cli, stocked: Vault
) -> None:
    """Snapshots of runs made before this version hold the files' text inline."""
    import hashlib

    path = stocked.root / VENDORS
    original = path.read_text()
    changed = original.replace("Acme,4", "Acme,1")
    path.write_text(changed)
    run = "2020-01-01T00:00:00Z-0dd000"
    line = {"at": "2020-01-01T00:00:00Z", "user": "demo", "source": "update", "run": run, "op": "update_rows",
            "table": "vendors", "args": {}, "changed": {}}  # fmt: skip
    with (stocked.root / ".aibuddy/logs/tables.jsonl").open("a") as journal:
        journal.write(json.dumps(line) + "\n")
    snapshot = stocked.root / f".aibuddy/undo/{run}.json"
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(changed.encode()).hexdigest()
    snapshot.write_text(json.dumps({"run": run, "before": {VENDORS: original}, "after": {VENDORS: digest}}))
    assert ok(cli("table", "undo", "--yes", "--json"))["run"] == run
    assert path.read_text() == original
    secret = stocked.root / "memory/demo/x.md"
    line["run"] = run = "2020-01-02T00:00:00Z-0dd001"
    with (stocked.root / ".aibuddy/logs/tables.jsonl").open("a") as journal:
        journal.write(json.dumps(line) + "\n")
    (stocked.root / f".aibuddy/undo/{run}.json").write_text(
        json.dumps(
            {"run": run, "before": {"memory/demo/x.md": "planted"}, "after": {"memory/demo/x.md": None}}
        )
    )
    refused = cli("table", "undo", "--yes")
    assert refused.exit_code == 6 and "not one of your tables" in refused.stderr
    assert not secret.exists()


def test_an_undo_that_cannot_be_journaled_puts_nothing_back(
    stocked: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`table undo` journals first too: when the journal cannot take its line (a full disk), it
    fails saying nothing changed and the files stay as the run left them; then it works."""
    import errno

    from aibuddy_cli.errors import DiskFull

    rate_acme(stocked, 1)
    after_run = (stocked.root / VENDORS).read_bytes()
    state = Session(Vault.open(stocked.root), "demo", environ={}).tables.state

    def full_disk(self: FileStore, key: str, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", key)

    with monkeypatch.context() as patched:
        patched.setattr(FileStore, "append", full_disk)
        with pytest.raises(DiskFull, match="nothing changed: the table journal cannot be written"):
            undo_last(state)
    assert (stocked.root / VENDORS).read_bytes() == after_run
    undo_last(state)
    assert b"Acme,4" in (stocked.root / VENDORS).read_bytes()


def test_an_undo_whose_restore_failed_is_not_taken_for_done(
    stocked: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo's line is followed by a "failed" one when putting the files back fails: the run
    is still the one `table undo` undoes next, and then it is undone."""
    import errno

    rate_acme(stocked, 1)
    state = Session(Vault.open(stocked.root), "demo", environ={}).tables.state
    real_write = FileStore.write

    def full_disk(self: FileStore, key: str, data: bytes, *, create: bool = False):  # type: ignore[no-untyped-def]
        if key == VENDORS:
            raise OSError(errno.ENOSPC, "No space left on device", key)
        return real_write(self, key, data, create=create)

    with monkeypatch.context() as patched:
        patched.setattr(FileStore, "write", full_disk)
        with pytest.raises(OSError):
            undo_last(state)
    journal = (stocked.root / ".aibuddy/logs/tables.jsonl").read_text()
    lines = [json.loads(line) for line in journal.splitlines()]
    assert [line["op"] for line in lines[-2:]] == ["undo", "failed"]
    run = lines[-2]["args"]["run"]
    assert undo_last(state).run == run
    assert b"Acme,4" in (stocked.root / VENDORS).read_bytes()
