"""Three-way merging, shared by the merge driver's file kinds (app/merge_driver.py: records and
sidecars; tables/merge.py: schemas and rows; tasks/merge.py: task files). A merge of one file
returns Merged, or None when it cannot merge the file by its structure (git's text merge then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple


class Merged(NamedTuple):
    """A driver's result: the merged text, and whether it is free of conflict markers."""

    text: str
    clean: bool = True


CONFLICT = object()
ABSENT = object()  # a key or cell one version does not have


def three_way(base: Any, ours: Any, theirs: Any) -> Any:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return CONFLICT


def later(*values: str | None) -> str | None:
    present = [value for value in values if value]
    return max(present) if present else None


def read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def settle(merged: dict[str, Any], key: str, value: Any) -> bool:
    """Put a three-way result into merged (ABSENT: the key goes); False for a conflict."""
    if value is CONFLICT:
        return False
    if value is ABSENT:
        merged.pop(key, None)
    else:
        merged[key] = value
    return True
