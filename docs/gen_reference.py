#!/usr/bin/env python3
"""The documentation's reference pages, made from the declarations they describe: every command
(from the Typer app and the registry of operations: arguments, options, exit codes, the JSON it
prints), every MCP tool (its annotations and schemas) and every setting (aibuddy.toml's keys from
config.py, the environment variables the root command's help lists).

    python docs/gen_reference.py           # write docs/reference/*.md
    python docs/gen_reference.py --check   # exit 1, naming the stale pages, when they differ

`make docs` checks them before it builds the site, and the test suite does too
(tests/test_docs_reference.py), so a change of a command, a tool or a setting that leaves its
reference behind fails.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REFERENCE = Path(__file__).resolve().parent / "reference"
sys.path.insert(0, str(REFERENCE.parent.parent))  # the checkout's code, not an installed copy
HEADER = "<!-- made by docs/gen_reference.py from the code: edit the code, then run it -->\n\n"


def pages() -> dict[str, str]:
    """The generated pages: file name under docs/reference/ -> its text."""
    from aibuddy_cli import config

    configuration = (REFERENCE / "configuration.md").read_text(encoding="utf-8")
    return {
        "commands.md": commands_page(),
        "mcp-tools.md": tools_page(),
        "environment.md": environment_page(),
        "configuration.md": config.with_reference(configuration),
    }


# --- commands ------------------------------------------------------------------------------------


def _commands() -> Iterator[tuple[list[str], Any]]:
    """(words, click command) of every command under the root, depth first, in help's order."""
    import typer

    from aibuddy_cli.cli.app import COMMANDS, _command

    def walk(words: list[str], command: Any) -> Iterator[tuple[list[str], Any]]:
        if hasattr(command, "list_commands"):  # a group (Typer's own click)
            context = typer.Context(command)
            for name in command.list_commands(context):
                yield from walk([*words, name], command.get_command(context, name))
        else:
            yield words, command

    for name in COMMANDS:
        yield from walk([name], _command(name))


def _usage(words: list[str], command: Any) -> str:
    import typer

    context = typer.Context(command, info_name=" ".join(["aibuddy", *words]))
    return " ".join(["aibuddy", *words, *command.collect_usage_pieces(context)])


def _parameter_rows(command: Any) -> list[str]:
    rows = []
    for param in command.params:
        if param.name == "help" or getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            name = f"`{param.human_readable_name}`"
            kind = "argument" + (", several" if param.nargs == -1 else "")
        else:
            flags = [*param.opts, *param.secondary_opts]
            name = ", ".join(f"`{flag}`" for flag in flags)
            kind = "flag" if param.is_flag else "option"
        default = "" if param.default in (None, (), False) or param.required else f"`{param.default}`"
        required = "yes" if param.required else ""
        text = " ".join(inspect.cleandoc(getattr(param, "help", "") or "").split()).replace("|", "\\|")
        text = text.replace("\\[", "[")
        rows.append(f"| {name} | {kind} | {required} | {default} | {text} |")
    return rows


def commands_page() -> str:
    from aibuddy_cli.errors import ExitCode
    from aibuddy_cli.operations.registry import find, load
    from aibuddy_cli.operations.schemas import output_schema

    load()
    lines = [
        "# Commands",
        "",
        HEADER.strip(),
        "",
        "Every command takes the root's options before its name (`aibuddy --vault DIR --user NAME "
        "COMMAND`; see [the environment](environment.md)). A command that takes `--json` prints "
        "one JSON document on stdout, of the shape given under it; what went wrong goes to stderr, "
        "and the exit code says what kind of failure it was:",
        "",
        "| exit code | meaning |",
        "|---|---|",
        *(f"| {code.value} | {code.name.lower().replace('_', ' ')} |" for code in ExitCode),
        "",
    ]
    for words, command in _commands():
        name = " ".join(words)
        lines += [f"## aibuddy {name}", ""]
        help_text = inspect.cleandoc(command.help or "").replace("\\[", "[")
        lines += [help_text, "", "```", _usage(words, command), "```", ""]
        rows = _parameter_rows(command)
        if rows:
            head = ["| parameter | kind | required | default | what it is |", "|---|---|---|---|---|"]
            lines += [*head, *rows, ""]
        try:
            op = find(name)
        except KeyError:  # a command written by hand, not an operation
            op = None
        if op is not None:
            effect = op.effect.value
            lines += [f"Effect on the vault: **{effect}**." + (" Fast path." if op.fast else ""), ""]
            lines += _folded("JSON (`--json`)", output_schema(op))
    return "\n".join(lines).rstrip("\n") + "\n"


def _folded(title: str, schema: Any) -> list[str]:
    """A JSON schema in a block the page shows folded (pymdownx.details), so a page of many stays
    readable."""
    shown = json.dumps(schema, indent=2, ensure_ascii=False).splitlines()
    return [f'??? note "{title}"', "", "    ```json", *(f"    {line}" for line in shown), "    ```", ""]


# --- MCP tools -----------------------------------------------------------------------------------


def tools_page() -> str:
    from aibuddy_cli.mcp.server import tool_annotations
    from aibuddy_cli.operations.registry import load, offered
    from aibuddy_cli.operations.schemas import input_schema, output_schema

    load()
    lines = [
        "# MCP tools",
        "",
        HEADER.strip(),
        "",
        "What `aibuddy mcp` (stdio) and `aibuddy mcp --http` offer a client: each tool is an operation "
        "of the registry, as the command of the same words is ([commands](commands.md)). The "
        "annotations tell a client whether the tool only reads, whether it may destroy, and whether "
        "calling it twice does more than once.",
        "",
    ]
    for op in sorted(offered("mcp"), key=lambda op: op.tools["mcp"]):
        hints = tool_annotations(op)
        lines += [f"## {op.tools['mcp']}", "", f"*{op.title}* — the command `aibuddy {op.name}`.", ""]
        lines += [op.description, ""]
        lines += [
            "| read only | destructive | idempotent | open world |",
            "|---|---|---|---|",
            f"| {hints.read_only_hint} | {hints.destructive_hint} | {hints.idempotent_hint} | "
            f"{hints.open_world_hint} |",
            "",
        ]
        lines += _folded("Arguments", input_schema(op)) + _folded("Result", output_schema(op))
    return "\n".join(lines).rstrip("\n") + "\n"


# --- the environment -----------------------------------------------------------------------------


def environment_page() -> str:
    from aibuddy_cli.settings import VARIABLES

    lines = [
        "# The environment",
        "",
        HEADER.strip(),
        "",
        "What aibuddy reads from the environment (`aibuddy --help` lists it too). A flag wins over the "
        "environment, which wins over [aibuddy.toml](configuration.md). Each is read once per command "
        "or server, when its session starts.",
        "",
        "| variable | what it sets | over aibuddy.toml's |",
        "|---|---|---|",
        *(
            f"| `{name}` | {help} | {f'`{overrides}`' if overrides else ''} |"
            for name, help, overrides in VARIABLES
        ),
        "",
        "And litellm's provider variables (`OPENAI_API_KEY`, `OPENAI_API_BASE`, …), which the model "
        "calls pass on as they are.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    made = pages()
    stale = [name for name, text in made.items() if _read(REFERENCE / name) != text]
    if "--check" in argv:
        if stale:
            print(f"stale: {', '.join(stale)} (run: python docs/gen_reference.py)", file=sys.stderr)
            return 1
        return 0
    for name in stale:
        (REFERENCE / name).write_text(made[name], encoding="utf-8")
        print(f"wrote docs/reference/{name}")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
