"""Waiting for a lock without polling: the vault's locks and the derived indexes' write lock.

A lock of the vault is a file lock (flock) shared by every process. Threads of one process (an
HTTP server runs each call on a worker thread) first queue for it in memory, in the order they
came (ProcessLock), so only one of them at a time asks the file system; that one waits for another
process in a blocking flock (flock_until), woken by the kernel as soon as the lock is free. Nobody
sleeps and retries: a writer gets the lock the moment the previous one lets it go.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class ProcessLock:
    """A lock for the threads of this process, handed to its waiters first come, first served
    (a plain threading.Lock lets a newcomer overtake a thread that has waited long); not
    reentrant."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held = False
        self._waiting: deque[threading.Lock] = deque()

    def acquire(self, timeout: float) -> bool:
        """Whether the lock was had within timeout seconds (≤ 0: only if it is free now)."""
        with self._guard:
            if not self._held:
                self._held = True
                return True
            if timeout <= 0:
                return False
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        if turn.acquire(timeout=timeout):
            return True  # release handed the lock over
        with self._guard:
            if turn in self._waiting:
                self._waiting.remove(turn)
                return False
        return True  # handed over between the timeout and the guard: it is ours, hold it

    def release(self) -> None:
        with self._guard:
            if self._waiting:
                self._waiting.popleft().release()  # held all along: the next one has it
            else:
                self._held = False


_process_locks: dict[str, ProcessLock] = {}
_registry = threading.Lock()


def process_lock(name: str) -> ProcessLock:
    """The one ProcessLock of this process for name (a lock file's path, a database's)."""
    with _registry:
        lock = _process_locks.get(name)
        if lock is None:
            lock = _process_locks[name] = ProcessLock()
        return lock


@contextmanager
def held(name: str, timeout: float) -> Iterator[bool]:
    """Hold this process's lock for name within the block; yields whether it was had within timeout
    (the block runs either way: the caller says "busy" when it was not)."""
    lock = process_lock(name)
    had = lock.acquire(timeout)
    try:
        yield had
    finally:
        if had:
            lock.release()


def flock_until(fd: int, deadline: float) -> bool:
    """Take an exclusive flock on fd, waiting until deadline (time.monotonic()) at most; whether
    it was had.

    The wait is a blocking flock on a thread of its own, on a duplicate of fd (the same open file,
    so the same lock): the kernel wakes it when the holder lets go. Given up at the deadline, the
    thread stays blocked until the lock comes, then lets it go at once and closes its duplicate;
    fd itself the caller may close as soon as this returns.
    """
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        pass
    if deadline <= time.monotonic():
        return False
    waiting = os.dup(fd)
    done = threading.Event()
    guard = threading.Lock()
    outcome = {"had": False, "abandoned": False}

    def wait() -> None:
        try:
            fcntl.flock(waiting, fcntl.LOCK_EX)
            had = True
        except OSError:
            had = False
        with guard:
            abandoned = outcome["abandoned"]
            outcome["had"] = had and not abandoned
            if abandoned and had:
                fcntl.flock(waiting, fcntl.LOCK_UN)
            os.close(waiting)
        done.set()

    threading.Thread(target=wait, name="aibuddy-flock-wait", daemon=True).start()
    try:
        done.wait(max(0.0, deadline - time.monotonic()))
    finally:
        with guard:
            if not done.is_set():
                outcome["abandoned"] = True
    return outcome["had"]


class WriteBehind:
    """One thread that runs the writes handed to it, in the order given, after their callers have
    answered: a long-lived server's bookkeeping (a recall's telemetry) that must not keep a reader
    waiting for a writer's lock. A job that raises is reported to `failed` and the next one runs.

    A job may linger: it starts no sooner than `linger` seconds after it was given (unless someone
    drains), so that what arrives meanwhile is written with it (under many agents, one write of a
    record's recall count for many recalls)."""

    def __init__(self, failed: Callable[[Exception], None]) -> None:
        self._failed = failed
        self._jobs: deque[tuple[float, Callable[[], None]]] = deque()  # (when it may start, job)
        self._ready = threading.Condition()
        self._busy = False
        self._draining = 0
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None], linger: float = 0.0) -> None:
        with self._ready:
            self._jobs.append((time.monotonic() + linger, job))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="aibuddy-write-behind", daemon=True)
                self._thread.start()
            self._ready.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until every job given so far has run, lingering or not (at most timeout seconds);
        whether they had."""
        deadline = time.monotonic() + timeout
        with self._ready:
            self._draining += 1
            self._ready.notify_all()
            try:
                while self._jobs or self._busy:
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._ready.wait(left):
                        return not (self._jobs or self._busy)
            finally:
                self._draining -= 1
        return True

    def _run(self) -> None:
        while True:
            with self._ready:
                while True:
                    if self._jobs:
                        wait = 0.0 if self._draining else self._jobs[0][0] - time.monotonic()
                        if wait <= 0:
                            break
                        self._ready.wait(wait)
                    else:
                        self._ready.wait()
                job = self._jobs.popleft()[1]
                self._busy = True
            try:
                job()
            except Exception as error:  # noqa: BLE001 - the writer outlives a failed job
                self._failed(error)
            finally:
                with self._ready:
                    self._busy = False
                    self._ready.notify_all()
