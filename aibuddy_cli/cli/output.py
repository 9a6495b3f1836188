"""What every command prints, with the standard library only: JSON documents, plain text, errors.

Both the Typer app and the fast path render through here, so scripts see the same bytes
whichever route ran. Rich output for terminals lives in `rich_output`, imported on demand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..errors import AibuddyError


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


def report_warnings(warnings: Iterable[str], err: TextIO | None = None) -> None:
    for message in warnings:
        warn(message, err)
