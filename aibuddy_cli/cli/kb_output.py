"""Plain-text renderings of knowledge results (standard library only, like `output`).

Fields that stand on one line (titles, anchors, paths, snippets, summaries) go through
`one_line`, so a control character, newline or tab in them is shown escaped; a page's text keeps
its lines and `output.emit_text` escapes its other control characters.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..knowledge.documents import DocRef, Meta
from ..knowledge.index import IndexedDoc
from ..knowledge.results import ImportReport
from ..knowledge.service import ImportOutcome, MapEntry, SearchHit, SectionPage
from .output import one_line
from .rendering import Render

if TYPE_CHECKING:
    from ..knowledge.results import (
        BodyChange,
        DocumentInfo,
        DocumentList,
        DocumentOutline,
        Reviewed,
        SearchResults,
        SummaryReport,
        TaskMap,
    )
    from ..knowledge.retrieval import UnavailableJson
    from ..operations.loops.kb_ask import Answer


def docs_text(docs: list[IndexedDoc]) -> str:
    return "\n".join(
        f"{one_line(d.ref.qualified)}\t{d.ref.status}\t{d.section_count}\t{one_line(d.title)}" for d in docs
    )


def outline_text(ref: DocRef, meta: Meta) -> str:
    lines = [f"{one_line(ref.qualified)} ({ref.status}): {one_line(meta.title)}"]
    for section in meta.outline:
        indent = "  " * max(section.level - 1, 0)
        lines.append(
            f"{indent}{one_line(section.title or '(before the first heading)')}  "
            f"#{one_line(section.anchor)}  lines {section.start}-{section.end}  {section.size} chars"
        )
    return "\n".join(lines)


def import_text(outcomes: list[ImportOutcome]) -> str:
    lines = []
    for o in outcomes:
        detail = one_line(o.doc or "")
        if o.message:
            detail = f"{detail} ({one_line(o.message)})" if detail else one_line(o.message)
        lines.append(f"{o.status}\t{one_line(o.source)}\t{detail}")
    summary = ImportReport(outcomes).counts()
    lines.append(
        f"{summary['imported']} imported, {summary['duplicate']} duplicate, "
        f"{summary['skipped']} skipped, {summary['failed']} failed"
    )
    return "\n".join(lines)


def hits_text(hits: list[SearchHit]) -> str:
    return "\n".join(
        f"{one_line(h.hit.ref.qualified)}#{one_line(h.hit.anchor)}\t{h.snippet_line}\t"
        f"{one_line(' > '.join(h.hit.path))}\t{one_line(h.snippet)}"
        for h in hits
    )


def page_text(section_page: SectionPage) -> str:
    """The page itself, then where it came from, the children and how to go on."""
    footer = [
        f"\n-- {one_line(section_page.ref.qualified)}#{one_line(section_page.section.anchor)} "
        f"(lines {section_page.section.start}-{section_page.section.end})"
    ]
    for child in section_page.children:
        footer.append(f"-- child: #{one_line(child.anchor)} {one_line(child.title)} ({child.size} chars)")
    if section_page.next_cursor:
        footer.append(f"-- more: --cursor {section_page.next_cursor}")
    return section_page.text + "\n".join(footer)


def map_text(entries: list[MapEntry], unavailable: list[UnavailableJson]) -> str:
    lines = [
        f"{one_line(e.ref.qualified)}\t{e.ref.scope}\t{e.section_count} sections\t{one_line(e.title)}"
        + (f"\n    {one_line(e.summary)}" if e.summary else "")
        for e in entries
    ]
    lines += [f"unavailable\t{one_line(u['doc'])}\t{one_line(u['reason'])}" for u in unavailable]
    return "\n".join(lines)


def ask_text(result: Answer) -> str:
    lines = [result.answer, ""]
    lines += [f"[{c.doc}#{c.anchor}] {c.title} (lines {c.lines[0]}-{c.lines[1]})" for c in result.citations]
    lines += [f"gap: {gap}" for gap in result.gaps]
    lines += [f"removed, unsupported: {sentence}" for sentence in result.unsupported]
    return "\n".join(lines)


def summaries_text(report: SummaryReport) -> str:
    return "\n".join(
        f"{r.doc}: {r.summary}" if r.summarized else f"{r.doc}: not summarized ({r.reason})"
        for r in report.results
    )


# --- one Render per knowledge operation (cli/commands.py and the fast path use them) ------------


def _import_failures(report: ImportReport, json_mode: bool) -> int:
    """Exit 6 when a file was not imported; with --json each one is also said on stderr."""
    from ..errors import InvalidInput
    from .output import warn

    failed = [o for o in report.outcomes if o.status == "failed"]
    if json_mode:
        for outcome in failed:
            warn(f"not imported: {outcome.source}: {outcome.message}")
    return int(InvalidInput.exit_code) if failed else 0


@contextmanager
def _import_progress(values: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A progress bar on stderr for a person importing several files or a folder."""
    if not (sys.stderr.isatty() and (values.get("recursive") or len(values["paths"]) > 1)):
        yield {}
        return
    from pathlib import Path

    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("importing", total=None)

        def progress(number: int, total: int, source: str) -> None:
            bar.update(task, completed=number, total=total, description=Path(source).name[:40])

        yield {"progress": progress}


def _show_docs(result: DocumentList) -> None:
    from . import rich_output

    rich_output.show_docs(result.documents)


def _reviewed(result: Reviewed) -> str:
    return "\n".join(f"{result.action} {name}" for name in result.names)


def _body_change(result: BodyChange) -> str:
    name = result.ref.qualified
    return f"{name} re-ingested: pending review" if result.changed else f"{name} unchanged"


RENDERS: dict[str, Render[Any]] = {
    "kb import": Render["ImportReport"](
        lambda r: import_text(r.outcomes), exit_code=_import_failures, during=_import_progress
    ),
    "kb list": Render["DocumentList"](lambda r: docs_text(r.documents), rich=_show_docs),
    "kb show": Render["DocumentInfo"](lambda r: outline_text(r.ref, r.meta)),
    "kb outline": Render["DocumentOutline"](lambda r: outline_text(r.ref, r.meta)),
    "kb publish": Render["Reviewed"](_reviewed),
    "kb reject": Render["Reviewed"](_reviewed),
    "kb reingest": Render["BodyChange"](_body_change),
    # `kb summarize --background` answers None, which no renderer sees (`commands.show`)
    "kb summarize": Render["SummaryReport"](summaries_text),
    "kb map": Render["TaskMap"](lambda r: map_text(r.documents, r.unavailable)),
    "kb search": Render["SearchResults"](lambda r: hits_text(r.hits)),
    "kb read": Render["SectionPage"](page_text),
    "kb ask": Render["Answer"](ask_text),
}
