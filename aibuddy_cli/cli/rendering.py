"""How a command shows an operation's result: one `Render` per operation, kept in the group's
`*_output` module (standard library only: the fast path renders through them too)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TextIO, TypeVar

if TYPE_CHECKING:
    from ..errors import AibuddyError

R = TypeVar("R")  # the result the operation returns (`Render["RecordWrite"]`: a string works too)


class Render(NamedTuple, Generic[R]):
    text: Callable[[R], str]  # the result as plain text (stdout is a pipe or a file)
    rich: Callable[[R], None] | None = None  # for a person at a terminal (else the plain text)
    # What the result has to say on stderr first (the records skipped as malformed …), given the
    # service the operation used and the stream.
    notes: Callable[[R, Any, TextIO | None], None] | None = None
    # An error this command shows its own way (`memory show` of a conflicted record): the exit
    # code after showing it, or None to report it as any other error.
    failed: Callable[[AibuddyError, bool], int | None] | None = None
    # The exit code after the answer is shown (`kb import`: 6 when a file was not imported).
    exit_code: Callable[[R, bool], int] | None = None
    # What a person at a terminal sees while the operation runs (a progress bar), given its
    # arguments: a context that yields the hooks to pass the function (`progress`).
    during: Callable[[Mapping[str, Any]], AbstractContextManager[dict[str, Any]]] | None = None
    # How a long run reports its steps as they happen (on stderr), given whether the command's
    # output is JSON: the hooks to pass the function (`progress`), none for nobody to see them.
    steps: Callable[[bool], dict[str, Any]] | None = None
    # What the function is given besides the command line's values when a person at a terminal
    # reads the answer (not --json): `memory list` shows a page of the newest records.
    terminal: Mapping[str, Any] | None = None


@contextmanager
def no_hooks(values: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    yield {}
