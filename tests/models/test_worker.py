"""The model worker: a shell loop of model commands pays litellm's import once. Real processes,
the real litellm client, the local fake server; the worker never makes a command fail or hang."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import in_vault, run_aibuddy, run_in_process

from aibuddy_cli import unix_peer
from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import NotAllowed
from aibuddy_cli.models import calls as models
from aibuddy_cli.models import worker, worker_client
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault


@pytest.fixture
def worker_env(
    env: dict[str, str], fake_openai: FakeOpenAI, runtime_dir: Path, vault: Vault
) -> Iterator[dict[str, str]]:
    Session(vault, "demo", environ={}).memory.save(
        "tea", type="user", description="Drinks green tea", body="tea"
    )
    settings = {
        **env,
        "AIBUDDY_WORKER": "1",
        "AIBUDDY_WORKER_IDLE": "300",  # generous: a loaded machine's calls can be far apart; stopped below
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "AIBUDDY_MODEL_RECALL": "openai/recall-test",
        "AIBUDDY_TIMEOUT": "30",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
    }
    yield settings
    try:
        worker.stop(settings)  # what a test left running with these settings
    except Exception:  # noqa: BLE001 - a test that made the folder unusable on purpose
        pass


def recall(aibuddy_exe: list[str], env: dict[str, str]) -> dict:
    result = run_aibuddy(aibuddy_exe, "memory", "recall", "tea", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_for_worker(env: dict[str, str]) -> None:
    """Until the worker the last command started answers (asked from here: a process per poll
    would take the CPU the worker's own start needs)."""
    deadline = time.monotonic() + 120  # generous: an event, not a timing
    while not worker.status(env).running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker.status(env).running


def status(aibuddy_exe: list[str], env: dict[str, str]) -> dict:
    return json.loads(run_aibuddy(aibuddy_exe, "worker", "status", "--json", env=env).stdout)


# A start measured at half a second derives a limit of half a second once the floor (MIN_IDLE, a
# second) is lowered: the loops run in-process below wait a few idle limits, not a few seconds.
QUICK_START = 0.5


def serve_holding(
    path: Path, digest: str, start_seconds: float, asked: float | None, monkeypatch: pytest.MonkeyPatch
) -> tuple[threading.Thread, socket.socket]:
    """The worker's loop in this process on path, and a connection to it made as it binds, before it
    first reads its idle clock: the loop takes that connection at once, and its handler keeps the
    loop busy until the connection sends its request or closes. So the loop cannot go idle before
    the test's first call, however long this process waits for a CPU (a limit of half a second,
    raced by a connection made once the socket showed, was lost on a loaded machine)."""
    held, queued = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), threading.Event()
    held.settimeout(60)
    bind = worker.bind_private

    def bind_and_connect(at: Path) -> socket.socket | None:
        server = bind(at)
        if server is not None:
            server.listen(16)  # the loop's own listen() only sets the same queue's length again
            held.connect(str(at))
            queued.set()
        return server

    monkeypatch.setattr(worker, "bind_private", bind_and_connect)
    server = threading.Thread(target=worker._serve_on, args=(path, digest, start_seconds, asked), daemon=True)
    server.start()
    assert queued.wait(60)
    return server, held


@pytest.mark.process
@pytest.mark.parametrize("idle", [0.5, None], ids=["AIBUDDY_WORKER_IDLE", "derived from its start"])
def test_a_call_in_flight_outlives_the_idle_bound(
    runtime_dir: Path, monkeypatch: pytest.MonkeyPatch, idle: float | None
) -> None:
    """The worker's loop (in-process) counts idle time from its last call's end, not its start: a
    model slower than its idle limit (asked, or derived from its start) is answered, and a stop
    lets the call finish."""
    monkeypatch.setattr(worker_client, "MIN_IDLE", 0.05)
    release, asked = threading.Event(), threading.Event()

    def slow_answer(request: dict, state: dict) -> dict:
        if request.get("op") != "complete":
            return worker_answer(request, state)
        asked.set()
        release.wait(120)
        state["calls"] += 1
        return {"ok": True, "message": {"content": "late", "tool_calls": None}}

    worker_answer = worker._answer
    monkeypatch.setattr(worker, "_answer", slow_answer)
    path = runtime_dir / "w.sock"
    server, call = serve_holding(path, "digest", QUICK_START, idle, monkeypatch)
    replies: list[dict] = []

    def ask() -> None:  # the call, on the connection the loop took first
        call.sendall(json.dumps({"op": "complete", "env": "digest"}).encode() + b"\n")
        replies.append(json.loads(call.makefile("rb").readline()))

    client = threading.Thread(target=ask, daemon=True)
    client.start()
    assert asked.wait(60)
    held = time.monotonic()
    limit = idle if idle is not None else worker_client.derived_idle(QUICK_START)
    assert limit == 0.5
    while time.monotonic() - held < 4 * limit:  # the event: four times the idle bound has gone by
        time.sleep(0.05)
    assert server.is_alive()  # still serving the call in flight
    unix_peer.send(path, {"op": "stop"}, 10)  # a stop, too, lets the call finish
    release.set()
    client.join(60)
    call.close()
    server.join(60)
    assert replies == [{"ok": True, "message": {"content": "late", "tool_calls": None}}]
    assert not server.is_alive() and not path.exists()


@pytest.mark.process
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads processes from /proc")
def test_an_unused_worker_exits_once_idle_for_as_long_as_its_start_took(
    worker_env: dict[str, str], tmp_path: Path
) -> None:
    """Nobody asked to keep it (no AIBUDDY_WORKER_IDLE, no keep_worker): the worker started for an
    environment measures its own start (spawn to ready), says so, and exits once unused for that
    long, so a machine that used several provider environments keeps no idle worker per
    environment for minutes. Its litellm is an empty stand-in (first on its PYTHONPATH): no call
    reaches it, and the start it measures, then waits for unused, is its process's (under a
    second) instead of litellm's import (seconds, twice over); the real import's start is
    test_the_first_model_calls_start_one_worker_however_many_at_once_that_serves_the_next's."""
    stand_in = tmp_path / "stand-in"
    (stand_in / "litellm").mkdir(parents=True)
    (stand_in / "litellm/__init__.py").write_text('"""litellm\'s stand-in: imported, never called."""\n')
    env = {name: value for name, value in worker_env.items() if name != "AIBUDDY_WORKER_IDLE"}
    env["PYTHONPATH"] = os.pathsep.join([str(stand_in), env["PYTHONPATH"]])
    started = time.time()
    worker_client.start(env)  # as the first model call that finds no worker does
    deadline = time.monotonic() + 120  # generous: an event, not a timing
    found = worker.status(env)
    while not found.running and time.monotonic() < deadline:  # its answer is the status: unused
        time.sleep(0.1)  # for a second, this worker exits (asked once, nothing left to miss)
        found = worker.status(env)
    assert found.start_seconds is not None and 0 < found.start_seconds <= time.time() - started
    assert found.idle_seconds == worker_client.derived_idle(found.start_seconds)
    deadline = time.monotonic() + 120  # generous: the event is the worker's own exit
    while found.pid in worker_pids(env["XDG_RUNTIME_DIR"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found.pid not in worker_pids(env["XDG_RUNTIME_DIR"])
    assert not worker.status(env).running and not Path(found.socket).exists()


@pytest.mark.process
def test_keep_worker_keeps_an_unused_worker_up_past_its_derived_limit(
    runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[models] keep_worker` travels with each call: the worker serving it stays up unused for
    that long, not just for its start's cost (the loop in-process; the model call is stubbed)."""
    monkeypatch.setattr(models, "call_in_process", lambda settings, messages, **options: {"content": "ok"})
    monkeypatch.setattr(worker_client, "MIN_IDLE", 0.05)
    env = {"XDG_RUNTIME_DIR": str(runtime_dir), "PATH": os.environ.get("PATH", "")}
    digest = worker_client.fingerprint(env)
    path = worker_client.socket_path(env, digest)
    server, holding = serve_holding(path, digest, QUICK_START, None, monkeypatch)  # derived: its start's
    try:
        kept = models.model_settings("recall", {"recall": "openai/x", "keep_worker": 600}, Settings.read(env))
        assert kept.keep_worker == 600 and kept.problem is None
        answer = worker_client.complete(kept, [{"role": "user", "content": "hi"}], {}, env)
        assert answer.content == "ok"
        holding.close()  # the loop's first connection ends without a request: unused from here on
        used = time.monotonic()
        assert worker.status(env).idle_seconds == 600
        derived = worker_client.derived_idle(QUICK_START)
        assert derived == QUICK_START
        while time.monotonic() - used < 3 * derived:  # the event: three times the derived limit
            time.sleep(0.05)
        assert server.is_alive() and worker.status(env).running
    finally:
        unix_peer.send(path, {"op": "stop"}, 10)
        server.join(60)
    assert not server.is_alive()


def test_a_keep_worker_that_is_not_seconds_is_said_by_every_call() -> None:
    long = {"recall": "openai/x", "keep_worker": "long"}
    settings = models.model_settings("recall", long, Settings.read({}))
    assert settings.keep_worker is None
    assert settings.problem == (
        "aibuddy.toml: [models] keep_worker must be a number of seconds from 0 to 86400, not 'long'"
    )


@pytest.mark.process
def test_a_stale_socket_never_fails_or_hangs_a_command(
    worker_env: dict[str, str], vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, as the command runs it (the process environment, AIBUDDY_WORKER=1), so litellm is
    imported only once."""
    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AIBUDDY_WORKER_IDLE", "0")  # no worker is started: the socket stays stale
    fake_openai.default.content = '{"selected": ["tea"]}'
    path = worker_client.socket_path(dict(os.environ))
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # bound, never listening: connections are refused
    memory = Session(Vault.open(vault.root), "demo").memory
    models.import_litellm(600)  # litellm's import (seconds, more on a busy machine) is not the point
    started = time.monotonic()
    assert memory.recall("tea").method == "model"
    assert time.monotonic() - started < 25  # a hang would wait out the 30 s timeout
    path.unlink()
    path.write_text("not a socket")
    assert memory.recall("tea").method == "model"
    path.unlink()  # else the fixture's `worker stop` waits its 2 s for the "socket" to go


@pytest.mark.process
def test_lexical_commands_never_start_a_worker(
    worker_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, through the command's entry point (the worker on, as the installed command has
    it): a worker is started by worker.start() or not at all, so no wait for one that might come."""
    del worker_env["AIBUDDY_MODEL_RECALL"]
    started: list[object] = []
    monkeypatch.setattr(worker_client, "start", lambda environ: started.append(environ))
    monkeypatch.setattr(worker_client, "complete", lambda *args, **kwargs: started.append(args))
    result = run_in_process("memory", "recall", "tea", "--json", env=worker_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["method"] == "words+meaning"
    assert started == []
    assert not list(Path(worker_env["XDG_RUNTIME_DIR"]).glob("aibuddy/*.sock"))


# --- one worker per environment, and only ours -------------------------------------------------


def test_every_variable_but_a_few_per_shell_ones_makes_another_worker(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-a", "HOME": "/home/a", "XDG_RUNTIME_DIR": "/run/x"}
    key = worker_client.fingerprint(base)
    # What litellm may read, whatever its prefix: a variable list would miss these.
    for name, value in (
        ("HOSTED_VLLM_API_BASE", "http://127.0.0.1:8000/v1"),
        ("DEEPINFRA_API_KEY", "k"),
        ("FIREWORKS_AI_API_KEY", "k"),
        ("REPLICATE_API_TOKEN", "k"),
        ("ALL_PROXY", "socks5://127.0.0.1:1080"),
        ("FOO_API_KEY", "k"),
    ):
        assert worker_client.fingerprint({**base, name: value}) != key, name
    assert worker_client.fingerprint({**base, "OPENAI_API_KEY": "sk-b"}) != key
    # What changes per shell, terminal or test and no provider reads; aibuddy's own settings.
    per_shell = {"PWD": "/elsewhere", "OLDPWD": "/x", "SHLVL": "3", "_": "/usr/bin/env", "TERM": "xterm",
                 "TERM_PROGRAM": "iTerm", "COLUMNS": "80", "PS1": "$ ", "PYTEST_CURRENT_TEST": "t",
                 "AIBUDDY_VAULT": "/v", "AIBUDDY_USER": "bob", "AIBUDDY_TIMEOUT": "5"}  # fmt: skip
    assert worker_client.fingerprint({**base, **per_shell}) == key
    # litellm's defaults, which the first in-process call sets, change nothing.
    assert worker_client.fingerprint({**base, "LITELLM_MODE": "PRODUCTION"}) == key
    # The working directory counts only where it can change a call: a relative path that exists.
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    for folder in ("one", "two"):
        (tmp_path / folder / "creds.json").write_text("{}")
    relative = {**base, "GOOGLE_APPLICATION_CREDENTIALS": "creds.json"}
    os.chdir(tmp_path / "one")
    in_one, plain_in_one = worker_client.fingerprint(relative), worker_client.fingerprint(base)
    os.chdir(tmp_path / "two")
    assert worker_client.fingerprint(relative) != in_one and worker_client.fingerprint(base) == plain_in_one


def test_the_client_uses_only_a_worker_of_its_own_user_and_environment(
    warm_worker: tuple[FakeOpenAI, dict[str, str]], vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the pytest process's warm worker (its start is not the subject: a start of its own
    would cost litellm's import again); its call count is read as a difference."""
    fake_openai, worker_settings = warm_worker
    env = in_vault(
        worker_settings, vault.root, AIBUDDY_MODEL_RECALL="openai/recall-test", AIBUDDY_TIMEOUT="30"
    )
    calls = worker.status(env).calls
    other = {**env, "HOSTED_VLLM_API_BASE": "http://127.0.0.1:9/v1"}
    assert worker_client.socket_path(other) != worker_client.socket_path(env)
    assert worker.status(other).running is False  # environment B is not served by A's worker
    # The credential read works here (on Linux): the worker is ours.
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.connect(str(worker_client.socket_path(env)))
    assert unix_peer.peer_uid(probe) in (os.getuid(), None)
    probe.close()

    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    fake_openai.default.content = "in-process"
    # the command's environment: through the worker
    settings = models.model_settings("recall", {}, Settings.read(os.environ))
    assert settings.worker is not None and settings.model == "openai/recall-test"
    hello = [{"role": "user", "content": "hi"}]
    # Right socket, another environment (a digest that only starts the same): refused.
    real = worker_client.fingerprint
    monkeypatch.setattr(worker_client, "fingerprint", lambda environ: real(environ)[:16] + "0" * 48)
    with pytest.raises(unix_peer.PeerUnavailable, match="environment"):
        worker_client.complete(settings, hello, {}, os.environ)
    assert models.complete_text(settings, hello) == "in-process"  # the fallback: in this process
    monkeypatch.setattr(worker_client, "fingerprint", real)
    # A socket served by another uid (as a racing local user would): never sent the request.
    monkeypatch.setattr(unix_peer, "peer_uid", lambda connection: os.getuid() + 1)
    with pytest.raises(unix_peer.PeerUnavailable, match="served by uid"):
        worker_client.complete(settings, hello, {}, os.environ)
    assert models.complete_text(settings, hello) == "in-process"
    monkeypatch.setattr(unix_peer, "peer_uid", lambda connection: os.getuid())
    assert len(fake_openai.requests) == 2 and worker.status(env).calls == calls
    fake_openai.default.content = "through the worker"
    assert models.complete_text(settings, hello) == "through the worker"
    assert worker.status(env).calls == calls + 1


@pytest.mark.process
def test_a_socket_folder_that_is_a_link_or_not_private_is_never_used(
    worker_env: dict[str, str], vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in worker_env.items():
        monkeypatch.setenv(name, value)
    fake_openai.default.content = '{"selected": ["tea"]}'
    runtime = Path(worker_env["XDG_RUNTIME_DIR"])
    elsewhere = runtime.parent / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "aibuddy").symlink_to(elsewhere)  # e.g. raced into a shared /tmp
    with pytest.raises(unix_peer.PeerUnavailable, match="symbolic link"):
        worker_client.socket_path(dict(os.environ))
    with pytest.raises(NotAllowed, match="symbolic link"):  # `aibuddy worker status`: exit 5
        worker.status(dict(os.environ))
    memory = Session(Vault.open(vault.root), "demo").memory
    assert memory.recall("tea").method == "model"  # in-process, and no worker started there
    assert list(elsewhere.iterdir()) == []
    (runtime / "aibuddy").unlink()
    (runtime / "aibuddy").mkdir(mode=0o700)
    (runtime / "aibuddy").chmod(0o755)
    with pytest.raises(unix_peer.PeerUnavailable, match="open to other users"):
        worker_client.socket_path(dict(os.environ))
    if os.getuid() == 0:  # another owner can be made only as root
        (runtime / "aibuddy").chmod(0o700)
        os.chown(runtime / "aibuddy", 4321, 4321)
        with pytest.raises(unix_peer.PeerUnavailable, match="belongs to uid 4321"):
            worker_client.socket_path(dict(os.environ))
    assert memory.recall("tea").method == "model"
    assert not list((runtime / "aibuddy").iterdir())


@pytest.mark.process
def test_a_stopped_worker_costs_the_call_its_timeout_not_more(
    aibuddy_exe: list[str], warm_worker: tuple[FakeOpenAI, dict[str, str]], vault: Vault
) -> None:
    """The pytest process's warm worker, stopped with SIGSTOP for the call and let go after it
    (a worker of its own would cost litellm's import again)."""
    fake_openai, worker_settings = warm_worker
    Session(vault, "demo", environ={}).memory.save(
        "tea", type="user", description="Drinks green tea", body="tea"
    )
    env = in_vault(worker_settings, vault.root, AIBUDDY_MODEL_RECALL="openai/recall-test")
    found = worker.status(env)
    assert found.running and found.pid is not None
    fake_openai.default.content = '{"selected": ["tea"]}'
    os.kill(found.pid, signal.SIGSTOP)  # it still accepts connections (the kernel does), never answers
    try:
        quick = {**env, "AIBUDDY_TIMEOUT": "1"}  # AIBUDDY_* is not part of the worker's key
        result = run_aibuddy(aibuddy_exe, "memory", "recall", "tea", "--json", env=quick)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["method"] == "words+meaning"  # the call's own fallback
        assert b"timed out after 1s" in result.stderr
        # The wait through the worker was the whole timeout: no second, in-process attempt after it.
        assert fake_openai.requests == []
    finally:
        os.kill(found.pid, signal.SIGCONT)
    # Running again, the worker takes the request its caller gave up on: waited for here, so that
    # it reaches the server within this test, not in a later one of this process.
    deadline = time.monotonic() + 120  # generous: an event, not a timing
    while len(fake_openai.requests) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_openai.requests) == 1 and worker.status(env).calls == found.calls + 1


# --- one worker for calls started at once; the socket folder's rules -----------------------------


def worker_pids(runtime: str) -> set[int]:
    """The `aibuddy worker serve` processes whose XDG_RUNTIME_DIR is runtime (this test's)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"worker\0serve" not in (entry / "cmdline").read_bytes():
                continue
            if f"XDG_RUNTIME_DIR={runtime}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


@pytest.mark.process
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads processes from /proc")
def test_the_first_model_calls_start_one_worker_however_many_at_once_that_serves_the_next(
    aibuddy_exe: list[str], worker_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    """Two model calls at once with no worker yet: each is answered (in its own process) and one
    worker, exactly one, is started for them; it serves the calls after them, on a socket only its
    user may open, and `worker stop` ends it. The first two are cold starts with a model timeout
    below litellm's cold import (seconds, more on a busy machine): the import has its own bound,
    the timeout starts after it, and the model's answer is used. (One test: each start costs
    litellm's import in every calling process and in the worker, seconds of CPU each.)"""
    fake_openai.default.content = '{"selected": ["tea"]}'
    # Idle for longer than two slow in-process calls on a loaded machine take: stopped at the end.
    worker_env = {**worker_env, "AIBUDDY_WORKER_IDLE": "600"}
    runtime = worker_env["XDG_RUNTIME_DIR"]
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # every worker process that ever runs for these settings, however briefly
        while not done.is_set():
            seen.update(worker_pids(runtime))
            # A scan reads every process's command line (a few ms of CPU); a worker, even one that
            # gives up at once, lives for its interpreter's start-up, far longer than this.
            time.sleep(0.025)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    command = [*aibuddy_exe, "memory", "recall", "tea", "--json"]
    pipe = subprocess.PIPE
    cold = {**worker_env, "AIBUDDY_TIMEOUT": "2"}
    calls = [subprocess.Popen(command, env=cold, stdout=pipe, stderr=pipe) for _ in range(2)]
    try:
        for call in calls:
            out, err = call.communicate(timeout=120)
            assert call.returncode == 0 and err == b"", err
            recalled = json.loads(out)
            assert recalled["method"] == "model" and [r["name"] for r in recalled["records"]] == ["tea"]
        assert len(fake_openai.requests) == 2  # each cold call reached the model itself
        wait_for_worker(worker_env)
        serving = worker.status(worker_env).pid
        deadline = time.monotonic() + 60  # a second worker, if any, gives up within a second or two
        while worker_pids(runtime) != {serving} and time.monotonic() < deadline:
            time.sleep(0.05)
        done.set()
        watcher.join(10)
        assert worker_pids(runtime) == {serving}  # exactly one remains for these settings
        assert seen == {serving}  # and no other was ever started
        served = worker.status(worker_env).calls  # the calls that started it ran in their processes
        for _ in range(3):
            assert recall(aibuddy_exe, worker_env)["method"] == "model"
        found = status(aibuddy_exe, worker_env)
        assert found["running"] and found["pid"] == serving and found["calls"] == served + 3
        assert (Path(found["socket"]).stat().st_mode & 0o777) == 0o600
        stopped = json.loads(run_aibuddy(aibuddy_exe, "worker", "stop", "--json", env=worker_env).stdout)
        assert stopped["running"] is False and not Path(stopped["socket"]).exists()
    finally:
        done.set()
        run_aibuddy(aibuddy_exe, "worker", "stop", "--json", env=worker_env)
        for pid in worker_pids(runtime):  # only the workers this test's calls started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.process
def test_worker_commands_refuse_a_socket_folder_that_is_not_private(
    worker_env: dict[str, str]
) -> None:
    folder = Path(worker_env["XDG_RUNTIME_DIR"]) / "aibuddy"
    folder.mkdir(mode=0o700)
    folder.chmod(0o755)
    cases = [("open to other users (mode 755)", None)]
    if os.getuid() == 0:  # another owner can be made only as root
        cases.append(("belongs to uid 4321", 4321))
    for reason, owner in cases:
        if owner is not None:
            folder.chmod(0o700)
            os.chown(folder, owner, owner)
        for command in ("status", "stop"):
            result = run_in_process("worker", command, env=worker_env)
            assert result.returncode == 5, result.stderr
            assert result.stderr.decode().startswith("error: ") and result.stderr.count(b"\n") == 1
            assert reason in result.stderr.decode() and b"Traceback" not in result.stderr
            shown = run_in_process("worker", command, "--json", env=worker_env)
            assert shown.returncode == 5 and json.loads(shown.stdout)["error"]["code"] == "not_allowed"


@pytest.mark.process
def test_a_relative_runtime_folder_is_ignored(
    aibuddy_exe: list[str], worker_env: dict[str, str], vault: Vault, runtime_dir: Path
) -> None:
    """XDG_RUNTIME_DIR=relative/dir is not a place (the XDG spec): the fallback under the temporary
    folder is used, never relative/dir/aibuddy/ in whatever folder the command runs in."""
    (vault.root / "relative/dir").mkdir(parents=True)
    temporary = runtime_dir.parent / "tmp"
    temporary.mkdir(mode=0o700)
    env = {**worker_env, "XDG_RUNTIME_DIR": "relative/dir", "TMPDIR": str(temporary)}
    # A real process: the temporary folder is read from TMPDIR once per process (tempfile caches it).
    found = run_aibuddy(aibuddy_exe, "worker", "status", "--json", env=env, cwd=vault.root)
    assert found.returncode == 0, found.stderr
    socket_at = Path(json.loads(found.stdout)["socket"])
    assert socket_at.parent == temporary / f"aibuddy-{os.getuid()}"
    assert not (vault.root / "relative/dir/aibuddy").exists()
