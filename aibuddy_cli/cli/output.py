"""What every command prints, with the standard library only: JSON documents, plain text, errors.

Both the Typer app and the fast path render through here, so scripts see the same bytes
whichever route ran. Rich output for terminals lives in `rich_output`, imported on demand.

Vault content (record names, descriptions and bodies, document titles, task goals, messages)
may hold control characters that would drive a terminal. Plain text never prints them raw:
`emit_text`, `warn` and `report_error` show every C0 control character except newline and tab
(and the CR of a CRLF line ending), DEL and the C1 controls escaped as `\\x1b`; renderers also
pass single-line fields through `one_line`, which escapes newlines and tabs too, so a value
cannot forge rows or columns of a tab-separated listing. JSON escapes the same set. A lone
surrogate (argv bytes that are not UTF-8 arrive as one) is shown as its escape, `\\udcff`, in
both: no UTF-8 stream takes it raw. JSON is never NaN or Infinity (see `emit_json`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..errors import AibuddyError, InvalidInput

# The exit code after the reader of stdout went away (`aibuddy memory list | head -1`): the
# status a shell reports for a tool ended by SIGPIPE (128 + 13).
BROKEN_PIPE_EXIT = 141

# Lone surrogates too (from argv bytes that are not UTF-8): shown as \\udcff, never written raw.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]|\r(?!\n)")
_CONTROL_IN_FIELD = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# json.dumps escapes C0 already, not DEL and C1, nor a lone surrogate (which no UTF-8 stream takes)
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def escape_controls(text: str) -> str:
    """text with control characters escaped, keeping its newlines, tabs and CRLF line ends."""
    return _CONTROL.sub(_escape, text)


def one_line(value: object) -> str:
    """A field of a one-line rendering: every control character escaped, newlines and tabs too."""
    return _CONTROL_IN_FIELD.sub(_escape, str(value))


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
    indenting encoder is pure Python and slow on a 10,000-record listing. Always JSON that any
    reader parses: a NaN or an infinity is InvalidInput, and nothing is written."""
    out = out or sys.stdout
    indent = 2 if out.isatty() else None
    try:
        text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:  # NaN or an infinity: no JSON reader parses what Python would write
        raise InvalidInput("the answer holds a number JSON cannot write (NaN or Infinity)") from None
    # These occur only inside JSON strings, where \\u escapes mean the same characters.
    out.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def emit_text(text: str, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    text = escape_controls(text)
    out.write(text if text.endswith("\n") or not text else text + "\n")


def warn(message: str, err: TextIO | None = None) -> None:
    (err or sys.stderr).write(f"warning: {escape_controls(message)}\n")


def report_error(
    error: AibuddyError, json_mode: bool, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """The single place a typed error becomes output and an exit code."""
    if json_mode:
        emit_json(error.document(), out)
    (err or sys.stderr).write(f"error: {escape_controls(' '.join(error.message.split()))}\n")
    return int(error.exit_code)


def report_warnings(warnings: Iterable[str], err: TextIO | None = None) -> None:
    for message in warnings:
        warn(message, err)


# --- standard streams that are closed, unusable or go away -------------------------------


def stdout_problem(stream: TextIO | None) -> str | None:
    """Why stream (sys.stdout) cannot take output, or None if it can (or is no real file, such as
    a test's buffer). Checked before a command runs, so nothing is written to the vault for
    output nobody can receive."""
    if stream is None:
        return "closed"
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    try:
        import fcntl

        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except ImportError:  # not a POSIX system: nothing more to check
        return None
    except OSError:
        return "closed"
    if flags & os.O_ACCMODE == os.O_RDONLY:
        return "not open for writing"
    import select

    if hasattr(select, "poll"):
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        for _, events in poll.poll(0):
            if events & (select.POLLERR | select.POLLNVAL):
                return "a pipe nobody reads"
    return None


def silence_stdout() -> None:
    """Point file descriptor 1 at the null device, so that what is still buffered for a reader
    that went away (and the flush at exit) goes nowhere instead of raising again."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    os.dup2(null, fd)
    os.close(null)


class BuildProgress:
    """How far an index build has come, on one line of a terminal's stderr that is cleared when it
    ends: shown once the build has run a second, or from its start when it is big enough to take
    one (BIG items: about a second here)."""

    AFTER_SECONDS = 1.0
    BIG = 3000

    def __init__(self, err: TextIO, clock: Callable[[], float] | None = None) -> None:
        import time

        self.err, self.clock = err, clock or time.monotonic
        self.started = 0.0
        self.shown = False

    def __call__(self, what: str, done: int, total: int) -> None:
        now = self.clock()
        if done == 0:
            self.started = now
        if done >= total:
            if self.shown:
                self.err.write("\r\x1b[K")
                self.err.flush()
                self.shown = False
            return
        if self.shown or total >= self.BIG or now - self.started >= self.AFTER_SECONDS:
            self.err.write(f"\r\x1b[K{what}: {done:,} of {total:,}")
            self.err.flush()
            self.shown = True
