"""Plain-text renderings of import results (standard library only, like `output`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import memory_output
from .rendering import Render

if TYPE_CHECKING:
    from ..memory.transfer import Imported


def imported_text(imported: Imported) -> str:
    if imported.dry_run:
        count = sum(d.outcome.startswith("would-") for d in imported.decisions)
        head = f"{imported.format} {imported.source}: would write {count} record(s)"
    else:
        head = f"{imported.format} {imported.source}: wrote {len(imported.written)} record(s)"
    return head + "\n" + memory_output.decisions_text(imported.decisions)


_IMPORTED = Render["Imported"](imported_text)

RENDERS: dict[str, Render[Any]] = {
    "import claude-code-memory": _IMPORTED,
    "import mem0": _IMPORTED,
    "import jsonl": _IMPORTED,
}
