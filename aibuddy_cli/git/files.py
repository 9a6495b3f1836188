"""The lines aibuddy keeps in a vault's .gitattributes (and adds to its .gitignore): which files
git hands to the `aibuddy` merge driver (app/merge_driver.py), written by `aibuddy init` and `git setup`.

Imports nothing of the package: the vault's set-up writes these lines without importing the
merge driver, which imports the record, table and task formats it merges.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ATTRIBUTES = (
    "memory/**/*.md merge=aibuddy",
    "memory/**/.history/*.jsonl merge=union",  # previous versions of auto records: keep both sides'
    "tables/**/*.csv merge=aibuddy",
    "tables/**/*.schema.json merge=aibuddy",
    "knowledge/**/*.meta.json merge=aibuddy",
    "tasks/**/messages.jsonl merge=aibuddy",
    "tasks/**/task.json merge=aibuddy",
    "tasks/**/consolidation.json merge=aibuddy",
    "tasks/**/summary.json merge=aibuddy",
)


def add_lines(path: Path, lines: Iterable[str]) -> None:
    """Append the lines a file (.gitignore, .gitattributes) lacks; a person's lines are kept."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    missing = [line for line in lines if line not in existing.splitlines()]
    if missing:
        separator = "" if existing.endswith("\n") or not existing else "\n"
        path.write_text(existing + separator + "\n".join(missing) + "\n", encoding="utf-8")


def write_attributes(root: Path) -> None:
    """The vault's .gitattributes routes its merge-aware files to the driver (lines kept)."""
    add_lines(root / ".gitattributes", ATTRIBUTES)
