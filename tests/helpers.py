"""What the tests share besides fixtures (those are conftest.py's): paths, running aibuddy in a
process or in this one, writing files, waiting for an event. Imported as `helpers` (pytest puts
tests/ on the path: pyproject's pythonpath)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

import aibuddy_cli
from aibuddy_cli.app.session import Session
from aibuddy_cli.knowledge.service import KnowledgeService
from aibuddy_cli.vault import Vault

REPO = Path(__file__).resolve().parent.parent


# The code these tests import (this checkout, or a copy under test); child processes run it too.
CODE = Path(aibuddy_cli.__file__).resolve().parent.parent


SAMPLE_VAULT = REPO / "sample_vault"


# Small documents written for these tests; they always travel with the repository.
FIXTURE_DOCS = Path(__file__).parent / "fixtures" / "docs"


STRINGS = FIXTURE_DOCS / "ch08-02-strings.md"  # Chinese, Rust-book-like: CJK anchors, `#` lines in code


BODY = FIXTURE_DOCS / "body.md"  # English, FastAPI-like: `{ #anchor }` headings, `/// note` blocks


SPEC = FIXTURE_DOCS / "spec.txt"  # CommonMark-spec-like: front matter closed by '...', `# foo` in fences


# The real documents beside the development checkout: an extra layer of checks where present.
CORPUS = REPO.parent / "shared" / "corpus"


needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="../shared/corpus is absent: it exists only beside the development checkout"
)


class WarmWorker:
    """One fake server and one model worker (`aibuddy worker serve`) warm for it, for the whole
    pytest process (one per xdist worker), started as soon as the collected tests show that one of
    them needs it.

    litellm's import costs seconds of CPU in each process that makes it. This pytest process makes
    it once, here (its in-process model tests need it anyway), and the worker is forked from it:
    the worker's own code (`worker.serve`) with its own environment, on this process's litellm.
    Tests take it through warm_worker, which waits for it to answer and resets the server."""

    def __init__(self) -> None:
        self.started: tuple[FakeOpenAI, dict[str, str], int, Path] | None = None

    def start(self) -> None:
        import signal
        import tempfile

        from aibuddy_cli.models import calls as models
        from aibuddy_cli.models import worker

        if self.started is not None:
            return
        top = Path(tempfile.mkdtemp(prefix="ab-"))  # short: a socket path has 108 bytes at most
        runtime, home = top / "run", top / "home"
        runtime.mkdir(mode=0o700)
        home.mkdir()
        models._litellm()  # before the server's thread starts: the fork copies only this thread
        server = FakeOpenAI()
        settings = {
            **child_env(home / "no-vault", HOME=str(home)),
            "AIBUDDY_WORKER": "1",
            "AIBUDDY_WORKER_IDLE": "3600",  # stopped below
            "XDG_RUNTIME_DIR": str(runtime),
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_API_BASE": server.url,
        }
        for name in list(settings):  # as isolated_env leaves the tests' own environment
            if name.startswith(("LITELLM_", "ANTHROPIC_")) or name == "XDG_DATA_HOME":
                del settings[name]
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker, which never returns into pytest
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                # Nothing of pytest's stays open here: not the server's socket, and not the pipes to
                # xdist's controller, which waits for their end when this process's parent dies.
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                for number in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(number, signal.SIG_DFL)
                os.environ.clear()
                os.environ.update(settings)
                worker.serve(settings)
            finally:
                os._exit(0)
        server.start()
        self.started = server, settings, pid, top

    def ready(self) -> tuple[FakeOpenAI, dict[str, str]]:
        from aibuddy_cli.models import worker

        self.start()
        assert self.started is not None
        server, settings, pid, _ = self.started
        deadline = time.monotonic() + 300  # a busy machine: an event, not a timing
        while not worker.status(settings).running:
            assert os.waitpid(pid, os.WNOHANG) == (0, 0), "the worker ended"
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)
        return server, settings

    def stop(self) -> None:
        import shutil
        import signal

        if self.started is None:
            return
        server, _, pid, top = self.started
        self.started = None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        server.stop()
        shutil.rmtree(top, ignore_errors=True)


def in_vault(settings: dict[str, str], vault_root: Path, user: str = "demo", **extra: str) -> dict[str, str]:
    """The warm worker's settings (warm_worker) for a child working in vault_root as user, with
    extra AIBUDDY_ settings (a model, a timeout), which the worker's key leaves out."""
    return {**settings, "AIBUDDY_VAULT": str(vault_root), "AIBUDDY_USER": user, **extra}


def run_aibuddy(
    exe: list[str],
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*exe, *args], env=env, cwd=cwd, input=input, capture_output=True, timeout=120)


@contextlib.contextmanager
def environment(env: dict[str, str] | None, cwd: Path | None = None) -> Iterator[None]:
    """os.environ is env (the whole of it) and the working folder cwd until the block ends: what a
    child started with env and cwd would see, for code run in this process instead."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def wait_for(check: Callable[[], Any], seconds: float = 120.0) -> bool:
    """Whether check() came true within seconds, polled: a generous bound for an event (a slow
    machine is not a failure), never a timing."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def run_in_process(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`aibuddy args` run by this process through the console script's own entry point
    (aibuddy_cli.__main__.main: stream checks, the fast path, then Typer), with env as the whole
    environment, cwd as the working folder and input (else nothing) on stdin; its exit code and
    what it wrote, as run_aibuddy returns them. A child costs 100-300 ms of imports: tests of what
    a command does, not of the process, run it here."""
    from aibuddy_cli.__main__ import main

    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    try:
        with environment(env, cwd):
            sys.stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
            sys.stdout, sys.stderr = stdout, stderr
            try:
                code = main(list(args))
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            with contextlib.suppress(ValueError, OSError):
                stdout.flush()
                stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
    return subprocess.CompletedProcess(["aibuddy", *args], code, out.getvalue(), err.getvalue())


def child_env(vault_root: Path, user: str = "demo", **extra: str) -> dict[str, str]:
    """The environment of a child `aibuddy` process: this vault and user, none of the caller's
    AIBUDDY_/OPENAI_ settings, and PYTHONPATH to the code these tests import."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    clean["AIBUDDY_WORKER"] = "0"  # no model worker outlives a test: the worker's own tests turn it on
    clean["AIBUDDY_WATCH"] = "off"  # nor a watch process
    return {**clean, "AIBUDDY_VAULT": str(vault_root), "AIBUDDY_USER": user, **extra, "PYTHONPATH": str(CODE)}


def ok(result: Any) -> dict[str, Any]:
    """The JSON document of a CliRunner result that must have succeeded."""
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def strict_json(text: str) -> Any:
    """text parsed as JSON any reader takes (JavaScript's JSON.parse): NaN or Infinity fail."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON: {text[:200]!r}")

    return json.loads(text, parse_constant=refuse)


def write_file(folder: Path, name: str, content: str | bytes) -> Path:
    """folder/name holding content (str as UTF-8), folders made as needed."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def record_path(vault: Vault, name: str, user: str = "demo") -> Path:
    return vault.root / "memory" / user / f"{name}.md"


def write_record_file(vault: Vault, name: str, content: str | bytes, user: str = "demo") -> Path:
    """A record file written by hand, as a person or git would leave it."""
    return write_file(record_path(vault, name, user).parent, f"{name}.md", content)


def kb(vault: Vault, user: str) -> KnowledgeService:
    """A fresh knowledge service of user on vault, as a new process would open it."""
    return Session(Vault.open(vault.root), user, environ={}).knowledge


def published(service: KnowledgeService, *paths: Path, scope: str = "system") -> list[str]:
    """Import paths and publish them; their document references."""
    refs = [o.doc for o in service.import_paths([str(p) for p in paths], scope=scope)]
    service.publish(*refs)
    return refs


def on_a_terminal(argv: list[str], env: dict[str, str], *, stdout: bool = True) -> tuple[int, bytes, str]:
    """argv run with a pseudo-terminal on stderr, and on stdout too unless stdout=False (then a
    pipe): its exit code, what the pipe got (b"" without one) and what the terminal showed."""
    import pty
    import threading

    master, slave = pty.openpty()
    shown = bytearray()

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal's other end
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    try:
        out = slave if stdout else subprocess.PIPE
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
        os.close(slave)
        piped, _ = child.communicate(timeout=120)
        reader.join(timeout=120)
    finally:
        os.close(master)
    return child.returncode, piped or b"", shown.decode("utf-8", "replace")


def unwritable_logs(vault: Vault) -> None:
    """`.aibuddy/logs` as a file: the folder the journal goes in cannot be made (as on a full or
    read-only disk, which a test running as root cannot make of a folder)."""
    logs = vault.root / ".aibuddy/logs"
    for path in sorted(logs.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    logs.rmdir()
    logs.write_text("not a folder\n", encoding="utf-8")
