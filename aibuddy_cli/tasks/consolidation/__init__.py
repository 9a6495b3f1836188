"""Consolidation: every `[consolidation] every` messages of a task, one pass over that chunk distils
it into durable state: user memory records, the personal `contacts` table, a rolling summary of
the task, rows of knowledge tables, the task's plan and status (each category switched by
`[consolidation]` and `AIBUDDY_CONSOLIDATE_<CATEGORY>=0|1`). Model role `consolidate`.

Safe where a prompt alone is not:
- Evidence: every proposed item names the message numbers it rests on; an item with none, or
  with numbers outside the chunk, is dropped and logged, and so is one whose cited messages do
  not carry its content words (`stated`: a lexical check, see README "Consolidation").
- Shield: what the chunk's own tool calls already did (`memory_save`, `add_rows`, …) is handled
  and not done again; a record the chunk deleted is not re-created.
- Watermark: `tasks/<user>/<T>/consolidation.json` holds the last message consolidated, the
  chunk's digest and the rolling summary, written atomically after the pass's writes. A pass that
  fails (model error, timeout, bad reply) leaves it where it was: the chunk is tried again on the
  next trigger. One pass per task at a time (a lock); a chunk already consolidated is skipped.
  Each category has its own position: a pass for some categories only (`--only`) moves theirs
  (`ahead`), and a later pass gives every category only the messages it has not seen.
- Every pass and decision goes to `.aibuddy/logs/consolidation.jsonl`.

The background pass is a detached `aibuddy task consolidate T --background` started by
`task add-message` when a chunk is complete (see `Consolidator.after_message`): add-message never
waits for it and never fails because of it.

One job per module:
- `consolidator`: the run over a task's pending chunks, the pass over one, the trigger;
- `prompt`: the request; `reply`: the reply's typed items; `evidence`: what cited messages state;
- `shield`: what the chunk's tool calls did; `handlers`: one per category;
- `watermark`, `log`: what a pass keeps; `process`: the lock, the pid file, cancel, the
  background start; `results`: what the commands answer.
"""

from .consolidator import Complete, Consolidator, categories, model_complete, only_categories
from .results import Cancelled, Consolidation, Pass, Status, TaskShown
from .watermark import consolidated, watermark

__all__ = [
    "Cancelled",
    "Complete",
    "Consolidation",
    "Consolidator",
    "Pass",
    "Status",
    "TaskShown",
    "categories",
    "consolidated",
    "model_complete",
    "only_categories",
    "watermark",
]
