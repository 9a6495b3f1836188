"""`aibuddy hook claude-code` (one hook event on stdin: hooks/claude_code.py) and `aibuddy hook
install|uninstall claude-code` (aibuddy's hooks in Claude Code's settings: hooks/settings.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import UsageError
from . import output
from .context import state_of
from .files import write_after_asking

app = typer.Typer(
    help="Coding-agent hooks: your assistant's sessions feed aibuddy by themselves.", no_args_is_help=True
)
AGENTS = ("claude-code",)


@app.command("claude-code")
def claude_code(
    ctx: typer.Context,
    extract: str | None = typer.Option(None, "--extract", hidden=True, help="A task's detached extraction."),
) -> None:
    """Handle one Claude Code hook event read from stdin (SessionStart: recalled memories and the
    document map as context; UserPromptSubmit, Stop, PreCompact, SessionEnd: the new transcript
    lines into the session's task; PreCompact, SessionEnd: extraction). Always exits 0; failures
    go to .aibuddy/logs/hooks.jsonl. Installed by `aibuddy hook install claude-code`."""
    from ..hooks import claude_code as hooks

    state = state_of(ctx)
    if extract is not None:
        hooks.run_extraction(state.session(), extract)
        return
    environ = state.environ
    hooks.run_claude_code(
        state.vault_option, state.user_option, sys.stdin.buffer, sys.stdout, sys.stderr, environ
    )


def _agent(agent: str) -> None:
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: {', '.join(AGENTS)}")


def _scope(project: bool, user: bool) -> str:
    if project and user:
        raise UsageError("give --project or --user, not both")
    return "project" if project else "user"


ProjectOption = typer.Option(
    False, "--project", help="This project's .claude/settings.local.json (git made to ignore it)."
)
UserOption = typer.Option(
    False, "--user", help="~/.claude/settings.json: every session of yours (the default)."
)
YesOption = typer.Option(False, "--yes", help="Write without asking; required when stdin is not a terminal.")
JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")


@app.command("install")
def install(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="claude-code."),
    project: bool = ProjectOption,
    user: bool = UserOption,
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Merge aibuddy's hooks into the agent's settings (this vault and user, an absolute command),
    keeping everything already there; shows the change and asks first."""
    from ..hooks.settings import hook_command, installed, keep_out_of_git, settings_path
    from ..mcp.clients import server_command

    _agent(agent)
    state = state_of(ctx, json)
    session = state.session()
    scope = _scope(project, user)
    path = settings_path(scope, state.environ, Path.cwd())
    command = hook_command(server_command(sys.argv[0], sys.executable), session.vault.root, session.user)
    current = path.read_text(encoding="utf-8") if path.exists() else None
    changed = installed(path, current, command)
    # Before the file is written (and only once the person agreed): never a moment git could
    # commit it (Claude Code ignores it only when Claude Code made it).
    kept_out: list[Any] = []

    def ignore() -> None:
        if scope == "project":
            kept_out.append(keep_out_of_git(path))

    if changed != current:
        write_after_asking(path, current, changed, yes, prepare=ignore)
    else:
        ignore()
    ignored = kept_out[0] if kept_out else None
    said = f"wrote {path}" if changed != current else f"{path} has aibuddy's hooks already"
    if ignored is not None:
        said += f"; {ignored.line()}"
    document = {
        "agent": agent,
        "path": str(path),
        "command": command,
        "written": changed != current,
        **({"git_ignored": ignored.to_json() if ignored else None} if scope == "project" else {}),
    }
    output.render(state.json, lambda: document, lambda: said, lambda: output.emit_text(said))


@app.command("uninstall")
def uninstall(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="claude-code."),
    project: bool = ProjectOption,
    user: bool = UserOption,
    yes: bool = YesOption,
    json: bool = JsonOption,
) -> None:
    """Remove exactly the hooks `hook install` added (and what they alone filled), nothing else."""
    from ..hooks.settings import settings_path, uninstalled

    _agent(agent)
    state = state_of(ctx, json)
    path = settings_path(_scope(project, user), state.environ, Path.cwd())
    current = path.read_text(encoding="utf-8") if path.exists() else None
    changed = uninstalled(path, current)
    written = changed is not None and changed != current
    if written:
        assert changed is not None
        write_after_asking(path, current, changed, yes)
    said = f"wrote {path}" if written else f"{path} has no aibuddy hooks"
    document = {"agent": agent, "path": str(path), "written": written}
    output.render(state.json, lambda: document, lambda: said, lambda: output.emit_text(said))
