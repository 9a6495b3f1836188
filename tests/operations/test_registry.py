"""The registry of operations (aibuddy_cli/operations): one declaration from which the commands,
the fast path, the model tools and the MCP tools are derived, and that they all agree with."""

from __future__ import annotations

import json
from typing import Annotated, Any, NamedTuple

import pytest
import typer
from typer.testing import CliRunner

from aibuddy_cli.cli import fastpath
from aibuddy_cli.cli.app import app
from aibuddy_cli.cli.commands import add_commands
from aibuddy_cli.cli.rendering import Render
from aibuddy_cli.models.tool_arguments import check_arguments
from aibuddy_cli.operations.registry import REGISTRY, Arg, Effect, Opt, offered, operation, operations
from aibuddy_cli.operations.schemas import input_schema, output_schema
from aibuddy_cli.operations.tools import tool_of


def typer_command(words: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(app)
    for word in words:
        command = command.get_command(None, word)
    return command


def test_every_operation_is_a_command_with_its_declared_spelling() -> None:
    for op in operations():
        command = typer_command(op.words)
        spelled = {name for p in command.params for name in (*p.opts, *p.secondary_opts)}
        for argument in op.arguments:
            if argument.positional:
                assert argument.name in {p.name for p in command.params}, (op.name, argument.name)
            else:
                assert set(argument.param.flags) <= spelled, (op.name, argument.name)
        assert "--json" in spelled, op.name
        assert ("--yes" in spelled) == (op.confirm is not None), op.name


def test_every_operation_has_a_renderer_and_a_help_line() -> None:
    from aibuddy_cli.cli import (
        import_output,
        kb_output,
        memory_output,
        table_output,
        task_output,
        token_output,
    )

    renders = {
        **memory_output.RENDERS,
        **kb_output.RENDERS,
        **table_output.RENDERS,
        **task_output.RENDERS,
        **token_output.RENDERS,
        **import_output.RENDERS,
    }
    for op in operations():
        assert op.summary, op.name
        assert op.name in renders, op.name


def test_the_fast_path_runs_exactly_the_operations_declared_fast() -> None:
    assert set(fastpath.routes()) == {op.words for op in operations() if op.fast}
    assert all(op.read_only for op in operations() if op.fast)


def test_no_model_is_ever_offered_what_it_may_not_have() -> None:
    assert REGISTRY["memory clear"].model is False
    for audience in ("mcp", "table_read", "table_write", "knowledge"):
        for op in offered(audience):
            assert op.model, op.name
    offered_anywhere = {op.name for op in operations() if op.model and op.tools}
    assert "memory clear" not in offered_anywhere and "table undo" not in offered_anywhere
    assert all(op.read_only for op in offered("table_read")), "read-only loops get only reads"
    assert all(op.read_only for op in offered("knowledge"))


def test_tool_names_are_unique_and_schemas_are_objects() -> None:
    for audience in ("mcp", "table_read", "table_write", "knowledge"):
        names = [op.tools[audience] for op in offered(audience)]
        assert len(names) == len(set(names)), audience
        for op in offered(audience):
            schema = input_schema(op)
            assert schema["type"] == "object"
            assert set(schema["required"]) <= set(schema["properties"]), op.name
            assert "user" not in schema["properties"]  # the user is fixed by the front end, never an argument


def test_every_result_type_has_an_output_schema() -> None:
    for op in operations():
        assert isinstance(output_schema(op), dict), op.name
    versions = output_schema(REGISTRY["memory history"])
    assert versions["type"] == "object"
    assert set(versions["required"]) == {"path", "git", "commits", "replaced"}
    assert versions["properties"]["commits"]["items"]["properties"]["type"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }


def test_no_result_schema_leaves_a_lists_items_untyped() -> None:
    """Strict clients (the MCP Inspector's) warn about a list whose items may be anything; only
    what a model cited as it gave it (any JSON value) is such a list. A bounded journal list
    (BoundedJson) says what its first items are."""

    def untyped(schema: Any, path: str) -> list[str]:
        found = [path] if isinstance(schema, dict) and schema.get("items") == {} else []
        if isinstance(schema, dict):
            found += [p for key, value in schema.items() for p in untyped(value, f"{path}/{key}")]
        elif isinstance(schema, list):
            found += [p for at, value in enumerate(schema) for p in untyped(value, f"{path}[{at}]")]
        return found

    paths = [path for op in operations() for path in untyped(output_schema(op), op.name)]
    assert {path.rsplit("/", 1)[-1] for path in paths} <= {"dropped_citations"}, paths


# --- a new operation is one function: declared here, every front end has it --------------------


class Greeting(NamedTuple):
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"greeting": self.text}


class Greeter:
    def greet(self, name: str, times: int) -> Greeting:
        return Greeting(" ".join([f"hello {name}"] * times))


@pytest.fixture()
def greet_operation() -> Any:
    @operation(
        "demo", "greet", uses="greeter", effect=Effect.READ, idempotent=True, tools={"mcp": "demo_greet"}
    )
    def greet(
        greeter: Greeter,
        name: Annotated[str, Arg("Who to greet.")],
        times: Annotated[int, Opt("--times", "-t", help="How often.", minimum=1, maximum=3)] = 1,
    ) -> Greeting:
        """Greet someone."""
        return greeter.greet(name, times)

    yield REGISTRY["demo greet"]
    del REGISTRY["demo greet"]


def test_a_new_operation_is_a_command_a_route_and_a_tool(greet_operation: Any, monkeypatch) -> None:
    class Session:
        greeter = Greeter()

    from aibuddy_cli.cli import context

    monkeypatch.setattr(context.AppState, "session", lambda self: Session())
    demo = typer.Typer()
    add_commands(demo, ("demo",), {"demo greet": Render(lambda r: r.text)})
    demo.command("other")(lambda: None)  # a group of two, so the command is named
    runner = CliRunner()
    done = runner.invoke(demo, ["greet", "Ada", "-t", "2", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"greeting": "hello Ada hello Ada"}
    assert runner.invoke(demo, ["greet", "Ada", "--times", "4"]).exit_code == 2  # the declared maximum
    assert runner.invoke(demo, ["greet", "Ada"]).stdout == "hello Ada\n"

    route = fastpath.route_of(greet_operation)
    assert route is not None and route.positionals == ("name",) and route.numbers == {"times": 3}
    assert fastpath.parse(route, ["Bo", "--times", "2"]) == {"json": False, "name": "Bo", "times": 2}

    tool = tool_of(greet_operation, "mcp", lambda context: context.greeter)
    assert tool.name == "demo_greet" and tool.description == "Greet someone."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "times": {"type": "integer", "minimum": 1, "maximum": 3, "description": "How often."},
        },
        "required": ["name"],
    }
    assert tool.run(Session(), check_arguments(tool.parameters, {"name": "Cy"})) == {"greeting": "hello Cy"}
    with pytest.raises(ValueError, match=r"^times: 'two' is not of type 'integer'$"):
        check_arguments(tool.parameters, {"name": "Cy", "times": "two"})


def test_an_operation_without_a_param_is_refused_when_read() -> None:
    @operation("demo", "broken", uses="greeter", effect=Effect.READ)
    def broken(greeter: Greeter, name: str) -> Greeting:
        """Broken."""
        return Greeting(name)

    try:
        with pytest.raises(TypeError, match="has no Param"):
            _ = REGISTRY["demo broken"].arguments
    finally:
        del REGISTRY["demo broken"]


def test_an_operation_is_declared_once() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        operation("memory", "save", uses="memory", effect=Effect.WRITE)(lambda memory: None)
