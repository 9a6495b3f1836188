"""Work that runs after the command that asked for it has answered: a detached aibuddy process;
and telling such a process from any other that has (or later takes) its pid.

Used where a command must not wait for a model (a document's summary after import). The child
has its own session, no terminal and no output; it reports through the vault's logs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .settings import Settings


def spawn_aibuddy(vault_root: Path, user: str, args: Sequence[str], settings: Settings) -> None:
    """Start `aibuddy --vault ROOT --user USER ARGS…` in the settings' environment (`for_child`)
    and return at once, without waiting."""
    import subprocess

    command = [sys.executable, "-m", "aibuddy_cli", "--vault", str(vault_root), "--user", user, *args]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=settings.for_child(),
        start_new_session=True,  # a Ctrl-C at the terminal does not cut the summary short
        close_fds=True,
    )
    # In a long-lived process (an MCP server) the child is reaped when it ends, never a zombie; a
    # command that exits first leaves it to init.
    threading.Thread(target=child.wait, name="aibuddy-reaper", daemon=True).start()


# --- which process is which (a pid alone names whatever process has that number now) ------------


def process_start(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/<pid>/stat, in clock ticks since boot): with
    the pid, it names one process for good, since a reused pid starts later. None when there is
    no such process or the system has no /proc (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = data[data.rfind(")") + 2 :].split()  # after "pid (comm) ": comm may hold anything
    return fields[19] if len(fields) > 19 else None


def identity(pid: int | None = None) -> dict[str, object]:
    """What names this process (or pid) for good: pid, start time and host."""
    import socket

    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start": process_start(pid), "host": socket.gethostname()}


def flock_holders(path: Path) -> set[int] | None:
    """The pids holding a flock on the file at path, from /proc/locks; None when that cannot be
    told (no /proc/locks, or it lists no lock of this file: another kind of file system)."""
    try:
        found = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    device = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    holders: set[int] = set()
    seen = False
    for line in lines:
        parts = line.split()
        if "->" in parts or len(parts) < 6 or parts[1] != "FLOCK" or parts[5] != device:
            continue  # a waiter, another kind of lock or another file
        seen = True
        if parts[4].isdigit():
            holders.add(int(parts[4]))
    return holders if seen else None


def _lock_is_free(path: Path) -> bool:
    """Whether nobody holds the flock on path: taken and given back at once if so. Where /proc/locks
    cannot say who holds a lock, this still tells a pass that has ended from one that runs."""
    from .store.locks import flock_until

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # cannot tell: the other checks decide
    try:
        return flock_until(fd, 0.0)  # one try; a lock had here is given back by the close
    except OSError:
        return False
    finally:
        os.close(fd)


def signal_process(recorded: object, signum: int, *, lock_file: Path | None = None) -> str | None:
    """Send signum to the process `recorded` (an identity()) names, only if that very process is
    alive on this host (same pid, same start time) and, when lock_file is given and the system
    can tell, holds its flock. None when signalled, else why not."""
    import signal
    import socket

    if not isinstance(recorded, dict) or not isinstance(recorded.get("pid"), int) or recorded["pid"] <= 1:
        return "the pid file names no process"
    pid = recorded["pid"]
    if recorded.get("host") != socket.gethostname():
        return f"the pass runs on another host ({recorded.get('host')})"
    if not isinstance(recorded.get("start"), str):
        return "the pid file has no start time: the process cannot be told from another"
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)  # this process, whatever takes its pid later
        except ProcessLookupError:
            return f"process {pid} is gone"
        except OSError:
            pidfd = None
    try:
        start = process_start(pid)
        if start is None:
            return f"process {pid} is gone, or cannot be checked here"
        if start != recorded["start"]:
            return f"process {pid} is another process now (it started at another time)"
        if lock_file is not None:
            if _lock_is_free(lock_file):
                return "no pass holds the lock (it has ended)"
            holders = flock_holders(lock_file)
            if holders is not None and pid not in holders:
                return f"process {pid} does not hold the pass's lock"
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signum)
            else:
                os.kill(pid, signum)
        except ProcessLookupError:
            return f"process {pid} is gone"
        except PermissionError:
            return f"process {pid} may not be signalled by this user"
        return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
