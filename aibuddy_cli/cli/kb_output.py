"""Plain-text renderings of knowledge results (standard library only, like `output`).

Fields that stand on one line (titles, anchors, paths, snippets, summaries) go through
`one_line`, so a control character, newline or tab in them is shown escaped; a page's text keeps
its lines and `output.emit_text` escapes its other control characters.
"""

from __future__ import annotations

from ..knowledge.documents import DocRef, Meta
from ..knowledge.index import IndexedDoc
from ..knowledge.results import ImportReport
from ..knowledge.service import ImportOutcome, MapEntry, SearchHit, SectionPage
from .output import one_line


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


def map_text(entries: list[MapEntry], unavailable: list[dict[str, str]]) -> str:
    lines = [
        f"{one_line(e.ref.qualified)}\t{e.ref.scope}\t{e.section_count} sections\t{one_line(e.title)}"
        + (f"\n    {one_line(e.summary)}" if e.summary else "")
        for e in entries
    ]
    lines += [f"unavailable\t{one_line(u['doc'])}\t{one_line(u['reason'])}" for u in unavailable]
    return "\n".join(lines)


