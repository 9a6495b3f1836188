"""The consolidation log, `.aibuddy/logs/consolidation.jsonl`: one redacted line per pass with
every decision. A record, never a reason for a pass to fail."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...clock import utc_now
from ...errors import AibuddyError
from ...memory.extraction import Decision
from ...redaction.detect import redacted
from ...text import printable
from ..service import TaskService

LOG = "consolidation"  # .aibuddy/logs/consolidation.jsonl


def log_pass(
    tasks: TaskService,
    task_id: str,
    chunk: Sequence[int],
    decisions: Sequence[Decision],
    *,
    applied: bool,
    categories: Sequence[str],
) -> None:
    """categories: the ones the pass asked for."""
    entry = {
        "at": utc_now(),
        "user": tasks.user,
        "task": task_id,
        "chunk": list(chunk),
        "categories": list(categories),
        "applied": applied,
        "decisions": [d.to_json() for d in decisions],
    }
    # Whole whatever it holds: a value no UTF-8 can hold (a lone surrogate) made printable, one
    # JSON cannot (never expected) as text, so one bad value never costs the pass its line.
    try:
        tasks.append_log(LOG, json.dumps(printable(redacted(entry)), ensure_ascii=False, default=str) + "\n")
    except (AibuddyError, OSError, ValueError):
        pass
