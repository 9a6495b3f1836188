"""Work that runs after the command that asked for it has answered: a detached aibuddy process.

Used where a command must not wait for a model (a document's summary after import). The child
has its own session, no terminal and no output; it reports through the vault's logs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path


def spawn_aibuddy(vault_root: Path, user: str, args: Sequence[str], environ: Mapping[str, str]) -> None:
    """Start `aibuddy --vault ROOT --user USER ARGS…` and return at once, without waiting."""
    import subprocess

    command = [sys.executable, "-m", "aibuddy_cli", "--vault", str(vault_root), "--user", user, *args]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **environ},
        start_new_session=True,  # a Ctrl-C at the terminal does not cut the summary short
        close_fds=True,
    )
    # In a long-lived process (an MCP server) the child is reaped when it ends, never a zombie; a
    # command that exits first leaves it to init.
    threading.Thread(target=child.wait, name="aibuddy-reaper", daemon=True).start()
