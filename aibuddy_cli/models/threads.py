"""Where model calls run: a few long-lived worker threads, with stdout kept from them.

Imported only when a model is called (by aibuddy_cli.models.calls), so lexical paths never start a
thread. Fit for a long-lived process (an MCP server, a background worker): a timed-out call costs
no new thread, sys.stdout is never swapped around a call, and nothing here is set up twice.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

WORKERS = 4  # model calls that may run at once in one process
WAITING_CALLS = 32  # model calls that may wait for a free worker
THREAD_PREFIX = "aibuddy-model"

IMPORT_LOCK = threading.Lock()  # litellm is imported and configured once, by one thread

_in_worker = threading.local()  # `.silenced` is True on the model worker threads only


class StdoutGate:
    """sys.stdout as before for every thread except the model workers, whose writes are dropped.

    litellm prints some messages with print(), and stdout belongs to the caller's JSON. Swapping
    sys.stdout around each call would also swallow whatever other threads print meanwhile, so this
    proxy is installed once (again only after someone else replaced sys.stdout) and decides per
    thread.
    """

    def __init__(self, target: Any) -> None:
        self.target = target

    def write(self, text: str) -> Any:
        if getattr(_in_worker, "silenced", False):
            return len(text)
        return self.target.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not getattr(_in_worker, "silenced", False):
            self.target.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def silence_this_thread() -> None:
    """What the calling thread prints is dropped (litellm's import, on its own thread)."""
    _in_worker.silenced = True


def gate_stdout() -> None:
    """Put the gate in front of the current sys.stdout, unless it is already there."""
    current = sys.stdout
    if current is not None and not isinstance(current, StdoutGate):
        sys.stdout = StdoutGate(current)


class Job:
    def __init__(self, work: Callable[[], Any]) -> None:
        self.work = work
        self.done = threading.Event()
        self.abandoned = False  # the caller stopped waiting: not started if still queued, result dropped
        self.result: Any = None
        self.error: BaseException | None = None


class Workers:
    """At most `size` daemon threads running model calls, fed by a bounded queue.

    A caller waits at most its timeout, queueing included. A call it gave up on is skipped if it
    has not started and its result is dropped if it has. The threads are daemons, so a provider
    client that hangs never keeps the process alive at exit, and at most `size` of them can hang.
    """

    def __init__(self, size: int = WORKERS, waiting: int = WAITING_CALLS) -> None:
        self.size = size
        self.jobs: queue.Queue[Job] = queue.Queue(maxsize=waiting)
        self.threads: list[threading.Thread] = []
        self.outstanding = 0  # calls queued or running
        self.lock = threading.Lock()

    def run(self, work: Callable[[], Any], timeout: float) -> Job:
        """The job, finished, or marked abandoned when `timeout` seconds passed first."""
        deadline = time.monotonic() + timeout
        job = Job(work)
        with self.lock:
            self.outstanding += 1
            if self.outstanding > len(self.threads) and len(self.threads) < self.size:
                name = f"{THREAD_PREFIX}-{len(self.threads) + 1}"
                thread = threading.Thread(target=self._serve, name=name, daemon=True)
                self.threads.append(thread)
                thread.start()
        try:
            self.jobs.put(job, timeout=timeout)
        except queue.Full:
            with self.lock:
                self.outstanding -= 1
            job.abandoned = True
            return job
        if not job.done.wait(max(0.0, deadline - time.monotonic())):
            job.abandoned = True
        return job

    def _serve(self) -> None:
        _in_worker.silenced = True
        while True:
            job = self.jobs.get()
            try:
                if not job.abandoned:
                    job.result = job.work()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises ModelError
                job.error = exc
            finally:
                job.done.set()
                job.work = _done  # a dropped result's closure (messages, settings) is not kept
                with self.lock:
                    self.outstanding -= 1


def _done() -> None:
    return None


_workers = Workers()


def run(work: Callable[[], Any], timeout: float) -> Job:
    """Run `work` on a model worker; see Workers.run."""
    return _workers.run(work, timeout)


def _after_fork_in_child() -> None:
    global _workers
    _workers = Workers()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_after_fork_in_child)
