"""Typed errors. Each carries a stable code string and the exit code the CLI maps it to."""

from __future__ import annotations

import errno
from collections.abc import Callable, Collection
from enum import IntEnum
from typing import Any, NamedTuple


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    NOT_FOUND = 3
    CONFLICT = 4
    NOT_ALLOWED = 5
    INVALID_INPUT = 6
    MODEL_UNAVAILABLE = 7
    # A model's run (`table update`, `table refactor`) that answered, but changes it called were
    # refused and not applied: its answer may claim them. Not an error (what was applied stands,
    # the answer is printed); a code of its own so that no script takes it for a success.
    NOT_APPLIED = 8
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)


class Option(NamedTuple):
    """An input of the operation that failed, named in its message by its parameter name
    ("description", "max_chars"): `--description` on the command line (or `cli`, when the command
    takes it in several ways), `description` for a tool."""

    name: str
    cli: str = ""


class Operation(NamedTuple):
    """Another operation a message points to, by its command words and argument ("memory update",
    "tea"): `'aibuddy memory update tea'` on the command line, the `memory_update` tool for an
    agent that has that tool."""

    words: str
    subject: str = ""


Term = Option | Operation
Spelling = Callable[[Term], str]  # a term in one front end's words


def cli_words(term: Term) -> str:
    """A term as the command line says it: an option, or a command to run."""
    if isinstance(term, Option):
        return term.cli or f"--{term.name.replace('_', '-')}"
    return f"'aibuddy {term.words}{' ' + term.subject if term.subject else ''}'"


def tool_words(tools: Collection[str]) -> Spelling:
    """Terms as an agent with these tools reads them: an argument by its name, another operation
    as its tool (the command line where no tool does it)."""

    def spell(term: Term) -> str:
        if isinstance(term, Option):
            return term.name
        tool = term.words.replace(" ", "_")
        return f"the {tool} tool" if tool in tools else cli_words(term)

    return spell


class AibuddyError(Exception):
    """Base of every error a person or script is meant to see as a one-line message.

    The message is text, or parts of text and Terms (options, other operations) that each front
    end spells in its own words: `message` (and `to_json`) has the command line's,
    `worded(tool_words(...))` an agent's. A service names a flag or a command only through a Term."""

    code = "error"
    exit_code = ExitCode.UNEXPECTED

    def __init__(self, *parts: str | Term) -> None:
        self.parts = parts
        self.message = self._spelled(cli_words)
        super().__init__(self.message)

    def _spelled(self, spell: Spelling) -> str:
        return "".join(part if isinstance(part, str) else spell(part) for part in self.parts)

    def worded(self, spell: Spelling) -> str:
        """The message with its terms in another front end's words (`message` as it is when it
        was rewritten after the error was made)."""
        if self.message != self._spelled(cli_words):
            return self.message
        return self._spelled(spell)

    def to_json(self) -> dict[str, Any]:
        """The "error" object of an error document: the code, and the message on one line."""
        return {"code": self.code, "message": " ".join(self.message.split())}

    def document(self, spell: Spelling = cli_words) -> dict[str, Any]:
        """The error document every front end answers with: `--json` on stdout, an MCP tool
        error's text; its message in that front end's words."""
        return {"error": {"code": self.code, "message": " ".join(self.worded(spell).split())}}


class UsageError(AibuddyError):
    code = "usage"
    exit_code = ExitCode.USAGE


class NotFound(AibuddyError):
    code = "not_found"
    exit_code = ExitCode.NOT_FOUND


class Conflict(AibuddyError):
    code = "conflict"
    exit_code = ExitCode.CONFLICT


class Busy(AibuddyError):
    """Another aibuddy process holds a lock or the index: the one outcome worth trying again.
    Exit code 4 like a conflict, with its own code string, so scripts can tell the two apart."""

    code = "busy"
    exit_code = ExitCode.CONFLICT


class NotAllowed(AibuddyError):
    code = "not_allowed"
    exit_code = ExitCode.NOT_ALLOWED


class ReadOnly(NotAllowed):
    """The file system refuses writes (a read-only mount, a snapshot): the same exit code as a
    permission refusal, because retrying cannot help and "conflict/busy" would invite it."""

    code = "read_only"


class DiskFull(AibuddyError):
    """No space (or quota) left: none of the typed outcomes (not busy, not refused, not bad input),
    so the generic exit code 1, with its own code string for scripts."""

    code = "disk_full"
    exit_code = ExitCode.UNEXPECTED


# What a file system answers when it will not take a write; a derived cache then goes elsewhere.
WRITE_REFUSED = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM})


def write_refused(error: BaseException) -> bool:
    """Whether error is the file system refusing a write (read-only, full, not permitted)."""
    return isinstance(error, OSError) and error.errno in WRITE_REFUSED


class InvalidInput(AibuddyError):
    code = "invalid_input"
    exit_code = ExitCode.INVALID_INPUT


class MalformedRecord(InvalidInput):
    """A file in the vault that cannot be read as what it claims to be."""

    code = "malformed_record"

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


class Aborted(AibuddyError):
    """The person declined a confirmation."""

    code = "aborted"
    exit_code = ExitCode.UNEXPECTED


class Interrupted(AibuddyError):
    """The person stopped the command (Ctrl-C) before it had an answer."""

    code = "interrupted"
    exit_code = ExitCode.INTERRUPTED


class ModelUnavailable(AibuddyError):
    """No model answered usefully and the operation has no deterministic fallback."""

    code = "model_unavailable"
    exit_code = ExitCode.MODEL_UNAVAILABLE


class ModelError(Exception):
    """A model call failed (not configured, timeout, HTTP error, unusable reply).

    Callers catch it and fall back; it is not meant to reach a person as-is.
    """


# What an operation may meet and a front end reports as a typed error (as_aibuddy_error gives
# each its code); anything else is a bug.
EXPECTED = (AibuddyError, OSError, UnicodeError)


def describe_failure(error: Exception) -> str:
    """One line for a failure a side path survives: a typed message where there is one."""
    if isinstance(error, AibuddyError | OSError):
        return as_aibuddy_error(error).message
    return f"{type(error).__name__}: {error}"


def as_aibuddy_error(error: BaseException) -> AibuddyError:
    """A typed error for anything a command may meet: filesystem errors get their exit codes."""
    if isinstance(error, AibuddyError):
        return error
    if isinstance(error, OSError):
        where = f": {error.filename}" if error.filename else ""
        reason = f"{error.strerror or error}{where}"
        target = f"cannot write {error.filename}: " if error.filename else ""
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return DiskFull(f"{target}the disk is full ({error.strerror or error})")
        if error.errno == errno.EROFS:
            return ReadOnly(f"{target}read-only file system")
        if isinstance(error, FileNotFoundError):
            return NotFound(reason)
        if isinstance(error, PermissionError):
            return NotAllowed(reason)
        if isinstance(error, (IsADirectoryError, NotADirectoryError)):
            return InvalidInput(reason)
        return AibuddyError(reason)
    if isinstance(error, UnicodeError):
        return InvalidInput(f"not valid UTF-8 text: {error}")
    return AibuddyError(str(error))
