"""The knowledge operations: import, review and publish documents; map, outline, search and read
them; ask the knowledge subagent (see registry.py for the form). The `knowledge` tools are the
subagent's own (`kb ask`): the task is the loop's, never an argument a model gives. The subagent
itself is the MCP tool `knowledge_ask`, whose call names the task (one of its user's own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from .registry import Arg, Effect, Opt, operation

if TYPE_CHECKING:
    from ..knowledge.results import (
        BodyChange,
        DocumentInfo,
        DocumentList,
        DocumentOutline,
        ImportReport,
        Reviewed,
        SearchResults,
        SummaryReport,
        TaskMap,
    )
    from ..knowledge.retrieval import SectionPage
    from ..knowledge.service import KnowledgeService
    from .loops.kb_ask import Answer

DOC_HELP = "ID, system/ID or personal/ID."
TASK_HELP = "Use only the documents attached to this task."
STATUS_HELP = "ready, or pending to review what awaits you."
Task = Annotated[str | None, Opt("--task", help=TASK_HELP, model=False)]
Status = Annotated[str, Opt("--status", help=STATUS_HELP, model=False)]


@operation("kb", "import", uses="knowledge", effect=Effect.WRITE, model=False)
def import_(
    knowledge: KnowledgeService,
    paths: Annotated[list[str], Arg("Markdown or UTF-8 text files (folders with --recursive).")],
    scope: Annotated[str, Opt("--scope", help="system (published by admins) or personal.")] = "personal",
    recursive: Annotated[
        bool, Opt("--recursive", "-r", help="Import the Markdown files in folders.")
    ] = False,
    *,
    progress: Any = None,
) -> ImportReport:
    """Import documents into pending/ for review. Other formats are refused: convert them first."""
    from ..knowledge.results import ImportReport

    return ImportReport(knowledge.import_paths(paths, scope=scope, recursive=recursive, progress=progress))


@operation("kb", "list", uses="knowledge", effect=Effect.READ, idempotent=True)
def list_(
    knowledge: KnowledgeService,
    status: Annotated[str, Opt("--status", help="pending, ready or all.")] = "all",
) -> DocumentList:
    """Documents you may see: system documents and your personal ones."""
    from ..knowledge.results import DocumentList

    return DocumentList(knowledge.user, knowledge.documents(status))


@operation("kb", "show", uses="knowledge", effect=Effect.READ, idempotent=True)
def show(knowledge: KnowledgeService, doc: Annotated[str, Arg(DOC_HELP)]) -> DocumentInfo:
    """A document's sidecar: title, owner, scope, status, sha256, outline, summary."""
    from ..knowledge.results import DocumentInfo

    return DocumentInfo(*knowledge.show(doc))


@operation(
    "kb",
    "outline",
    uses="knowledge",
    effect=Effect.READ,
    idempotent=True,
    tools={"knowledge": "read_doc"},
    tool_help="The outline of one document: sections with anchors, line ranges and sizes.",
)
def outline(
    knowledge: KnowledgeService,
    doc: Annotated[str, Arg(DOC_HELP)],
    task: Task = None,
    status: Status = "ready",
) -> DocumentOutline:
    """read_doc: the outline (level, title, anchor, lines, size) of a usable document."""
    from ..knowledge.results import DocumentOutline

    return DocumentOutline(*knowledge.outline(doc, task, status))


@operation("kb", "publish", uses="knowledge", effect=Effect.WRITE, model=False)
def publish(
    knowledge: KnowledgeService, docs: Annotated[list[str], Arg("Documents to publish.")]
) -> Reviewed:
    """pending → ready. System documents: admins only; personal ones: their owner."""
    from ..knowledge.results import Reviewed

    return Reviewed("published", knowledge.publish(*docs))


@operation("kb", "reject", uses="knowledge", effect=Effect.DESTRUCTIVE, model=False)
def reject(
    knowledge: KnowledgeService, docs: Annotated[list[str], Arg("Pending documents to reject.")]
) -> Reviewed:
    """Remove pending documents from the vault (their source files are not touched)."""
    from ..knowledge.results import Reviewed

    return Reviewed("rejected", knowledge.reject(*docs))


@operation("kb", "reingest", uses="knowledge", effect=Effect.WRITE, model=False)
def reingest(
    knowledge: KnowledgeService,
    doc: Annotated[str, Arg()],
    path: Annotated[str | None, Arg("Read from here instead of the original source.")] = None,
) -> BodyChange:
    """Read a document again: new outline, summary cleared, back to pending for review."""
    from ..knowledge.results import BodyChange

    return BodyChange(*knowledge.reingest(doc, path))


@operation("kb", "summarize", uses="knowledge", effect=Effect.WRITE, model=False)
def summarize(
    knowledge: KnowledgeService,
    docs: Annotated[list[str], Arg()],
    background: Annotated[bool, Opt("--background", hidden=True, model=False)] = False,  # started by import
) -> SummaryReport | None:
    """Summaries through the summary model role; a failure leaves documents as they were."""
    from ..knowledge.results import SummaryReport

    if background:
        knowledge.summarize_in_background(docs)
        return None
    return SummaryReport(knowledge.summarize(docs))


@operation("kb", "map", uses="knowledge", effect=Effect.READ, idempotent=True)
def map_(knowledge: KnowledgeService, task: Annotated[str, Opt("--task", help="The task.")]) -> TaskMap:
    """The document map of a task: title, scope, summary and section count of each usable document."""
    from ..knowledge.results import TaskMap

    return TaskMap(task, *knowledge.map(task))


def _at_most_ten(limit: int) -> int:
    return max(1, min(limit, 10))


@operation(
    "kb",
    "search",
    uses="knowledge",
    effect=Effect.READ,
    idempotent=True,
    fast=True,
    tools={"knowledge": "search_docs"},
    tool_help="Search the task's documents. Returns ranked section hits with doc, anchor, "
    "heading path, line range and the best matching line.",
)
def search(
    knowledge: KnowledgeService,
    query: Annotated[str, Arg('Words, CJK text, "quoted phrases".')],
    task: Task = None,
    limit: Annotated[
        int,
        Opt(
            "--limit",
            "-n",
            help="At most this many hits.",
            minimum=1,
            maximum=1000,
            tool_schema={"type": "integer", "minimum": 1, "maximum": 10},
            from_tool=_at_most_ten,
            tool_default=5,
        ),
    ] = 10,
    status: Status = "ready",
) -> SearchResults:
    """search_docs: ranked section hits (one per section) with their best line."""
    from ..knowledge.results import SearchResults

    return SearchResults(query, task, knowledge.search(query, task=task, limit=limit, status=status))


@operation(
    "kb",
    "read",
    uses="knowledge",
    effect=Effect.READ,
    idempotent=True,
    fast=True,
    tools={"knowledge": "read_section"},
    tool_help="One page of a section's own text, its child sections and next_cursor.",
)
def read(
    knowledge: KnowledgeService,
    doc: Annotated[
        str,
        Arg(
            "ID, system/ID or personal/ID; or a citation DOC#ANCHOR, as search and read print it.",
            citation=True,
        ),
    ],
    anchor: Annotated[
        str | None, Arg("The section anchor (see kb outline); may begin with '-'. Omit it for DOC#ANCHOR.")
    ] = None,
    cursor: Annotated[
        str | None,
        Opt("--cursor", help="Continue where the previous page ended.", from_tool=lambda c: c or None),
    ] = None,
    max_chars: Annotated[
        int | None,
        Opt("--max-chars", help="Page size (default [knowledge] page_chars).", minimum=1, model=False),
    ] = None,
    task: Task = None,
    status: Status = "ready",
) -> SectionPage:
    """read_section: one bounded page of a section, its child sections and a cursor for more.

    Name the section as DOC ANCHOR or as one citation DOC#ANCHOR (e.g. system/guide#install).
    """
    from ..errors import UsageError
    from ..knowledge.documents import split_citation

    if anchor is None:
        citation = split_citation(doc)
        if citation is None:
            raise UsageError(
                "Missing argument 'ANCHOR': give DOC ANCHOR, or one citation DOC#ANCHOR as printed."
            )
        doc, anchor = citation
    elif split_citation(doc) is not None:
        raise UsageError(f"{doc!r} is a citation already: give DOC ANCHOR or DOC#ANCHOR.")
    return knowledge.read(doc, anchor, cursor=cursor, max_chars=max_chars, task=task, status=status)


@operation(
    "kb",
    "ask",
    uses="knowledge",
    effect=Effect.READ,
    idempotent=True,
    tools={"mcp": "knowledge_ask"},
    tool_help="Answer a question from the reviewed documents attached to the task the call names; "
    "the task is one of the user's own (another user's is not found, as an unknown one). The answer "
    "has section citations (doc#anchor) and the gaps the documents leave.",
)
def ask(
    knowledge: KnowledgeService,
    question: Annotated[str, Arg("What you want to know from the task's documents.")],
    task: Annotated[
        str,
        Opt(
            "--task",
            help="Answer from the documents attached to this task.",
            tool_schema={
                "type": "string",
                "description": "The task whose attached documents answer, by its id, as task_new and "
                "task_list give it.",
            },
        ),
    ],
) -> Answer:
    """Knowledge subagent: an answer with checked citations and gaps (excerpts without a model)."""
    from .loops.kb_ask import KnowledgeAgent

    return KnowledgeAgent(knowledge, task).ask(question)
