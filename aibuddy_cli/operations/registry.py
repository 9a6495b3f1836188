"""The registry of operations: each operation is one typed function, its facts declared once.

An operation is a function whose first parameter is the service it acts on (a `MemoryService`,
the `TableQueries` of a table state, …) and whose other parameters are its arguments, each
`Annotated` with a `Param`: its help, its command-line spelling (`Opt("--limit", "-n")`, or a
positional `Arg`), its bounds, and how a model's tool arguments name and shape it. `@operation`
adds what the operation does to the vault (reads only, writes, destructive; idempotent), whether
a model may ever be offered it and under which tool names, and whether it may take the fast path.

Everything else is derived from this, with no second declaration: the Typer commands
(`cli/commands.py`), the fast path's routes and parser (`cli/fastpath.py`), the tools of every model
loop (`operations/loops/`) and the MCP server's tools (`mcp/server.py`), with
their JSON schemas (`operations/schemas.py`). After simonw/llm's `Tool.function` (a tool from a
typed function) and basic-memory's `Annotated` MCP tools.

This module is imported on every start-up that takes the fast path, so it imports nothing heavy;
operations import their services inside the function.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from functools import reduce
from typing import Any, NamedTuple

# (NamedTuples, not dataclasses, and no `inspect` here: the fast path imports this module.)


class Effect(StrEnum):
    """What an operation does to the vault."""

    READ = "read"  # reads only
    WRITE = "write"  # adds or changes, and what it changes can be changed back
    DESTRUCTIVE = "destructive"  # removes or replaces (delete, clear, undo, a lossy change)


class Param(NamedTuple):
    """One argument of an operation, as every front end spells it."""

    help: str = ""
    flags: tuple[str, ...] = ()  # the command line's spellings; none: a positional argument
    metavar: str | None = None
    minimum: int | None = None  # of a whole number, on the command line and in tool schemas
    maximum: int | None = None
    hidden: bool = False  # left out of the command's help (process plumbing)
    checked: bool = False  # a value spelled like one of the command's own options is refused
    cli_type: Any = None  # the command line's type, when it takes text that `parse` converts
    parse: Callable[[Any], Any] | None = None  # the command line's value -> the function's
    file: tuple[str, ...] = ()  # options that read the value from a file instead ('-': stdin)
    file_help: str = ""
    file_parse: Callable[[str], Any] | None = None  # the file option's value -> the function's
    # A positional filled, with the next one, by a citation DOC#ANCHOR; a word that begins with
    # one '-' is a positional too (an anchor such as `-operator`).
    citation: bool = False
    model: bool = True  # offered in tool schemas (False: a command-line switch only)
    tool: str | None = None  # its name among a model's tool arguments, if not the parameter's
    tool_schema: Mapping[str, Any] | None = None  # its JSON schema for models, if the type says too little
    from_tool: Callable[[Any], Any] | None = None  # a model's value -> the function's
    tool_default: Any = None  # what a model's call that leaves it out gets, if not the function's


def Arg(help: str = "", **settings: Any) -> Param:  # noqa: N802 - reads as a declaration
    """A positional argument on the command line."""
    return Param(help, **settings)


def Opt(*flags: str, help: str = "", **settings: Any) -> Param:  # noqa: N802 - reads as a declaration
    """An option on the command line (`Opt("--limit", "-n", help=…)`)."""
    return Param(help, flags=flags, **settings)


class Confirm(NamedTuple):
    """An operation that asks a person first on a terminal and needs --yes without one.
    question(service, arguments): the question, or None when this call needs none."""

    question: Callable[[Any, Mapping[str, Any]], str | None]
    verb: str = "delete"  # "refusing to <verb> without --yes when stdin is not a terminal"
    done: str = "deleted"  # "nothing <done>" when the person declines


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # the default of an argument that has none


class Argument(NamedTuple):
    """A parameter of an operation's function with its declared Param."""

    name: str
    type: Any  # the function's type (Annotated stripped)
    param: Param
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def positional(self) -> bool:
        return not self.param.flags

    @property
    def tool_name(self) -> str:
        return self.param.tool or self.name


_ARGUMENTS: dict[str, tuple[Argument, ...]] = {}  # by operation name: read once, on first use


class Operation(NamedTuple):
    words: tuple[str, ...]  # the command line's words: ("memory", "save")
    function: Callable[..., Any]
    uses: str  # the service the function acts on, as a path from a Session ("tables.queries"; "": it)
    effect: Effect
    idempotent: bool = False
    model: bool = True  # whether a model may ever be offered it (`memory clear`: never)
    fast: bool = False  # whether the fast path may run it (a lean read that scripts call in loops)
    tools: Mapping[str, str] = {}  # where it is a tool -> its name there (never mutated)
    tool_help: str | None = None  # what a model reads, when not the command's help
    confirm: Confirm | None = None

    @property
    def name(self) -> str:
        return " ".join(self.words)

    @property
    def help(self) -> str:
        """The command's help: the function's docstring."""
        import inspect

        return inspect.cleandoc(self.function.__doc__ or "")

    @property
    def summary(self) -> str:
        """The one-line help."""
        return self.help.split("\n\n", 1)[0].replace("\n", " ")

    @property
    def description(self) -> str:
        """What a model reads about it."""
        return self.tool_help or self.summary

    @property
    def title(self) -> str:
        """What a client shows as its name: the description's first clause."""
        first = self.description.split(". ", 1)[0].split("; ", 1)[0].removesuffix(".")
        if first.count("(") > first.count(")"):  # cut inside a parenthesis: leave it out
            first = first.rsplit(" (", 1)[0]
        return first

    @property
    def read_only(self) -> bool:
        return self.effect is Effect.READ

    @property
    def destructive(self) -> bool:
        return self.effect is Effect.DESTRUCTIVE

    @property
    def arguments(self) -> tuple[Argument, ...]:
        """The function's parameters after the service, with their Params (keyword-only ones without
        a Param are hooks a front end may pass, such as a progress callback)."""
        if self.name not in _ARGUMENTS:
            _ARGUMENTS[self.name] = _arguments_of(self.name, self.function)
        return _ARGUMENTS[self.name]

    def service(self, session: Any) -> Any:
        """What the function acts on, from a Session (or anything with the same attributes); the
        session itself when `uses` is empty."""
        return reduce(getattr, self.uses.split(".") if self.uses else [], session)

    def __call__(self, session: Any, **arguments: Any) -> Any:
        return self.function(self.service(session), **arguments)

    def from_command_line(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The function's arguments from a command line's values, by parameter name (a file
        option's as NAME_file), each converted by its Param's `parse` or `file_parse`; one that
        was not given keeps the function's default. The Typer commands and the fast path both
        call this, so a value is read the same way whichever route runs."""
        from ..errors import UsageError

        values: dict[str, Any] = {}
        for argument in self.arguments:
            param, value = argument.param, given.get(argument.name)
            if param.file:
                value = None if value == [] else value  # a repeatable option not given
                from_file = given.get(f"{argument.name}_file")
                if value is not None and from_file is not None:
                    raise UsageError(f"give either {param.flags[0]} or {param.file[0]}, not both")
                if from_file is not None:
                    assert param.file_parse is not None
                    values[argument.name] = param.file_parse(from_file)
                    continue
                if value is None and argument.required:
                    raise UsageError(f"give {param.flags[0]} or {param.file[0]}")
                if value is None:
                    continue
            if argument.name not in given:
                continue
            values[argument.name] = param.parse(value) if param.parse and value is not None else value
        return values

    def from_tool(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A model's tool arguments (checked against the tool's schema) as the function's."""
        values: dict[str, Any] = {}
        for argument in self.arguments:
            if not argument.param.model:
                continue
            value = arguments.get(argument.tool_name, argument.param.tool_default)
            if value is not None and argument.param.from_tool is not None:
                try:
                    value = argument.param.from_tool(value)
                except (ValueError, TypeError, AttributeError) as error:  # a value of the wrong shape
                    from ..errors import InvalidInput

                    raise InvalidInput(f"{argument.tool_name}: {error}") from None
            if value is None and not argument.required:
                continue
            values[argument.name] = value
        return values


def one_or_many(value: str | list[str]) -> list[str]:
    """A model's name or list of names (a tool's schema allows both), as a list."""
    return [value] if isinstance(value, str) else value


def _arguments_of(name: str, function: Callable[..., Any]) -> tuple[Argument, ...]:
    """Read from the function's code object, its defaults and its annotations (evaluated in its
    module), so that no `inspect` is needed."""
    code = function.__code__
    positional = code.co_argcount
    names = code.co_varnames[: positional + code.co_kwonlyargcount]
    given = function.__defaults__ or ()
    defaults = dict(zip(names[positional - len(given) : positional], given, strict=True))
    defaults.update(function.__kwdefaults__ or {})
    namespace = {**vars(typing), **function.__globals__}
    found = []
    for index, parameter in enumerate(names[1:], 1):
        annotation = function.__annotations__.get(parameter, Any)
        if isinstance(annotation, str):
            annotation = eval(annotation, namespace)  # noqa: S307 - the package's own source
        annotated = typing.get_origin(annotation) is typing.Annotated
        params = (
            [extra for extra in typing.get_args(annotation)[1:] if isinstance(extra, Param)]
            if annotated
            else []
        )
        if not params and index >= positional:
            continue  # a front end's hook (`progress`), never an argument
        if not params:
            raise TypeError(f"{name}: {parameter} has no Param")
        kind = typing.get_args(annotation)[0]
        found.append(Argument(parameter, kind, params[0], defaults.get(parameter, REQUIRED)))
    return tuple(found)


REGISTRY: dict[str, Operation] = {}


def operation(
    *words: str,
    uses: str,
    effect: Effect,
    idempotent: bool = False,
    model: bool = True,
    fast: bool = False,
    tools: Mapping[str, str] | None = None,
    tool_help: str | None = None,
    confirm: Confirm | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated function as the operation `words` (see the module's docstring)."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        op = Operation(
            words, function, uses, effect, idempotent, model, fast, dict(tools or {}), tool_help, confirm
        )
        if op.name in REGISTRY:
            raise ValueError(f"operation {op.name!r} declared twice")
        REGISTRY[op.name] = op
        return function

    return register


# The modules that declare operations, by group: imported on first use of the registry.
GROUPS = {
    "memory": "aibuddy_cli.operations.memory",
    "kb": "aibuddy_cli.operations.kb",
    "table": "aibuddy_cli.operations.table",
    "task": "aibuddy_cli.operations.task",
    "token": "aibuddy_cli.operations.token",
    "import": "aibuddy_cli.operations.imports",
}


def load(*groups: str) -> None:
    """Import the modules that declare the operations of groups (all groups when none is named)."""
    import importlib

    for group in groups or tuple(GROUPS):
        if group in GROUPS:  # else declared elsewhere (a test's operations)
            importlib.import_module(GROUPS[group])


def find(name: str) -> Operation:
    """The operation of this name ("memory save"), its group loaded if need be."""
    group = name.split(" ", 1)[0]
    if name not in REGISTRY and group in GROUPS:
        load(group)
    return REGISTRY[name]


def operations(*groups: str) -> Iterator[Operation]:
    """The operations of groups (all when none is named), in declaration order."""
    load(*groups)
    for op in REGISTRY.values():
        if not groups or op.words[0] in groups:
            yield op


def offered(audience: str) -> list[Operation]:
    """The operations a model may be offered where `audience` says ("mcp", "table_read", …)."""
    return [op for op in operations() if op.model and audience in op.tools]
