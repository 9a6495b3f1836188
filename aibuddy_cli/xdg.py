"""The XDG Base Directory variables (XDG_RUNTIME_DIR, XDG_DATA_HOME, XDG_CACHE_HOME), read by one
rule: a value that is not an absolute path is ignored, as the specification says, and the caller
uses its fallback (a relative value would put the folder wherever the command happens to run,
inside a vault say)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def base_dir(environ: Mapping[str, str], variable: str) -> Path | None:
    """The folder variable names, or None when it is unset, empty or relative."""
    value = environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else None
