from __future__ import annotations

import contextlib
import gc
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import WarmWorker, child_env, ok
from typer.testing import CliRunner

from aibuddy_cli.app.session import Session
from aibuddy_cli.cli.app import app
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault, init_vault

# Bytecode is cached, as Python does by default, even where PYTHONDONTWRITEBYTECODE is set: these
# tests start hundreds of `aibuddy` processes, and without a cached .pyc each compiles every module
# it imports again (a tenth of a second of CPU a process); pytest rewrites every test module again
# in each of its processes too (seconds). The caches go to __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the child processes, which copy os.environ

# The secret catalogue's compiled rules (redaction.catalog): compiling them costs seconds, so every
# process of the run, and later runs, share one cache in the developer's cache folder instead of
# compiling again under each test's own HOME.
_RULE_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aibuddy-tests/kingfisher"
_RULE_CACHE.mkdir(mode=0o700, parents=True, exist_ok=True)
os.environ.setdefault("KF_RULE_CACHE_DIR", str(_RULE_CACHE))

# --- tests that start processes or servers -------------------------------------------------------
# `pytest -m "not process"` runs the others, in seconds. A test that starts a process or listens on
# a socket is marked `process`: by a fixture it uses (PROCESS_FIXTURES) or by its own mark. One that
# does either unmarked fails, saying so, so that the mark stays true.
PROCESS_FIXTURES = frozenset(
    {"fake_openai", "model_env", "warm_worker", "aibuddy_exe", "env", "postgres_cluster", "postgres_url",
     "runtime_dir"}
)  # fmt: skip


class UnmarkedProcess(AssertionError):
    pass


# inotify_simple's first INotify asks `ldconfig -p` where libc is (ctypes.util.find_library): made
# once, here, so that no test's first FolderWatch starts that process.
with contextlib.suppress(ImportError, OSError):
    from inotify_simple import INotify  # type: ignore[import-untyped]

    INotify().close()


@contextlib.contextmanager
def _refused_unless_marked(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("process"):
        yield
        return

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise UnmarkedProcess(f"{item.nodeid} {what}: mark it @pytest.mark.process")

        return refused

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refuse("starts a process"))
        patch.setattr(socket.socket, "listen", refuse("starts a server"))
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    with _refused_unless_marked(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    with _refused_unless_marked(item):
        return (yield)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's home, vault, model settings or provider keys."""
    for name in list(os.environ):
        if name.startswith(("AIBUDDY_", "OPENAI_", "LITELLM_", "ANTHROPIC_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIBUDDY_WORKER", "0")  # children started without child_env too
    monkeypatch.setenv("AIBUDDY_WATCH", "off")  # no watch process either: its own tests turn it on
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)  # a team vault's personal vaults go under HOME
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return init_vault(tmp_path / "vault", "demo")


@pytest.fixture
def memory(vault: Vault) -> MemoryService:
    return Session(vault, "demo", environ={}).memory


@pytest.fixture
def cli(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """Invoke the Typer app in-process against the test vault; stderr is kept apart."""
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None) -> Any:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def model_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every model role pointed at the fake server; provider settings come from litellm's own
    variables, as a user would set them."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    return {"AIBUDDY_MODEL": "openai/test-model", "AIBUDDY_TIMEOUT": "30"}


WARM_WORKER = WarmWorker()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests that use a fixture of PROCESS_FIXTURES `process`, and runs the `process`
    tests first.

    The process tests are the slow ones (a second or ten: processes, servers, real timers), the
    others take milliseconds. Under pytest-xdist's worksteal the last tests of a worker's queue
    cannot be stolen (it keeps two), so a slow one there kept the other worker idle for its whole
    length (10 s at the end of a run); with the quick ones last, a run ends on tests of a few
    milliseconds on both workers. The sort is stable: each group keeps the collection's order."""
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.process)
    items.sort(key=lambda item: item.get_closest_marker("process") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    if any("warm_worker" in getattr(item, "fixturenames", ()) for item in session.items):
        WARM_WORKER.start()


def pytest_sessionfinish() -> None:
    WARM_WORKER.stop()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure() -> None:
    """The last of a pytest process: what its heap holds then (litellm's modules and types among
    them) is frozen out of the garbage collector, so the interpreter's exit does not walk it all
    again (1.3 s a process with litellm imported; xdist waits for its workers to exit)."""
    gc.freeze()


@pytest.fixture
def warm_worker() -> tuple[FakeOpenAI, dict[str, str]]:
    """The process's fake server (reset: nothing queued or received) and the environment of its
    warm model worker, for real processes whose model calls are not their subject: a child given
    that environment (plus its AIBUDDY_VAULT, AIBUDDY_USER and other AIBUDDY_ settings, which the
    worker's key leaves out) asks the worker instead of importing litellm itself. Read the
    worker's call count as a difference: it serves the whole process."""
    server, settings = WARM_WORKER.ready()
    server.reset()
    return server, dict(settings)


@pytest.fixture(scope="session")
def aibuddy_exe() -> list[str]:
    """The installed console script when present (as users run it), else the module. Made once a
    pytest process, so that a module's fixture (a server its tests share) can start it too."""
    script = Path(sys.executable).parent / "aibuddy"
    return [str(script)] if script.exists() else [sys.executable, "-m", "aibuddy_cli"]


@pytest.fixture
def env(vault: Vault) -> dict[str, str]:
    """child_env for the test vault as user demo."""
    return child_env(vault.root)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Any]:
    """A throw-away PostgreSQL server for this pytest process (tests/postgres_server.py)."""
    from postgres_server import Cluster

    cluster = Cluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Any) -> str:
    """The URL of a new, empty database on the throw-away server."""
    return str(postgres_cluster.new_database())


@pytest.fixture
def stocked(cli: Any, vault: Vault) -> Vault:
    """The vault with a table of three vendors (the table loops' tests; a file may stock its own)."""
    ok(cli("table", "create", "vendors", "-d", "Suppliers we buy from", "--json"))
    rows = [
        {"name": "Acme", "city": "Berlin", "rating": 4},
        {"name": "Globex", "city": "Paris", "rating": 2},
        {"name": "Initech", "city": "Berlin", "rating": 5},
    ]
    ok(cli("table", "add", "vendors", *[a for r in rows for a in ("--row", json.dumps(r))], "--json"))
    return vault


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A short private folder for sockets (the model worker's, the watch process's): a socket
    path may have 108 bytes at most, and a test's tmp_path (under pytest-xdist, say) can be
    longer than that."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="ab-"))
    runtime = top / "run"
    runtime.mkdir(mode=0o700)
    yield runtime
    shutil.rmtree(top, ignore_errors=True)
