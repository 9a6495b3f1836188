"""Which process runs a task's pass: one at a time (the task's consolidation lock), recorded while
it holds the lock (a pid file, for `--cancel`), started in the background by `task add-message`."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from ...errors import AibuddyError, Busy, NotFound
from ...settings import Settings
from ..service import TaskService
from .results import Cancelled

WORK = "consolidate"  # the lock is .aibuddy/locks/consolidate-<user>-<task>.lock


class PassControl:
    def __init__(self, tasks: TaskService) -> None:
        self.tasks = tasks

    def lock(self, task_id: str) -> AbstractContextManager[None]:
        """The task's consolidation lock, at once or Busy."""
        return self.tasks.work_lock(task_id, WORK, timeout=0)

    def running(self, task_id: str) -> bool:
        try:
            with self.lock(task_id):
                return False
        except Busy:
            return True
        except (AibuddyError, OSError):  # no lock can be made here (a read-only vault): no pass either
            return False

    @contextmanager
    def recorded(self, task_id: str) -> Iterator[None]:
        """This process recorded as the pass holding the lock (for cancel) while the block runs,
        inside the lock: the file is removed before the lock is released, so a pid file names
        the lock's holder or a pass that died (whose pid, if reused, has another start time).
        Never fails the pass."""
        from ...background import identity

        try:
            self.tasks.record_lock_holder(task_id, WORK, identity())
        except (AibuddyError, OSError):
            pass
        try:
            yield
        finally:
            self._forget(task_id)

    def _forget(self, task_id: str) -> None:
        try:
            self.tasks.forget_lock_holder(task_id, WORK)
        except (AibuddyError, OSError):
            pass

    def cancel(self, task_id: str) -> Cancelled:
        """Stop the task's running pass, background or foreground (SIGTERM); its chunk is tried
        again later. Only a process proven to be that pass is signalled: the one the pid file
        names, with the same start time, holding the task's consolidation lock (where the system
        can tell). A pid file no pass holds any more is removed."""
        from ...background import signal_process

        self.tasks.get(task_id)
        if not self.running(task_id):
            try:
                with self.lock(task_id):
                    self._forget(task_id)  # a leftover of a pass that was killed
            except (AibuddyError, OSError):
                pass  # a pass has just begun (it writes its own), or no lock can be made here
            return Cancelled(task_id, False, "no pass of this task is running")
        try:
            recorded = self.tasks.lock_holder(task_id, WORK)
        except (NotFound, ValueError, AibuddyError, OSError):
            return Cancelled(task_id, False, "the running pass left no usable pid file")
        why = signal_process(recorded, signal.SIGTERM, lock_file=self.tasks.work_lock_file(task_id, WORK))
        if why is not None:
            return Cancelled(task_id, False, f"not signalled: {why}")
        return Cancelled(task_id, True)


def spawn_pass(tasks: TaskService, settings: Settings, task_id: str) -> None:
    """A detached `aibuddy task consolidate T --background`: the caller never waits for it."""
    from ...background import spawn_aibuddy

    spawn_aibuddy(tasks.vault.root, tasks.user, ["task", "consolidate", task_id, "--background"], settings)
