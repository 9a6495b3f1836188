"""The vault on PostgreSQL (`[store] url` / AIBUDDY_STORE_URL): several hosts (each its own folder
and derived indexes) see one memory with no pull between them; a server that cannot be reached is
"store unavailable" (exit 4), never with a password; a password never sits in aibuddy.toml."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import run_aibuddy, run_in_process, wait_for
from store_support import aibuddy, vault_files

from aibuddy_cli.errors import Busy
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.vault import init_vault


def host(tmp_path: Path, name: str, url: str) -> dict[str, str]:
    """A host: its own vault folder (configuration, indexes, locks) over the shared store."""
    vault = init_vault(tmp_path / name, "alice")
    return {
        "AIBUDDY_VAULT": str(vault.root),
        "AIBUDDY_USER": "alice",
        "AIBUDDY_STORE_URL": url,
        "AIBUDDY_WORKER": "0",
    }


@pytest.mark.process
def test_a_save_on_one_host_is_found_by_the_next_recall_on_another(tmp_path: Path, postgres_url: str) -> None:
    a, b = host(tmp_path, "a", postgres_url), host(tmp_path, "b", postgres_url)
    assert aibuddy(b, "memory", "recall", "green tea")["records"] == []  # b's index knows the folder now
    aibuddy(a, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    assert [r["name"] for r in aibuddy(b, "memory", "recall", "green tea")["records"]] == ["tea"]
    aibuddy(b, "memory", "update", "tea", "--description", "Drinks green tea, no sugar")
    assert aibuddy(a, "memory", "show", "tea")["description"] == "Drinks green tea, no sugar"
    aibuddy(a, "memory", "delete", "tea")
    assert aibuddy(b, "memory", "list")["records"] == []
    assert not list((tmp_path / "a").rglob("tea.md"))  # the files live in the database, not the folder


@pytest.mark.process
def test_an_unreachable_server_is_store_unavailable_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://alice:s3cret@/aibuddy?host={tmp_path}/nowhere&connect_timeout=2"
    env = host(tmp_path, "a", url)
    done = run_in_process("memory", "list", "--json", env=env)
    assert done.returncode == 4
    error = json.loads(done.stdout)["error"]
    assert error["message"].startswith("store unavailable") and b"s3cret" not in done.stdout + done.stderr
    doctor = run_in_process("doctor", "--json", env=env)
    checks = {check["name"]: check for check in json.loads(doctor.stdout)["checks"]}
    assert doctor.returncode == 4 and not checks["store"]["ok"]
    assert str(checks["store"]["detail"]).startswith("store unavailable: postgresql://alice:***@/aibuddy")
    assert b"s3cret" not in doctor.stdout + doctor.stderr


@pytest.mark.process
def test_doctor_names_the_database_that_serves_the_vault(tmp_path: Path, postgres_url: str) -> None:
    a = host(tmp_path, "a", postgres_url)
    aibuddy(a, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    done = run_in_process("doctor", "--json", env=a)
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    assert checks["store"]["ok"], checks["store"]
    served_by = rf"{re.escape(postgres_url)}: PostgreSQL \d+\S*, \d+ file\(s\)"
    assert re.match(served_by, str(checks["store"]["detail"]))
    assert checks["memory records"]["detail"] == "1 readable"


def test_a_password_in_the_configuration_is_refused(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[store]\nurl = "postgresql://alice:s3cret@db/aibuddy"\n')
    done = run_in_process("--vault", str(vault.root), "memory", "list", env={"AIBUDDY_WORKER": "0"})
    assert done.returncode == 6 and b"PGPASSWORD" in done.stderr and b"s3cret" not in done.stderr


HOST_WRITERS = """
import sys, threading
from pathlib import Path
from aibuddy_cli.store.postgres import PgStore
from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault

vault, url, host = Vault.open(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3])
failures = []

def writer(number):
    try:
        with Session(vault, "alice", environ={}, store=PgStore(url)) as session:
            name = f"note-{number}"
            session.memory.save(name, type="project", description=f"Note {number}", body="")
            session.memory.update(name, description=f"Note {number}, updated on host {host}")
            assert session.memory.recall("shared runbook deploys").records[0].name == "shared"
            session.tables.changes.add_rows("events", [{"writer": f"w{number}"}])
    except BaseException as error:
        failures.append(repr(error))

threads = [threading.Thread(target=writer, args=(host * 20 + n,)) for n in range(20)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("\\n".join(failures))
sys.exit(1 if failures else 0)
"""


@pytest.mark.process
def test_three_hosts_of_twenty_writers_lose_nothing(tmp_path: Path, postgres_url: str) -> None:
    """3 hosts (processes, each its own folder and indexes) x 20 parallel writers, each saving its
    record, updating it, recalling a shared one (its counter goes up under the user's lock) and
    adding a table row: every write is there afterwards, no increment is lost, no row key is
    given twice."""
    import subprocess
    import sys

    from aibuddy_cli.app.session import Session
    from aibuddy_cli.store.postgres import PgStore
    from aibuddy_cli.tables.schema import ColumnSpec

    hosts = [init_vault(tmp_path / f"host{i}", "alice") for i in range(3)]
    first = Session(hosts[0], "alice", environ={}, store=PgStore(postgres_url))
    first.memory.save("shared", type="project", description="The shared runbook for deploys", body="")
    first.tables.changes.create("events", columns=[ColumnSpec("writer", "str")])
    running = [
        subprocess.Popen(
            [sys.executable, "-c", HOST_WRITERS, str(vault.root), postgres_url, str(number)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for number, vault in enumerate(hosts)
    ]
    for process in running:
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, output
    check = Session(hosts[2], "alice", environ={}, store=PgStore(postgres_url))
    records = {item.record.name: item.record for item in check.memory.list_records().records}
    assert set(records) == {"shared", *(f"note-{n}" for n in range(60))}
    assert all(records[f"note-{n}"].description.startswith(f"Note {n}, updated") for n in range(60))
    assert check.memory.show("shared").recall_count == 60
    (table,) = check.tables.queries.filter(["events"], limit=1000).tables
    keys = [row["row_id"] for row in to_json(table)["rows"]]
    assert len(keys) == len(set(keys)) == 60


@pytest.mark.process
def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path, postgres_url: str) -> None:
    """kill -9 of a process holding the vault's lock: the server ends its session, and the lock
    with it."""
    import signal
    import subprocess
    import sys
    import time

    from aibuddy_cli.errors import Busy
    from aibuddy_cli.store.postgres import PgStore

    code = (
        "import signal, sys\n"
        "from aibuddy_cli.store.postgres import PgStore\n"
        "with PgStore(sys.argv[1]).lock('memory-alice'):\n"
        "    print('held', flush=True)\n"
        "    signal.pause()  # until the test kills it\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, postgres_url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = PgStore(postgres_url)
        try:
            with store.lock("memory-alice", timeout=0.2):
                raise AssertionError("the lock was free while held")
        except Busy:
            pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(60)
        deadline = time.monotonic() + 60
        while True:
            try:
                with store.lock("memory-alice", timeout=1):
                    break
            except Busy:
                assert time.monotonic() < deadline, "the killed process's lock was never released"
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.process
def test_a_writer_waits_for_the_lock_in_the_servers_queue_and_gets_it_when_let_go(postgres_url: str) -> None:
    """A lock held by another session: the writer waits in PostgreSQL's lock queue (woken when it
    is let go), not in a loop of tries and sleeps; past its deadline it is busy."""
    import psycopg

    from aibuddy_cli.store.postgres import PgStore

    holder, waiter = PgStore(postgres_url), PgStore(postgres_url)
    got, let_go = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.lock("memory-alice"):
            got.set()
            let_go.wait(120)

    def wait() -> None:
        with waiter.lock("memory-alice", timeout=300):
            got.set()

    holding = threading.Thread(target=hold)
    holding.start()
    assert got.wait(120)
    got.clear()
    with pytest.raises(Busy, match="busy"):
        with waiter.lock("memory-alice", timeout=0.2):
            pass
    waiting = threading.Thread(target=wait)
    waiting.start()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        asleep = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
        )
        assert wait_for(lambda: admin.execute(asleep).fetchone()[0] == 1)
    assert not got.is_set()
    let_go.set()
    assert got.wait(120)
    holding.join(120)
    waiting.join(120)


@pytest.mark.process
def test_a_server_that_goes_away_fails_fast_and_works_again_when_back(
    tmp_path: Path, postgres_url: str, postgres_cluster: object
) -> None:
    env = host(tmp_path, "a", postgres_url)
    aibuddy(env, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    postgres_cluster.run("pg_ctl", "-D", str(postgres_cluster.data), "-m", "fast", "stop")  # type: ignore[attr-defined]
    try:
        done = run_in_process("memory", "list", "--json", env=env)
        assert done.returncode == 4 and json.loads(done.stdout)["error"]["message"].startswith(
            "store unavailable"
        )
    finally:
        postgres_cluster.start()  # type: ignore[attr-defined]
    assert [r["name"] for r in aibuddy(env, "memory", "list")["records"]] == ["tea"]


@pytest.mark.process
def test_a_killed_writer_leaves_no_partial_record_and_no_lock(tmp_path: Path, postgres_url: str) -> None:
    """kill -9 of a process saving large records one after another: every record the database
    holds is whole, and the next save on another host does not wait for the dead one's lock."""
    import signal
    import subprocess
    import sys

    a, b = host(tmp_path, "a", postgres_url), host(tmp_path, "b", postgres_url)
    body = "x" * 300_000
    code = (
        "import sys\n"
        "from aibuddy_cli.app.session import Session\n"
        "from aibuddy_cli.vault import Vault\n"
        "from pathlib import Path\n"
        "vault = Vault.open(Path(sys.argv[1]))\n"
        "session = Session(vault, 'alice', environ={'AIBUDDY_STORE_URL': sys.argv[2]})\n"
        "for n in range(10_000):\n"
        "    session.memory.save(f'big-{n}', type='project', description=f'Big {n}', body='x' * 300_000)\n"
        "    print(n, flush=True)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code, a["AIBUDDY_VAULT"], postgres_url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        for _ in range(3):
            writer.stdout.readline()  # three saves done: the fourth is under way
        writer.send_signal(signal.SIGKILL)
        writer.wait(60)
    finally:
        writer.kill()
        writer.wait()
    listed = run_in_process("memory", "list", "--json", env=b)
    assert listed.returncode == 0 and listed.stderr == b""  # no malformed record reported
    names = [r["name"] for r in json.loads(listed.stdout)["records"]]
    assert len(names) >= 3
    for name in names:
        assert aibuddy(b, "memory", "show", name)["body"].strip() == body
    aibuddy(b, "memory", "save", "after", "--type", "user", "--description", "Saved after the kill")


@pytest.mark.process
def test_a_second_users_records_stay_theirs_on_every_host(
    tmp_path: Path, postgres_url: str, aibuddy_exe: list[str]
) -> None:
    """Tokens live in the database too: made on host A, they work on host B's HTTP server, and
    bob's never reads alice's memory (nor do bob's commands)."""
    pytest.importorskip("mcp")
    from mcp_http_client import HttpServer, answer, with_client

    a, b = host(tmp_path, "a", postgres_url), host(tmp_path, "b", postgres_url)
    tokens = {}
    for user in ("alice", "bob"):
        done = run_in_process("token", "create", "--user", user, env=a)
        assert done.returncode == 0, done.stderr
        tokens[user] = done.stdout.decode().strip()
    server = HttpServer(aibuddy_exe, {**os.environ, **b})
    try:

        async def save(client: Any) -> None:
            answer(await client.call_tool("memory_save", {
                "name": "salary", "type": "user", "description": "Alice's salary", "body": "Secret figure",
            }))  # fmt: skip

        async def look(client: Any) -> tuple[Any, Any]:
            listed = answer(await client.call_tool("memory_list", {}))
            return listed, await client.call_tool("memory_show", {"name": "salary"})

        with_client(server.url, tokens["alice"], save)
        listed, shown = with_client(server.url, tokens["bob"], look)
    finally:
        server.stop()
    assert listed["user"] == "bob" and listed["records"] == [] and shown.is_error
    assert aibuddy(a, "memory", "show", "salary")["body"].strip() == "Secret figure"
    as_bob = run_in_process("--user", "bob", "memory", "show", "salary", env=a)
    assert as_bob.returncode == 3 and b"Secret" not in as_bob.stdout + as_bob.stderr


@pytest.mark.process
def test_store_copy_moves_a_whole_vault_there_and_back_byte_for_byte(
    tmp_path: Path, postgres_url: str
) -> None:
    import shutil

    source = tmp_path / "source"
    shutil.copytree(Path(__file__).parents[2] / "sample_vault", source)
    env = {"AIBUDDY_VAULT": str(source), "AIBUDDY_WORKER": "0"}
    user = aibuddy(env, "memory", "list")["user"]
    aibuddy(env, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    aibuddy(env, "table", "create", "people", "--column", "name:str")
    aibuddy(env, "table", "add", "people", "--row", '{"name": "Ada"}')
    assert run_in_process("token", "create", env=env).returncode == 0
    before = vault_files(source)
    assert {"tasks/.gitkeep", f"memory/{user}/tea.md", ".aibuddy/tokens.json"} <= set(before)
    assert any(key.startswith(".aibuddy/logs/") for key in before)

    assert aibuddy(env, "store", "copy", "--to", postgres_url)["copied"] == len(before)
    assert aibuddy(env, "store", "copy", "--to", postgres_url) == {  # again: nothing to do
        "copied": 0, "unchanged": len(before), "removed": 0, "bytes": 0, "to": postgres_url,
    }  # fmt: skip
    served = {**env, "AIBUDDY_STORE_URL": postgres_url}
    assert aibuddy(served, "table", "filter", "people")["tables"][0]["rows"][0]["name"] == "Ada"
    back = tmp_path / "back"
    assert aibuddy(served, "store", "copy", "--to", str(back))["copied"] == len(before)
    assert vault_files(back) == before
    assert (back / "aibuddy.toml").read_bytes() == (source / "aibuddy.toml").read_bytes()
    assert [r["name"] for r in aibuddy({**env, "AIBUDDY_VAULT": str(back)}, "memory", "recall", "green tea")[
        "records"
    ]] == ["tea"]  # fmt: skip

    # A target holding other bytes under a vault's name refuses the whole copy, writing nothing.
    tea = f"memory/{user}/tea.md"
    (source / tea).write_bytes(before[tea].replace(b"green", b"black"))
    aibuddy(env, "memory", "save", "new-one", "--type", "user", "--description", "Only in the source")
    done = run_in_process("store", "copy", "--to", str(back), "--json", env=env)
    assert done.returncode == 4 and f"memory/{user}/tea.md" in json.loads(done.stdout)["error"]["message"]
    assert not (back / f"memory/{user}/new-one.md").exists()

    # A mirror makes the backup folder the vault's image again: replaced, added and removed.
    (back / f"memory/{user}/only-in-the-backup.md").write_bytes(before[f"memory/{user}/tea.md"])
    mirrored = aibuddy(env, "store", "copy", "--to", str(back), "--mirror")
    assert (mirrored["copied"], mirrored["removed"]) == (2, 1)
    assert vault_files(back) == vault_files(source)


def test_a_copied_folder_keeps_the_settings_but_not_the_database() -> None:
    from aibuddy_cli.app.store_copy import settings_for_copy

    config = (
        '[vault]\ndefault_user = "alice"\n\n[store]\nurl = "postgresql://db/team"\n\n'
        '[models]\nurl = "kept"  # another table\'s key of that name\n'
    )
    assert settings_for_copy(config) == config.replace('url = "postgresql://db/team"\n', "")


@pytest.mark.process
def test_scan_reads_a_database_vault_from_the_database(tmp_path: Path, postgres_url: str) -> None:
    """`aibuddy scan` on a host judges what the database serves, not the files a folder still
    holds under the vault's names (a folder copied into the database keeps its old files)."""
    key = "sk-proj-" + "Q7w8E9r0T1y2" * 3  # made up, shaped like an OpenAI key
    a = host(tmp_path, "a", postgres_url)
    saved = run_in_process(
        "memory", "save", "deploy", "--type", "reference", "--description", "Deploy key", "--body", key, env=a
    )
    assert saved.returncode == 0, saved.stderr
    stale = tmp_path / "a" / "memory" / "alice" / "stale.md"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text(f"---\nname: stale\n---\n{key}\n")
    done = run_in_process("scan", "--json", env=a)
    assert done.returncode == 4, done.stderr
    found = json.loads(done.stdout)["findings"]
    assert [(f["path"], f["kind"]) for f in found] == [("memory/alice/deploy.md", "api key")]
    run_in_process("memory", "delete", "deploy", env=a)
    assert run_in_process("scan", env=a).returncode == 0


FIRST_RELEASE_SCHEMA = """
CREATE TABLE aibuddy_files (key TEXT COLLATE "C" PRIMARY KEY, folder TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL, data BYTEA NOT NULL, version BIGINT NOT NULL, mtime_ns BIGINT NOT NULL);
CREATE INDEX aibuddy_files_by_folder ON aibuddy_files (folder, name);
CREATE TABLE aibuddy_clock (id INTEGER PRIMARY KEY CHECK (id = 0), seq BIGINT NOT NULL,
    epoch TEXT NOT NULL DEFAULT md5(random()::text || clock_timestamp()::text));
INSERT INTO aibuddy_clock (id, seq) VALUES (0, 1);
CREATE TABLE aibuddy_changes (seq BIGINT PRIMARY KEY, folder TEXT NOT NULL, name TEXT NOT NULL);
CREATE INDEX aibuddy_changes_by_folder ON aibuddy_changes (folder, seq);
INSERT INTO aibuddy_files VALUES ('.aibuddy/logs/extraction.jsonl', '.aibuddy/logs', 'extraction.jsonl',
    '{"n": 1}', 1, 0);
INSERT INTO aibuddy_changes VALUES (1, '.aibuddy/logs', 'extraction.jsonl');
"""


@pytest.mark.process
def test_a_database_the_first_release_made_is_upgraded_in_place(postgres_url: str) -> None:
    """Its files are kept and its logs take appends as rows of their own from then on."""
    import psycopg

    from aibuddy_cli.store.postgres import PgStore

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(FIRST_RELEASE_SCHEMA)
    store = PgStore(postgres_url)
    log = ".aibuddy/logs/extraction.jsonl"
    assert store.read(log)[0] == b'{"n": 1}'
    store.append(log, b'{"n": 2}\n')
    assert store.read(log)[0] == b'{"n": 1}\n{"n": 2}\n' and store.stat(log).size == 18
    assert store.changes(".aibuddy/logs", ()).names is None  # a first look: the caller scans
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        rows = connection.execute("SELECT data FROM aibuddy_appends WHERE key = %s", (log,)).fetchall()
        schema = connection.execute("SELECT schema FROM aibuddy_clock").fetchall()
    assert [bytes(data) for (data,) in rows] == [b'\n{"n": 2}\n'] and schema == [(2,)]


@pytest.mark.process
def test_a_database_a_newer_release_changed_is_refused_whole(
    tmp_path: Path, postgres_url: str, aibuddy_exe: list[str]
) -> None:
    """Its files might be kept in ways this release does not know: nothing is read or written.
    (Real processes: a process looks at the schema once.)"""
    import psycopg

    a = {**os.environ, **host(tmp_path, "a", postgres_url)}
    assert run_aibuddy(aibuddy_exe, "memory", "save", "tea", "-t", "user", "-d", "Tea", env=a).returncode == 0
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE aibuddy_clock SET schema = 3")
    for command in (("memory", "list"), ("memory", "save", "x", "-t", "user", "-d", "x")):
        done = run_aibuddy(aibuddy_exe, *command, "--json", env=a)
        assert done.returncode == 6, done.stderr
        message = json.loads(done.stdout)["error"]["message"]
        assert "newer aibuddy (its schema 3, this one knows 2): upgrade aibuddy on this host" in message
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE aibuddy_clock SET schema = 2")
    listed = run_aibuddy(aibuddy_exe, "memory", "list", "--json", env=a)
    assert [r["name"] for r in json.loads(listed.stdout)["records"]] == ["tea"]


def waiting_on_lock(admin: Any, pid: int) -> bool:
    """Whether the backend pid waits for a heavyweight lock (table, row, transaction)."""
    rows = admin.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall()
    return bool(rows) and rows[0][0] == "Lock"


@pytest.mark.process
def test_the_upgrade_does_not_deadlock_with_a_first_release_writer(postgres_url: str) -> None:
    """The upgrade alters aibuddy_clock, which needs the whole table: it takes the table first. Had
    it taken the clock *row* first, a first-release writer queued for that row would hold a share
    of the table while waiting for the upgrader: a lock cycle, one of them aborted."""
    import psycopg

    from aibuddy_cli.store.postgres import PgStore

    with psycopg.connect(postgres_url, autocommit=True) as setup:
        setup.execute(FIRST_RELEASE_SCHEMA)
    admin = psycopg.connect(postgres_url, autocommit=True)
    reader = psycopg.connect(postgres_url)  # a first-release reader in a transaction: holds ACCESS SHARE
    old_writer = psycopg.connect(postgres_url)  # a first-release writer: the clock row first
    try:
        reader.execute("SELECT count(*) FROM aibuddy_files").fetchall()
        outcome: dict[str, Any] = {}

        def upgrade() -> None:
            try:
                outcome["read"] = PgStore(postgres_url).read(".aibuddy/logs/extraction.jsonl")[0]
            except BaseException as error:  # noqa: BLE001
                outcome["upgrade error"] = repr(error)

        def write_old() -> None:
            try:
                old_writer.execute("SELECT 1 FROM aibuddy_clock WHERE id = 0 FOR UPDATE")
                old_writer.execute("UPDATE aibuddy_clock SET seq = seq + 1 WHERE id = 0")
                old_writer.commit()
                outcome["old write"] = "committed"
            except BaseException as error:  # noqa: BLE001
                outcome["old writer error"] = repr(error)
                old_writer.rollback()

        upgrader = threading.Thread(target=upgrade)
        upgrader.start()
        # The upgrader holds the clock row and waits for aibuddy_files (the reader's transaction).
        assert wait_for(
            lambda: (
                admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                    ("%ALTER TABLE aibuddy_files%",),
                ).fetchone()[0]
                == 1
            )
        ), "the upgrade never started"
        writer = threading.Thread(target=write_old)
        writer.start()
        assert wait_for(lambda: waiting_on_lock(admin, old_writer.info.backend_pid))
        reader.commit()  # the upgrader goes on, to ALTER TABLE aibuddy_clock
        upgrader.join(120)
        writer.join(120)
        assert not upgrader.is_alive() and not writer.is_alive()
    finally:
        for connection in (reader, old_writer, admin):
            connection.close()
    assert outcome == {"read": b'{"n": 1}', "old write": "committed"}


@pytest.mark.process
def test_a_restarted_server_is_not_store_unavailable(postgres_url: str, postgres_cluster: Any) -> None:
    """The server restarts between two calls (a failover, a maintenance restart): the next call on
    each connection this process keeps (a read, a lock) works, as a connection the server ended
    is replaced once, before anything of the call was sent."""
    from aibuddy_cli.store.postgres import PgStore, StoreUnavailable

    store = PgStore(postgres_url)
    store.write("memory/demo/tea.md", b"tea")
    with store.lock("memory-demo", timeout=5):
        pass
    postgres_cluster.run("pg_ctl", "-D", str(postgres_cluster.data), "-m", "fast", "stop")
    postgres_cluster.start()
    try:
        assert store.read("memory/demo/tea.md")[0] == b"tea"
        with store.lock("memory-demo", timeout=5):
            store.write("memory/demo/tea.md", b"green tea")
    except StoreUnavailable as error:
        pytest.fail(f"the server is back, yet: {error}")
    assert store.read("memory/demo/tea.md")[0] == b"green tea"


@pytest.mark.process
def test_a_holder_whose_lock_session_ended_cannot_write_beside_the_new_holder(postgres_url: str) -> None:
    """lock() holds a session advisory lock on a connection of its own. When that session ends
    while the block runs (the server ends it, an idle-session timeout, a network cut), the lock
    is free for another host: the first holder's next write is refused instead of going on
    beside the new holder."""
    import psycopg

    from aibuddy_cli.store.postgres import PgStore

    holder, other = PgStore(postgres_url), PgStore(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        with holder.lock("memory-demo", timeout=5):
            pid = holder._local.locks.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            assert wait_for(
                lambda: not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall()
            )
            with other.lock("memory-demo", timeout=5):  # the lock is free: another host holds it now
                other.write("memory/demo/counter.md", b"other")
                with pytest.raises(Busy, match="lock on memory-demo was lost"):
                    holder.write("memory/demo/counter.md", b"holder")
            assert other.read("memory/demo/counter.md")[0] == b"other"


def test_store_unavailable_does_not_show_a_password_given_as_a_url_parameter(tmp_path: Path) -> None:
    """libpq takes the password as a URL parameter too (postgresql:///db?password=…), which
    AIBUDDY_STORE_URL may hold: no message shows it."""
    from aibuddy_cli.store.postgres import PgStore, StoreUnavailable

    url = f"postgresql:///aibuddy?host={tmp_path}/nowhere&user=alice&password=s3cret&connect_timeout=2"
    with pytest.raises(StoreUnavailable) as raised:
        PgStore(url).read("memory/demo/tea.md")
    assert "s3cret" not in str(raised.value)


@pytest.mark.process
def test_a_stopped_writer_cannot_hold_every_host_for_ever(postgres_url: str) -> None:
    """Each session limits itself: a transaction left open by a stopped process (SIGSTOP, a cut
    network) is ended by the server after a minute, and a writer waits at most 30 s for the
    clock before it is told busy (psycopg's LockNotAvailable becomes Busy, not "unavailable")."""
    import psycopg

    from aibuddy_cli.store.postgres import PgStore

    store = PgStore(postgres_url)
    db = store.db
    assert db.execute("SHOW idle_in_transaction_session_timeout").fetchall() == [("1min",)]
    assert db.execute("SHOW lock_timeout").fetchall() == [("30s",)]
    failure = store._failure(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"))
    assert type(failure) is Busy and "busy" in failure.message


@pytest.mark.process
def test_a_hosts_first_index_reads_the_records_in_a_few_queries_not_one_each(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host with no index of the database yet (a new host, 10,000 records) reads the records
    in batches: a query per record would cost each host's first command one round trip a record."""
    from aibuddy_cli.app.session import Session
    from aibuddy_cli.memory.records import MemoryRecord, render_record
    from aibuddy_cli.store.postgres import PgStore
    from aibuddy_cli.vault import Vault

    store = PgStore(postgres_url)
    names = [f"note-{i:03d}" for i in range(300)]
    for name in names:
        record = MemoryRecord(name=name, type="project", description=f"Deploy notes {name}", body="b\n")
        store.write(f"memory/alice/{name}.md", render_record(record).encode())
    queries: list[str] = []
    real_query = PgStore._query

    def counted(self: PgStore, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        queries.append(sql)
        return real_query(self, sql, params)

    monkeypatch.setattr(PgStore, "_query", counted)
    init_vault(tmp_path / "b", "alice")
    with Session(Vault.open(tmp_path / "b"), "alice", environ={"AIBUDDY_STORE_URL": postgres_url}) as session:
        listed = session.memory.list_records()
    assert sorted(found.record.name for found in listed.records) == names
    assert len(queries) <= 30, f"{len(queries)} queries for {len(names)} records"
