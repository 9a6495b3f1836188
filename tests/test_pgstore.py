"""The vault on PostgreSQL (`[store] url` / AIBUDDY_STORE_URL): several hosts (each its own folder
and derived indexes) see one memory with no pull between them; a server that cannot be reached is
"store unavailable" (exit 4), never with a password; a password never sits in aibuddy.toml."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_in_process

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


def aibuddy(env: dict[str, str], *args: str) -> dict:
    done = run_in_process(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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


def test_an_unreachable_server_is_store_unavailable_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://alice:s3cret@/aibuddy?host={tmp_path}/nowhere&connect_timeout=2"
    env = host(tmp_path, "a", url)
    done = run_in_process("memory", "list", "--json", env=env)
    assert done.returncode == 4
    error = json.loads(done.stdout)["error"]
    assert error["message"].startswith("store unavailable") and b"s3cret" not in done.stdout + done.stderr


def test_a_password_in_the_configuration_is_refused(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[store]\nurl = "postgresql://alice:s3cret@db/aibuddy"\n')
    done = run_in_process("--vault", str(vault.root), "memory", "list", env={"AIBUDDY_WORKER": "0"})
    assert done.returncode == 6 and b"PGPASSWORD" in done.stderr and b"s3cret" not in done.stderr


def test_three_hosts_of_twenty_writers_lose_nothing(tmp_path: Path, postgres_url: str) -> None:
    """3 hosts x 20 parallel writers, each saving its record, recalling a shared one (its counter
    goes up under the user's lock) and adding a table row: every write is there afterwards, no
    increment is lost, no row key is given twice."""
    import threading

    from aibuddy_cli.pgstore import PgStore
    from aibuddy_cli.session import Session
    from aibuddy_cli.tables.schema import ColumnSpec
    from aibuddy_cli.vault import Vault

    hosts = [init_vault(tmp_path / f"host{i}", "alice") for i in range(3)]
    first = Session(hosts[0], "alice", environ={}, store=PgStore(postgres_url))
    first.memory.save("shared", type="project", description="The shared runbook for deploys", body="")
    first.tables.changes.create("events", columns=[ColumnSpec("writer", "str")])
    failures: list[BaseException] = []

    def writer(vault: Vault, number: int) -> None:
        try:
            with Session(vault, "alice", environ={}, store=PgStore(postgres_url)) as session:
                session.memory.save(f"note-{number}", type="project", description=f"Note {number}", body="")
                assert [r.name for r in session.memory.recall("shared runbook deploys").records][
                    0
                ] == "shared"
                session.tables.changes.add_rows("events", [{"writer": f"w{number}"}])
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(hosts[n % 3], n)) for n in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and not any(thread.is_alive() for thread in threads)
    check = Session(hosts[2], "alice", environ={}, store=PgStore(postgres_url))
    names = {item.record.name for item in check.memory.list_records().records}
    assert names == {"shared", *(f"note-{n}" for n in range(60))}
    assert check.memory.show("shared").recall_count == 60
    (table,) = check.tables.queries.filter(["events"], limit=1000).tables
    keys = [row["row_id"] for row in table.to_json()["rows"]]
    assert len(keys) == len(set(keys)) == 60


def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path, postgres_url: str) -> None:
    """kill -9 of a process holding the vault's lock: the server ends its session, and the lock
    with it."""
    import signal
    import subprocess
    import sys
    import time

    from aibuddy_cli.errors import Busy
    from aibuddy_cli.pgstore import PgStore

    code = (
        "import signal, sys\n"
        "from aibuddy_cli.pgstore import PgStore\n"
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
