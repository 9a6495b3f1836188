"""The consolidation log, `.aibuddy/logs/consolidation.jsonl`: one redacted line per pass with
every decision. A record, never a reason for a pass to fail."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...clock import utc_now
from ...errors import AibuddyError
from ...memory.extraction import Decision
from ...redaction import redacted
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
    try:
        tasks.append_log(LOG, json.dumps(redacted(entry), ensure_ascii=False) + "\n")
    except (AibuddyError, OSError, ValueError):  # ValueError: text that cannot be encoded
        pass
