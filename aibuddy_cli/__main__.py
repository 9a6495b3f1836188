"""Entry point: `aibuddy` and `python -m aibuddy_cli`."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

# Options of the root command, which go before the group: `aibuddy --vault X memory list`.
_ROOT_OPTIONS = ("--vault", "--user", "--version")
# Commands that never print on stdout, so they run with it closed (e.g. a detached `kb watch`).
_QUIET_COMMANDS = (("kb", "watch"),)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from .cli import output

    refused = _prepare_streams(args)
    if refused is not None:
        return refused
    code: int | None = None
    try:
        with _build_progress():
            code = _run(args)
        sys.stdout.flush()  # here rather than at exit, where a failure could only be ignored
    except BrokenPipeError:
        # The reader went away (`aibuddy memory list | head -1`): stop quietly, as Unix tools do.
        output.silence_stdout()
        return output.BROKEN_PIPE_EXIT
    except OSError as error:  # stdout failed otherwise, e.g. a full disk behind `> file`
        output.silence_stdout()
        if code:  # the command failed already and said why
            return code
        sys.stderr.write(f"error: cannot write standard output: {error.strerror or error}\n")
        return 1
    return code or 0


def _build_progress():  # noqa: ANN202 - a context manager
    """A first command over a vault without its index shows the build's progress to a person at
    a terminal (stderr), never in a pipe or a file."""
    from contextlib import nullcontext

    from . import build_progress
    from .cli import output

    if not sys.stderr.isatty():
        return nullcontext()
    return build_progress.listening(output.BuildProgress(sys.stderr))


def _run(args: list[str]) -> int:
    from .cli import fastpath

    code = fastpath.run(args, sys.stdout, sys.stderr)
    if code is not None:
        return code
    from .cli.app import app

    try:
        return app(args=args, prog_name="aibuddy", standalone_mode=False) or 0
    except Exception as error:
        # Typer's usage errors (unknown option, missing argument, bad value): shown as usual on
        # stderr, and with --json also as the documented error document on stdout.
        show, exit_code = getattr(error, "show", None), getattr(error, "exit_code", None)
        if show is None or not isinstance(exit_code, int):
            if type(error).__name__ == "Abort":
                print("Aborted!", file=sys.stderr)
                return 1
            raise
        _explain_misplaced_option(error, args)
        if "--json" in args:
            from .cli.output import emit_json
            from .errors import UsageError

            emit_json(UsageError(str(error.format_message())).document())  # type: ignore[attr-defined]
        show()
        return exit_code


def _explain_misplaced_option(error: Any, args: Sequence[str]) -> None:
    """An unknown option that is only misplaced gets a message that says where it goes: a root
    option (--vault, --user) after the group, or a command's --json before the command."""
    if type(error).__name__ != "NoSuchOption":
        return
    name = error.option_name
    ctx = getattr(error, "ctx", None)
    spelled = [i for i, arg in enumerate(args) if arg == name or arg.startswith(f"{name}=")]
    if not spelled:
        return
    index = spelled[0]
    taken = args[index : index + (2 if name in ("--vault", "--user") and "=" not in args[index] else 1)]
    rest = [*args[:index], *args[index + len(taken) :]]
    import shlex  # only for these messages: 5 ms of every start-up otherwise

    if name in _ROOT_OPTIONS and ctx is not None and ctx.parent is not None:
        fixed = ["aibuddy", *taken, *(rest if name != "--version" else [])]
        message = f"{name} goes before the group: {shlex.join(fixed)}"
    elif name == "--json" and ctx is not None and hasattr(ctx.command, "commands"):  # a group refused it
        if _names_a_command(ctx.find_root().command, rest):
            message = f"--json goes after the command: {shlex.join(['aibuddy', *rest, *taken])}"
        else:
            message = "--json goes after the command, e.g. aibuddy memory list --json"
    else:
        return
    error.message = message
    error.possibilities = None  # click's "(Possible options: …)" would contradict the advice


def _names_a_command(root: Any, args: Sequence[str]) -> bool:
    """Whether args (root options first) lead from the root group down to a command."""
    current = root
    words = iter(args)
    for word in words:
        if not hasattr(current, "commands"):
            return True
        if word in ("--vault", "--user"):
            next(words, None)
        elif not word.startswith("-"):
            current = current.get_command(None, word)
            if current is None:
                return False
    return current is not None and not hasattr(current, "commands")


def _prepare_streams(args: Sequence[str]) -> int | None:
    """Make closed standard streams harmless before any work; an exit code if stdout is unusable.

    A closed descriptor 0, 1 or 2 gets the null device, so no file the command opens later takes
    its number. Reading a closed stdin is a usage error when a command asks for it (`--body-file
    -`), not a traceback. A closed or unwritable stdout stops the command before it starts, so
    nothing is written to the vault for output nobody can receive.
    """
    from .cli import output

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    if sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_ClosedInput()))
    problem = output.stdout_problem(sys.stdout)
    if problem is None:
        return None
    if _command_of(args) in _QUIET_COMMANDS:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        return None
    sys.stderr.write(f"error: standard output is {problem}: nothing was done\n")
    from .errors import ExitCode

    return int(ExitCode.USAGE)


def _command_of(args: Sequence[str]) -> tuple[str, ...]:
    """The group and command words of args, after the root options."""
    index = 0
    while index < len(args) and args[index].startswith("--"):
        index += 1 if "=" in args[index] or args[index] == "--version" else 2
    return tuple(args[index : index + 2])


class _ClosedInput(io.RawIOBase):
    """Standard input when it was closed (`<&-`): not a terminal, and reading it is a usage error."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        from .errors import UsageError

        raise UsageError("standard input is closed: there is nothing to read")


if __name__ == "__main__":
    sys.exit(main())
