"""Plain-text and JSON renderings of memory results (standard library only, like `output`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TextIO

from ..memory.index import IndexedRecord, Problem
from ..memory.records import MemoryRecord
from ..memory.service import Manifest, RecallResult, RecordList
from .output import warn


def report_problems(problems: Iterable[Problem], prefix: str, err: TextIO | None = None) -> None:
    for problem in problems:
        warn(f"skipped malformed record {prefix}/{problem.name}.md: {problem.message}", err)


# --- JSON documents (the stable schema scripts rely on) ---------------------------------


def problems_json(problems: Iterable[Problem]) -> list[dict[str, str]]:
    return [{"name": p.name, "message": p.message} for p in problems]


def list_json(user: str, result: RecordList) -> dict[str, Any]:
    return {
        "user": user,
        "records": [_listed(item) for item in result.records],
        "problems": problems_json(result.problems),
    }


def _listed(item: IndexedRecord) -> dict[str, Any]:
    return item.record.to_json(body=False)


def manifest_json(user: str, query: str | None, window: int, manifest: Manifest) -> dict[str, Any]:
    return {
        "user": user,
        "query": query,
        "window": window,
        "lines": [line.to_json() for line in manifest.lines],
        "problems": problems_json(manifest.problems),
    }


def recall_json(user: str, result: RecallResult) -> dict[str, Any]:
    return {
        "user": user,
        "query": result.query,
        "method": result.method,
        "records": [record.to_json() for record in result.records],
        "dropped": result.dropped,
        "warnings": result.warnings,
        "problems": problems_json(result.problems),
    }


# --- plain text (stdout is not a terminal) ---------------------------------------------


def list_text(result: RecordList) -> str:
    rows = [
        "\t".join((r.name, r.type, r.provenance, r.updated or "-", str(r.recall_count), r.description))
        for r in (item.record for item in result.records)
    ]
    return "\n".join(rows)


def manifest_text(manifest: Manifest) -> str:
    return "\n".join(line.render() for line in manifest.lines)


def record_text(record: MemoryRecord) -> str:
    header = "\n".join(
        f"{key}: {'null' if value is None else value}" for key, value in record.to_json(body=False).items()
    )
    return f"{header}\n\n{record.body}"


def recall_text(result: RecallResult) -> str:
    parts = [f"# recall ({result.method}): {len(result.records)} record(s)"]
    for record in result.records:
        parts.append(f"\n## {record.name} [{record.type}] {record.description}\n\n{record.body.rstrip()}")
    return "\n".join(parts)


def decisions_text(decisions: Iterable[Any]) -> str:
    """Extraction decisions, one tab-separated line each: step, outcome, record, detail."""
    return "\n".join(f"{d.step}\t{d.outcome}\t{d.name or '-'}\t{d.detail}" for d in decisions)
