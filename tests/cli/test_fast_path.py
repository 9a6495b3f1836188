"""The fast path (aibuddy_cli/cli/fastpath.py) against the Typer app: its routes take the Typer
commands' parameters (names, option spellings, number bounds, defaults, read from the app), and
both print the same bytes for the calls it takes; anything else it leaves to Typer."""

from __future__ import annotations

import inspect
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from helpers import published, write_file
from typer.testing import CliRunner

from aibuddy_cli.app.session import Session
from aibuddy_cli.cli import fastpath
from aibuddy_cli.cli.app import app
from aibuddy_cli.knowledge.service import KnowledgeService
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.tables.queries import TableQueries
from aibuddy_cli.vault import Vault

# --- the routes are the Typer commands' parameters ----------------------------------------------

# The service method each route's handler calls, as the Typer command does.
SERVICE_CALLS: dict[tuple[str, ...], tuple[type, str]] = {
    ("memory", "recall"): (MemoryService, "recall"),
    ("kb", "search"): (KnowledgeService, "search"),
    ("kb", "read"): (KnowledgeService, "read"),
    ("table", "filter"): (TableQueries, "filter"),
    ("table", "reduce"): (TableQueries, "reduce"),
    ("table", "search"): (TableQueries, "search"),
}


# Typer builds click commands (with its own copy of click in recent versions), so parameters are
# told apart by click's attributes and class names, not by importing click.
def typer_command(*path: str) -> Any:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.get_command(None, name)
    return command


def arguments(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "argument"]


def options(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "option"]


def value_options(command: Any) -> dict[str, str]:
    """Every spelling of the options that take a value -> the parameter's name."""
    return {spelling: p.name for p in options(command) if not p.is_flag for spelling in p.opts}


def whole_numbers(command: Any) -> dict[str, Any]:
    """Parameter name -> its click.IntRange, for the whole-number parameters."""
    return {p.name: p.type for p in command.params if type(p.type).__name__ == "IntRange"}


def test_every_route_is_a_typer_command() -> None:
    assert set(fastpath.routes()) == set(SERVICE_CALLS)
    for path in fastpath.routes():
        assert typer_command(*path).name == path[-1]


def test_the_global_options_are_the_typer_apps_options_with_a_value() -> None:
    assert set(fastpath._GLOBAL_OPTIONS) == set(value_options(typer_command()))


@pytest.mark.parametrize("path", list(fastpath.routes()), ids=" ".join)
def test_a_route_takes_its_commands_arguments_and_option_spellings(path: tuple[str, str]) -> None:
    route, command = fastpath.routes()[path], typer_command(*path)
    assert route.positionals == tuple(p.name for p in arguments(command))
    assert route.options == value_options(command)
    assert route.repeated == {p.name for p in options(command) if p.multiple}
    assert route.required == {p.name for p in options(command) if p.required}
    assert route.variadic == any(p.nargs == -1 for p in arguments(command))
    assert not route.variadic or arguments(command)[-1].nargs == -1
    flags = {s for p in options(command) if p.is_flag for s in p.opts}
    assert flags == {"--json"}  # the one flag fastpath.parse knows
    # Values the fast path passes on as text are text to Typer too.
    for name in set(route.options.values()) - set(route.numbers):
        (param,) = [p for p in command.params if p.name == name]
        assert type(param.type).__name__ == "StringParamType", name


@pytest.mark.parametrize("path", list(fastpath.routes()), ids=" ".join)
def test_a_route_takes_the_whole_numbers_typer_takes(path: tuple[str, str]) -> None:
    """The fast path's bound is Typer's maximum, or MAX_NUMBER where Typer has none (larger
    numbers go to Typer); both start at 1."""
    route, numbers = fastpath.routes()[path], whole_numbers(typer_command(*path))
    assert set(route.numbers) == set(numbers)
    for name, bounds in numbers.items():
        assert (bounds.min, bounds.min_open, bounds.max_open) == (
            route.minimums.get(name, 1),
            False,
            False,
        ), name
        assert route.numbers[name] == (fastpath.MAX_NUMBER if bounds.max is None else bounds.max), name


def minimal_call(path: tuple[str, ...], given: str | None = None) -> list[str]:
    """The command with a value for each positional and each required option (but `given`, which
    the caller adds) and nothing else."""
    route = fastpath.routes()[path]
    required = [
        (next(s for s, n in route.options.items() if n == name and s.startswith("--")), name)
        for name in sorted(route.required - {given})
    ]
    return [
        *path,
        *(f"{name}-value" for name in route.positionals),
        *(word for spelling, name in required for word in (spelling, f"{name}-value")),
        "--json",
    ]


def option_calls() -> list[Any]:
    """The minimal call plus one option, in each spelling each route takes; then, per route, every
    long option at once as --name=value. With the values each argument should receive."""
    calls = []
    for path, route in fastpath.routes().items():
        values = {name: "7" if name in route.numbers else f"{name}-value" for name in route.options.values()}
        expected = {name: [value] if name in route.repeated else value for name, value in values.items()}
        for spelling, name in route.options.items():
            argv = [*minimal_call(path, given=name), spelling, values[name]]
            calls.append(pytest.param(argv, {name: expected[name]}, id=" ".join(argv)))
        long = [(spelling, name) for spelling, name in route.options.items() if spelling.startswith("--")]
        argv = [*minimal_call(path, given=""), *(f"{spelling}={values[name]}" for spelling, name in long)]
        argv = _without_required(path, argv)  # the required options come once, as --name=value
        calls.append(pytest.param(argv, expected, id=" ".join(argv)))
    return calls


def _without_required(path: tuple[str, ...], argv: list[str]) -> list[str]:
    """argv without the minimal call's required options (the caller gives them as --name=value)."""
    route = fastpath.routes()[path]
    spellings = {s for s, n in route.options.items() if n in route.required}
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word in spellings:
            skip = True
        else:
            kept.append(word)
    return kept


@pytest.fixture
def service_calls(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Callable[[list[str]], list[dict]]:
    """Run argv on both routes; the arguments each route's service call received (defaults
    applied), fast path first."""
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))

    def run_both(argv: list[str]) -> list[dict[str, Any]]:
        cls, name = SERVICE_CALLS[tuple(argv[:2])]
        original = getattr(cls, name)
        signature = inspect.signature(original)
        calls: list[dict[str, Any]] = []

        def spy(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            calls.append({k: v for k, v in bound.arguments.items() if k != "self"})
            return original(*args, **kwargs)

        with monkeypatch.context() as patched:
            patched.setattr(cls, name, spy)
            assert fastpath.run(argv, io.StringIO(), io.StringIO()) is not None, argv
            CliRunner().invoke(app, argv)
        assert len(calls) == 2, (argv, calls)
        return calls

    return run_both


@pytest.mark.parametrize("path", list(fastpath.routes()), ids=" ".join)
def test_an_omitted_option_reaches_the_service_as_typers_default(
    service_calls, path: tuple[str, str]
) -> None:
    fast, typer_call = service_calls(minimal_call(path))
    assert fast == typer_call
    for param in options(typer_command(*path)):
        if not param.is_flag and not param.required:
            assert param.name in fast and fast[param.name] == param.default, param.name


@pytest.mark.parametrize(("argv", "expected"), option_calls())
def test_options_reach_the_service_as_through_typer(
    service_calls, argv: list[str], expected: dict[str, str]
) -> None:
    fast, typer_call = service_calls(argv)
    assert fast == typer_call
    route = fastpath.routes()[tuple(argv[:2])]
    # A repeated option is a list; a comma-separated one (--columns) reaches the service split.
    shown = {
        name: fast[name]
        if name in route.repeated
        else ",".join(fast[name])
        if isinstance(fast[name], list)
        else str(fast[name])
        for name in expected
    }
    assert shown == expected


# --- both routes print the same ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "recall", "green tea", "--json"],
        ["memory", "recall", "green tea"],
        ["memory", "recall", "--limit", "1", "tea", "--json"],
        ["--user", "bob", "memory", "recall", "tea", "--json"],
        ["--vault=MISSING", "memory", "recall", "tea", "--json"],
        ["memory", "recall", "   ", "--json"],
        ["--user", "../x", "memory", "recall", "tea"],
    ],
)
def test_fast_path_and_typer_app_print_the_same(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]
) -> None:
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    memory.save("coffee", type="user", description="Dislikes coffee", body="no coffee")
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    args = [f"--vault={tmp_path / 'missing'}" if a == "--vault=MISSING" else a for a in args]

    def telemetry_free(text: str) -> str:
        # Each run bumps recallCount/lastRecalledAt, so compare everything else.
        try:
            document = json.loads(text)
        except ValueError:
            return text
        for record in document.get("records", []):
            record.pop("recallCount"), record.pop("lastRecalledAt")
        return json.dumps(document)

    out, err = io.StringIO(), io.StringIO()
    fast_code = fastpath.run(args, out, err)
    assert fast_code is not None, "the fast path should handle this call"
    typer_result = CliRunner().invoke(app, args)
    assert typer_result.exit_code == fast_code
    assert telemetry_free(typer_result.stdout) == telemetry_free(out.getvalue())
    assert typer_result.stderr == err.getvalue()


KB_CALLS = [
    ["kb", "search", "字符串 push_str", "--json"],
    ["kb", "search", "字符串", "--task", "t1", "--limit", "2"],
    ["kb", "search", '"UTF-8 编码"', "--json"],
    ["kb", "search", "nothing-matches-this", "--json"],
    ["kb", "search", "the", "--json"],
    ["kb", "read", "ch08-02-strings", "更新字符串", "--json"],
    ["kb", "read", "ch08-02-strings", "字符串-slice", "--max-chars", "100"],
    ["kb", "read", "ch08-02-strings", "更新字符", "--json"],
    ["kb", "read", "ch08-02-strings", "更新字符串", "--cursor", "bad", "--json"],
    ["kb", "read", "../x", "a", "--json"],
    ["--user", "bob", "kb", "read", "ch08-02-strings", "更新字符串", "--task", "t1", "--json"],
]


@pytest.mark.parametrize("args", KB_CALLS)
def test_kb_fast_path_and_typer_app_print_the_same(
    kb_vault: Vault, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("AIBUDDY_VAULT", str(kb_vault.root))
    assert_both_routes_print_the_same(args)


def assert_both_routes_print_the_same(args: list[str]) -> None:
    """The fast path takes args, and exits and prints exactly as the Typer app does."""
    out, err = io.StringIO(), io.StringIO()
    fast_code = fastpath.run(args, out, err)
    assert fast_code is not None, "the fast path should handle this call"
    typer_result = CliRunner().invoke(app, args)
    assert (typer_result.exit_code, typer_result.stdout, typer_result.stderr) == (
        fast_code,
        out.getvalue(),
        err.getvalue(),
    )


TABLE_CALLS = [
    ["table", "filter", "--json"],
    ["table", "filter", "people", "--where", 'city == "London" and age > 30', "--columns", "name,age"],
    ["table", "filter", "people", "--limit", "1", "--offset", "1", "--json"],
    ["table", "filter", "people", "--where", "__import__('os')", "--json"],
    ["table", "filter", "nobody", "--json"],
    ["table", "reduce", "people", "-m", "mean", "-c", "age", "-g", "city", "--json"],
    ["table", "reduce", "people", "--metric", "median", "--column", "age", "--where", "age < 80"],
    ["table", "reduce", "people", "-m", "sum", "-c", "city", "--json"],
    ["table", "search", "北京", "--json"],
    ["table", "search", "Turing", "-t", "people"],
    ["--user", "eve", "table", "filter", "team/ops/x", "--json"],
]


@pytest.mark.parametrize("args", TABLE_CALLS)
def test_table_fast_path_and_typer_app_print_the_same(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    tables = Session(vault, "demo").tables
    tables.changes.create("people")
    rows = [
        {"name": "Ada", "city": "London", "age": 36},
        {"name": "Alan Turing", "city": "London", "age": 41},
        {"name": "Grace", "city": "New York", "age": 85},
        {"name": "李雷", "city": "北京", "age": 28},
    ]
    tables.changes.add_rows("people", rows)
    assert_both_routes_print_the_same(args)


def test_what_a_failing_command_noticed_is_still_reported(vault: Vault, tmp_path: Path) -> None:
    service = Session(vault, "demo", environ={}).knowledge
    for name in ("fast", "slow"):
        published(service, write_file(tmp_path, f"{name}.md", f"# {name}\n"))

    def tamper(name: str) -> None:
        (vault.root / f"knowledge/system/ready/{name}.md").write_text(
            f"# {name}\n\nchanged behind the tool's back\n"
        )

    tamper("fast")
    out, err = io.StringIO(), io.StringIO()
    assert fastpath.run(["--vault", str(vault.root), "kb", "read", "fast", "fast", "--json"], out, err) == 5
    tamper("slow")
    typer_run = CliRunner().invoke(app, ["--vault", str(vault.root), "kb", "read", "slow", "slow", "--json"])
    assert typer_run.exit_code == 5
    for stderr in (err.getvalue(), typer_run.stderr):
        assert "returned to pending" in stderr and "pending review" in stderr


# --- anything else goes to Typer ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "recall", "--help"],
        ["memory", "recall"],
        ["memory", "recall", "x", "--limit", "0"],
        ["memory", "recall", "x", "--bogus"],
        ["memory", "list"],
        ["--verbose", "memory", "recall", "x"],
        ["kb", "read", "doc"],
        ["kb", "search", "x", "--max-chars", "3"],
        ["kb", "read", "a", "b", "--limit", "2"],
        ["kb", "read", "a", "b", "--max-chars", "zero"],
        ["kb", "list"],
        # numbers Typer judges: other digits, "-n=1" (click reads the value "=1"), beyond the bound
        ["memory", "recall", "x", "--limit", "²", "--json"],
        ["memory", "recall", "x", "-n=1", "--json"],
        ["kb", "read", "a", "b", "--max-chars", "٣"],
        ["kb", "search", "x", "--limit", "99999999999999999999"],
        ["table", "reduce", "people", "-m", "mean"],  # no --column: Typer says so
        ["table", "filter", "--offset", "-1"],
        ["table", "filter", "--limit", "0"],
        ["table", "search", "x", "--where", "y"],
    ],
)
def test_the_fast_path_leaves_anything_unusual_to_typer(args: list[str]) -> None:
    assert fastpath.run(args, io.StringIO(), io.StringIO()) is None
