"""Plain-text and JSON renderings of knowledge results (standard library only, like `output`).

Fields that stand on one line (titles, anchors, paths, snippets, summaries) go through
`one_line`, so a control character, newline or tab in them is shown escaped; a page's text keeps
its lines and `output.emit_text` escapes its other control characters.
"""

from __future__ import annotations

from typing import Any

from ..knowledge.documents import DocRef, Meta
from ..knowledge.index import IndexedDoc
from ..knowledge.service import ImportOutcome, MapEntry, SearchHit, SectionPage
from .output import one_line


def doc_json(doc: IndexedDoc) -> dict[str, Any]:
    return {
        "doc": doc.ref.qualified,
        "title": doc.title,
        "scope": doc.ref.scope,
        "owner": doc.ref.owner,
        "status": doc.ref.status,
        "sections": doc.section_count,
        "summary": doc.summary,
    }


def docs_text(docs: list[IndexedDoc]) -> str:
    return "\n".join(
        f"{one_line(d.ref.qualified)}\t{d.ref.status}\t{d.section_count}\t{one_line(d.title)}" for d in docs
    )


def meta_json(ref: DocRef, meta: Meta) -> dict[str, Any]:
    return {"doc": ref.qualified, "status": ref.status, **meta.to_json()}


def outline_text(ref: DocRef, meta: Meta) -> str:
    lines = [f"{one_line(ref.qualified)} ({ref.status}): {one_line(meta.title)}"]
    for section in meta.outline:
        indent = "  " * max(section.level - 1, 0)
        lines.append(
            f"{indent}{one_line(section.title or '(before the first heading)')}  "
            f"#{one_line(section.anchor)}  lines {section.start}-{section.end}  {section.size} chars"
        )
    return "\n".join(lines)


def import_json(outcomes: list[ImportOutcome]) -> dict[str, Any]:
    counts = {status: 0 for status in ("imported", "duplicate", "skipped", "failed")}
    for outcome in outcomes:
        counts[outcome.status] += 1
    return {"files": [outcome.to_json() for outcome in outcomes], **counts}


def import_text(outcomes: list[ImportOutcome]) -> str:
    lines = []
    for o in outcomes:
        detail = one_line(o.doc or "")
        if o.message:
            detail = f"{detail} ({one_line(o.message)})" if detail else one_line(o.message)
        lines.append(f"{o.status}\t{one_line(o.source)}\t{detail}")
    summary = import_json(outcomes)
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


def map_json(task: str, entries: list[MapEntry], unavailable: list[dict[str, str]]) -> dict[str, Any]:
    return {"task": task, "documents": [e.to_json() for e in entries], "unavailable": unavailable}


def map_text(entries: list[MapEntry], unavailable: list[dict[str, str]]) -> str:
    lines = [
        f"{one_line(e.ref.qualified)}\t{e.ref.scope}\t{e.section_count} sections\t{one_line(e.title)}"
        + (f"\n    {one_line(e.summary)}" if e.summary else "")
        for e in entries
    ]
    lines += [f"unavailable\t{one_line(u['doc'])}\t{one_line(u['reason'])}" for u in unavailable]
    return "\n".join(lines)


def search_json(query: str, task: str | None, hits: list[SearchHit]) -> dict[str, Any]:
    return {"query": query, "task": task, "hits": [h.to_json() for h in hits]}
