"""The memory operations: a user's long-term memory records (see registry.py for the form)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from .registry import Arg, Confirm, Effect, Opt, operation
from .shared import TranscriptFile

if TYPE_CHECKING:
    from ..app.session import Session
    from ..memory.extraction import ExtractionResult
    from ..memory.pending import Accepted, PendingList, Rejected
    from ..memory.records import MemoryRecord, RecordJson
    from ..memory.review import Review
    from ..memory.service import (
        Cleared,
        Manifest,
        MemoryService,
        RecallResult,
        RecordDeleted,
        RecordList,
        RecordWrite,
        Reverted,
    )
    from ..memory.transfer import Exported
    from ..memory.versions import RecordVersions

    # Declared here, for checking only, so that start-up imports no record module; schemas.py
    # reads a module's `if TYPE_CHECKING:` names when it derives a result's schema.
    class RecordShownJson(RecordJson):
        history: list[dict[str, Any]]  # the lines of the record's .history file, as they are

TYPE_HELP = "One of: user, feedback, project, reference."
NAME_HELP = "Record name (file stem): lowercase letters, digits, - and _."
BODY_FILE_HELP = "Read the body from a file ('-' for stdin)."
EXPIRES_HELP = (
    "From this date on (YYYY-MM-DD, UTC; or 30d, 2w from today) the record is out of recall; "
    "it is kept, and `memory list --expired` shows it."
)
# The largest transcript `memory extract` reads (the window needs only its last turns).


def read_body(path: str) -> str:
    """--body-file: a path, or '-' for standard input (read only when asked, so a command in a
    `while read` loop never swallows its input)."""
    from ..memory.records import read_body_file

    return read_body_file(path, sys.stdin.buffer)


@operation(
    "memory",
    "save",
    uses="memory",
    effect=Effect.WRITE,
    tools={"mcp": "memory_save"},
    tool_help="Save a new long-term memory record for the user (one fact per record). type: "
    "user, feedback, project or reference. name: lowercase-file-stem. Fails if the name exists. "
    "expires (optional): a date YYYY-MM-DD (or 30d) from which a fact that holds only until then "
    "is no longer recalled.",
)
def save(
    memory: MemoryService,
    name: Annotated[str, Arg(NAME_HELP)],
    type: Annotated[str, Opt("--type", "-t", help=TYPE_HELP)],
    description: Annotated[str, Opt("--description", "-d", help="One line: what recall sees.")],
    body: Annotated[
        str,
        Opt(
            "--body",
            "-b",
            help="The body text (Markdown).",
            file=("--body-file", "-f"),
            file_help=BODY_FILE_HELP,
            file_parse=read_body,
        ),
    ] = "",
    expires: Annotated[str | None, Opt("--expires", help=EXPIRES_HELP, metavar="DATE|30d")] = None,
) -> RecordWrite:
    """Create a record (provenance manual). Without --body or --body-file the body is empty;
    standard input is read only with --body-file -.

    With --expires the record leaves recall on that date (the date is the first day it no longer
    holds) and is kept until you delete it."""
    from ..memory.service import RecordWrite
    from ..vault import memory_key

    record = memory.save(name, type=type, description=description, body=body, expires=expires)
    return RecordWrite(memory_key(memory.user, record.name), True, record)


@operation(
    "memory",
    "update",
    uses="memory",
    effect=Effect.WRITE,
    idempotent=True,
    tools={"mcp": "memory_update"},
    tool_help="Change a memory record's type, one-line description, body or expiry date (expires: "
    "YYYY-MM-DD, 30d, or never to keep it for good); what is left out stays.",
)
def update(
    memory: MemoryService,
    name: Annotated[str, Arg("The record to change.")],
    type: Annotated[str | None, Opt("--type", "-t", help=TYPE_HELP)] = None,
    description: Annotated[str | None, Opt("--description", "-d", help="New one-line description.")] = None,
    body: Annotated[
        str | None,
        Opt(
            "--body",
            "-b",
            help="New body text.",
            file=("--body-file", "-f"),
            file_help="Read the new body from a file ('-' for stdin).",
            file_parse=read_body,
        ),
    ] = None,
    expires: Annotated[
        str | None,
        Opt("--expires", help="New expiry date (YYYY-MM-DD, 30d, 2w), or never.", metavar="DATE|30d|never"),
    ] = None,
) -> RecordWrite:
    """Change a record; name, provenance, created and recall telemetry are kept."""
    from ..memory.service import RecordWrite
    from ..vault import memory_key

    result = memory.update(name, type=type, description=description, body=body, expires=expires)
    return RecordWrite(memory_key(memory.user, name), result.changed, result.record)


@operation(
    "memory",
    "delete",
    uses="memory",
    effect=Effect.DESTRUCTIVE,
    tools={"mcp": "memory_delete"},
    tool_help="Delete one memory record of the user.",
)
def delete(memory: MemoryService, name: Annotated[str, Arg("The record to delete.")]) -> RecordDeleted:
    """Delete one record."""
    from ..memory.service import RecordDeleted
    from ..vault import memory_key

    memory.delete(name)
    return RecordDeleted(memory_key(memory.user, name))


class RecordShown(NamedTuple):
    """`memory show`: the record, and what automatic memory replaced, newest first."""

    record: MemoryRecord
    history: list[dict[str, Any]]

    def to_json(self) -> RecordShownJson:
        return {**self.record.to_json(), "history": self.history}


@operation(
    "memory",
    "show",
    uses="memory",
    effect=Effect.READ,
    idempotent=True,
    tools={"mcp": "memory_show"},
    tool_help="One record with its body and telemetry; `history`: what automatic memory replaced in "
    "it, newest first (reading a record does not count as a recall).",
)
def show(memory: MemoryService, name: Annotated[str, Arg("The record to show.")]) -> RecordShown:
    """Show one record with its body and telemetry (does not count as a recall); --json adds
    `history`, what automatic memory replaced, newest first.

    A record with unresolved git conflict markers is shown as its raw text (with --json: the
    text, the file and each conflict's two sides) and exits 6."""
    record = memory.show(name)
    return RecordShown(record, memory.history(name))


@operation(
    "memory",
    "history",
    uses="memory",
    effect=Effect.READ,
    idempotent=True,
    tools={"mcp": "memory_history"},
)
def history(memory: MemoryService, name: Annotated[str, Arg("The record.")]) -> RecordVersions:
    """A record's versions, newest first: its commits when the vault is a git repository (each
    with what the record said then), and what automatic memory replaced."""
    from ..memory.versions import record_versions

    return record_versions(memory, name)


@operation("memory", "list", uses="memory", effect=Effect.READ, idempotent=True, tools={"mcp": "memory_list"})
def list_(
    memory: MemoryService,
    expired: Annotated[
        bool, Opt("--expired", help="List only the expired records (out of recall, kept until deleted).")
    ] = False,
    limit: Annotated[
        int | None,
        Opt("--limit", "-n", help="Only the N most recently written or recalled, newest first.", minimum=1),
    ] = None,
    every: Annotated[
        bool, Opt("--all", help="Every record on a terminal too (it shows the newest 50).", model=False)
    ] = False,
    *,
    page: int | None = None,  # a terminal's page (the Render's `terminal`): the newest 50
) -> RecordList:
    """List the current user's records in recall (malformed ones are reported on stderr and
    skipped, and so is how many expired ones are left out).

    On a terminal, the newest 50 and how many more there are (--all: every one); in a pipe and
    with --json, every record by name, unless --limit is given. With --expired: the expired
    records only, the date column being their expiry date."""
    newest = limit if limit is not None else None if every else page
    return memory.list_records(expired=expired, newest=newest)


@operation(
    "memory",
    "manifest",
    uses="memory",
    effect=Effect.READ,
    idempotent=True,
    tools={"mcp": "memory_manifest"},
)
def manifest(
    memory: MemoryService,
    query: Annotated[
        str | None, Opt("--query", "-q", help="Also reserve lines for this query's best matches.")
    ] = None,
) -> Manifest:
    """The recall window: at most 200 lines of type, file, modified date and description."""
    return memory.manifest(query)


@operation(
    "memory",
    "recall",
    uses="memory",
    effect=Effect.READ,
    fast=True,  # telemetry only
    tools={"mcp": "memory_recall"},
    tool_help="The user's memory records relevant to query (at most 5 bodies): call it before "
    "work that may depend on the user's preferences, feedback or project background.",
)
def recall(
    memory: MemoryService,
    query: Annotated[str, Arg("What the assistant is about to do or was asked.")],
    limit: Annotated[int | None, Opt("--limit", "-n", help="Bodies to read (at most 5).", minimum=1)] = None,
) -> RecallResult:
    """Select the relevant records (model, else lexical) and read at most 5 bodies."""
    return memory.recall(query, limit)


@operation("memory", "revert", uses="memory", effect=Effect.WRITE, model=False)
def revert(
    memory: MemoryService,
    name: Annotated[str, Arg("The record to put back.")],
    to: Annotated[
        int, Opt("--to", help="The version to put back, as `memory history` numbers them.", minimum=1)
    ] = 1,
) -> Reverted:
    """Put back an earlier version of a record that automatic memory changed (by default the one
    just before the current). A person's act: the record becomes manual, so extraction and
    consolidation leave it alone from then on; the version it replaces joins the history, so a
    revert can be reverted too. Never offered to a model."""
    return memory.revert(name, to)


# --- changes that wait for a person ([extraction] review = true; memory/pending.py) ---------------


@operation("memory", "pending", uses="memory", effect=Effect.READ, idempotent=True, model=False)
def pending(memory: MemoryService) -> PendingList:
    """The changes automatic memory proposes and a person has not yet accepted or rejected
    (with `[extraction] review = true`), oldest first: each new record or update with its id."""
    from ..memory.pending import Pending, PendingList

    return PendingList(memory.user, Pending(memory).proposals())


@operation("memory", "accept", uses="", effect=Effect.WRITE, model=False)
def accept(
    session: Session,
    id: Annotated[str, Arg("The proposal's id (`aibuddy memory pending`).")],
    type: Annotated[str | None, Opt("--type", "-t", help="Accept it with this type instead.")] = None,
    description: Annotated[
        str | None, Opt("--description", "-d", help="Accept it with this description instead.")
    ] = None,
    body: Annotated[str | None, Opt("--body", "-b", help="Accept it with this body instead.")] = None,
) -> Accepted:
    """Apply a proposal: the record is created or updated as automatic memory would have (a
    contact: its row in your `contacts` table). Given your own type, description or body, it is
    yours instead: the record becomes manual. A change to a record or contact that changed since
    it was proposed is refused. Never offered to a model."""
    from ..memory.pending import Accepted, Pending

    pending = Pending(session.memory)
    proposal = pending.get(id)
    if proposal.action != "contact":
        return pending.accept(id, type=type, description=description, body=body)
    from ..errors import Conflict, UsageError
    from ..tasks.consolidation.handlers import Tables, contact_row, write_contact

    if (type, description, body) != (None, None, None):
        raise UsageError("a contact is accepted as proposed (or rejected); edit its row with `aibuddy table`")
    tables = Tables(session.tables.queries, session.tables.changes)
    row = contact_row(tables, proposal.name)
    now = None if row is None else {column: row.get(column) for column in proposal.values or {}}
    if now != proposal.base_values:
        raise Conflict(
            f"contact {proposal.name!r} changed since this was proposed: reject it, or edit the row yourself"
        )
    write_contact(tables, proposal.name, proposal.values or {})
    pending.drop(id)
    return Accepted(id, "contact", False, None, contact_row(tables, proposal.name))


@operation("memory", "reject", uses="memory", effect=Effect.DESTRUCTIVE, idempotent=True, model=False)
def reject(memory: MemoryService, id: Annotated[str, Arg("The proposal's id.")]) -> Rejected:
    """Drop a proposal; the record stays as it is. Never offered to a model."""
    from ..memory.pending import Pending

    return Pending(memory).reject(id)


def proposal_ids(values: list[str]) -> list[str]:
    """--apply ID, repeatable; ids may also be given together, separated by commas or spaces."""
    return [part for value in values for part in value.replace(",", " ").split()]


def _review_question(memory: MemoryService, arguments: Any) -> str | None:
    """None (no question: it only lists) unless proposals are to be applied."""
    from ..memory.review import UNUSED_DAYS, chosen

    ids = arguments.get("apply") or []
    if not ids:
        return None
    proposals = chosen(memory, ids, arguments.get("unused_days") or UNUSED_DAYS)
    listing = "".join(f"  {p.id}: {p.summary()}\n" for p in proposals)
    which = "this proposal" if len(proposals) == 1 else f"these {len(proposals)} proposals"
    return f"{listing}Apply {which}?"


@operation(
    "memory",
    "review",
    uses="memory",
    effect=Effect.DESTRUCTIVE,
    model=False,
    confirm=Confirm(_review_question, verb="apply review proposals", done="applied"),
)
def review(
    memory: MemoryService,
    unused_days: Annotated[
        int, Opt("--unused-days", help="Propose archiving records unused this many days.", minimum=1)
    ] = 180,
    apply: Annotated[
        list[str],
        Opt(
            "--apply",
            help="Apply the proposal with this id (repeatable; asks first on a terminal, needs --yes "
            "without one).",
            metavar="ID",
            cli_type=list[str],
            parse=proposal_ids,
        ),
    ] = [],  # noqa: B006 - never mutated: Typer's default for a repeatable option
) -> Review:
    """Propose what to do about expired records (delete), contradictions (keep one), duplicates
    (merge) and records unused for long (archive), each with a stable id. Nothing is applied
    unless you name its id with --apply: on a terminal you are asked first; without one --yes is
    needed too (there is no "apply everything"). Deletions and merges are ordinary writes: git
    keeps what they replace. Never offered to a model."""
    from ..memory.review import review as review_records

    return review_records(memory, unused_days, apply)


def _clear_question(memory: MemoryService, arguments: Any) -> str:
    return f"Delete all {memory.count()} memory record(s) of user {memory.user}?"


@operation(
    "memory",
    "clear",
    uses="memory",
    effect=Effect.DESTRUCTIVE,
    model=False,
    confirm=Confirm(_clear_question, verb="clear memory", done="removed"),
)
def clear(memory: MemoryService) -> Cleared:
    """Remove ALL of the current user's memory records. Asks first on a terminal."""
    cleared = memory.clear()
    memory.warnings.extend(f"not removed: {problem}" for problem in cleared.not_removed)
    return cleared


@operation("memory", "export", uses="memory", effect=Effect.READ, idempotent=True, model=False)
def export(
    memory: MemoryService,
    format: Annotated[str, Opt("--format", help="jsonl (the default) or claude-code (a folder).")] = "jsonl",
    output: Annotated[
        str, Opt("--output", "-o", help="A file or folder to write; '-' (the default) prints it.")
    ] = "-",
) -> Exported:
    """Every record of yours: jsonl (each record's fields and its file, so `import jsonl` into an
    empty vault gives the same files byte for byte) or claude-code (Claude Code's auto-memory
    folder: a topic file per record and MEMORY.md)."""
    from ..memory.transfer import export as export_records

    return export_records(memory, format, output)


@operation("memory", "extract", uses="memory", effect=Effect.WRITE, model=False)
def extract(
    memory: MemoryService,
    transcript: TranscriptFile,
    dry_run: Annotated[bool, Opt("--dry-run", help="Print the decisions; write nothing.")] = False,
) -> ExtractionResult:
    """Automatic extraction over the latest turns of a transcript (cue-gated, reconciled).

    A transcript larger than 8 MiB is refused (exit 6): pass the latest turns only.
    """
    from ..memory.extraction import Extractor, parse_transcript

    messages, problems = parse_transcript(transcript.lines)
    memory.warnings.extend(problems)
    return Extractor(memory, warnings=memory.warnings).run(
        messages, dry_run=dry_run, source=transcript.source
    )
