"""What commands print, with the standard library only: JSON documents, plain text, errors.

Both the Typer app and the fast path render through here, so scripts see the same bytes
whichever route ran. Rich output for terminals lives in `rich_output`, imported on demand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..errors import AibuddyError
from ..memory.index import IndexedRecord, Problem
from ..memory.records import MemoryRecord
from ..memory.service import Manifest, RecallResult, RecordList


def render(
    json_mode: bool, document: Callable[[], Any], text: Callable[[], str], rich: Callable[[], None]
) -> None:
    """JSON when asked, Rich for a person at a terminal, plain text for pipes and files."""
    if json_mode:
        emit_json(document())
    elif sys.stdout.isatty():
        rich()
    else:
        emit_text(text())


def emit_json(data: Any, out: TextIO | None = None) -> None:
    """One JSON document and a newline; indented only for a person at a terminal, because the
    indenting encoder is pure Python and slow on a 10,000-record listing."""
    out = out or sys.stdout
    indent = 2 if out.isatty() else None
    out.write(json.dumps(data, ensure_ascii=False, indent=indent) + "\n")


def emit_text(text: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(text if text.endswith("\n") or not text else text + "\n")


def warn(message: str, err: TextIO | None = None) -> None:
    (err or sys.stderr).write(f"warning: {message}\n")


def report_error(
    error: AibuddyError, json_mode: bool, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """The single place a typed error becomes output and an exit code."""
    message = " ".join(error.message.split())
    if json_mode:
        emit_json({"error": {"code": error.code, "message": message}}, out)
    (err or sys.stderr).write(f"error: {message}\n")
    return int(error.exit_code)


def report_problems(problems: Iterable[Problem], prefix: str, err: TextIO | None = None) -> None:
    for problem in problems:
        warn(f"skipped malformed record {prefix}/{problem.name}.md: {problem.message}", err)


def report_warnings(warnings: Iterable[str], err: TextIO | None = None) -> None:
    for message in warnings:
        warn(message, err)


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
