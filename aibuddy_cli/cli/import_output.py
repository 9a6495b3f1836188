"""Plain-text renderings of import results (standard library only, like `output`)."""

from __future__ import annotations

from typing import Any

from . import memory_output
from .rendering import Render


def imported_text(imported: Any) -> str:
    if imported.dry_run:
        count = sum(d.outcome.startswith("would-") for d in imported.decisions)
        head = f"{imported.format} {imported.source}: would write {count} record(s)"
    else:
        head = f"{imported.format} {imported.source}: wrote {len(imported.written)} record(s)"
    return head + "\n" + memory_output.decisions_text(imported.decisions)


RENDERS: dict[str, Render[Any]] = {
    "import claude-code-memory": Render(imported_text),
    "import mem0": Render(imported_text),
    "import jsonl": Render(imported_text),
}
