"""The import operations: memories another tool kept, into the current user's memory through
extraction's reconcile path (memory/transfer.py). A person's commands only: no model is offered
them (a model never names files to read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from ..inputs import Transcript, read_transcript_file
from .registry import Arg, Effect, Opt, operation

if TYPE_CHECKING:
    from ..memory.service import MemoryService
    from ..memory.transfer import Imported

DryRun = Annotated[bool, Opt("--dry-run", help="List the decisions; write nothing.")]


@operation("import", "claude-code-memory", uses="memory", effect=Effect.WRITE, model=False)
def claude_code_memory(
    memory: MemoryService,
    folder: Annotated[str, Arg("Claude Code's auto-memory folder (~/.claude/projects/<project>/memory).")],
    dry_run: DryRun = False,
) -> Imported:
    """Import Claude Code's auto memory: one record per topic file, with its type (provenance
    auto; equivalent content is a no-op, a person's record is never overwritten)."""
    from pathlib import Path

    from ..memory.transfer import Importer

    return Importer(memory).claude_code(Path(folder).expanduser(), dry_run)


@operation("import", "mem0", uses="memory", effect=Effect.WRITE, model=False)
def mem0(
    memory: MemoryService,
    file: Annotated[str, Arg("mem0's exported memories (JSON).")],
    dry_run: DryRun = False,
) -> Imported:
    """Import mem0's exported memories, each as a user record (provenance auto, reconciled)."""
    from pathlib import Path

    from ..memory.transfer import Importer

    return Importer(memory).mem0(Path(file).expanduser(), dry_run)


@operation("import", "jsonl", uses="memory", effect=Effect.WRITE, model=False)
def jsonl(
    memory: MemoryService,
    file: Annotated[
        Transcript,
        Arg(
            "JSONL: {name, description, type, body} per line, or `memory export`'s lines ('-': stdin).",
            cli_type=str,
            parse=read_transcript_file,
        ),
    ],
    dry_run: DryRun = False,
) -> Imported:
    """Import records from JSONL. Lines of `memory export` are put back byte for byte (provenance
    and telemetry included) where no record of that name exists; others are reconciled."""
    from ..memory.transfer import Importer

    return Importer(memory).jsonl(file.source, file.lines, dry_run)
