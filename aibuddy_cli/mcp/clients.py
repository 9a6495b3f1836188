"""How MCP clients start this installation's server (`aibuddy mcp config CLIENT`): the entry each
client's configuration takes, where that configuration lives, and the file with the entry merged.

The command is an absolute path, never a bare `aibuddy`: a client started from a desktop has
its own PATH, and a bare name fails there with "spawn aibuddy ENOENT". The vault and the user
are written out too, so the server does not depend on the client's working folder or
environment. Merging keeps everything else in the file as it was; a file that is not a JSON
object is refused, never rewritten.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InvalidInput, UsageError

CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode")
NAME = "aibuddy"  # the server's name in each client's configuration


class ClientConfig(NamedTuple):
    client: str
    path: Path  # the configuration file the entry goes in
    key: str  # the object in it that holds the servers, by name
    entry: dict[str, Any]  # this server's entry

    def snippet(self) -> dict[str, Any]:
        """The smallest configuration holding the entry: what a person pastes."""
        return {self.key: {NAME: self.entry}}

    def command_line(self) -> list[str]:
        """Claude Code's own way to add it: `claude mcp add`."""
        return ["claude", "mcp", "add", NAME, "--", self.entry["command"], *self.entry["args"]]

    def merged(self, current: str | None) -> str:
        """The file's text with the entry set under key (created when there is none); current
        itself, byte for byte, when it holds the entry already."""
        document = json_object(self.path, current)
        servers = document.get(self.key)
        if servers is not None and not isinstance(servers, dict):
            raise InvalidInput(f"{self.path}: {self.key!r} is not an object; nothing was written")
        if (servers or {}).get(NAME) == self.entry:
            return current or ""
        document[self.key] = {**(servers or {}), NAME: self.entry}
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "path": str(self.path), "config": self.snippet()}


def json_object(path: Path, current: str | None) -> dict[str, Any]:
    """Another program's JSON settings file, {} when there is none; a file that is not a JSON
    object is refused (InvalidInput), never rewritten."""
    if current is None or not current.strip():
        return {}
    try:
        document = json.loads(current)
    except ValueError as error:
        raise InvalidInput(f"{path} is not JSON ({error}); nothing was written") from None
    if not isinstance(document, dict):
        raise InvalidInput(f"{path} is not a JSON object; nothing was written")
    return document


def server_command(argv0: str, executable: str) -> list[str]:
    """This installation's server command: the console script that is running, by its absolute
    path, else this interpreter running the package. Symbolic links are kept: a virtualenv's
    interpreter is one, and only through it is the package installed."""
    script = Path(argv0)
    if script.name == "aibuddy" and script.exists():
        return [str(script.absolute())]
    return [str(Path(executable).absolute()), "-m", "aibuddy_cli"]


def client_config(
    client: str,
    command: list[str],
    vault: Path,
    user: str,
    task: str | None,
    environ: Mapping[str, str],
    cwd: Path,
    platform: str = sys.platform,
) -> ClientConfig:
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")
    args = [*command[1:], "--vault", str(vault), "--user", user, "mcp", *(["--task", task] if task else [])]
    entry: dict[str, Any] = {"command": command[0], "args": args}
    home = Path(environ.get("HOME") or Path.home())
    if client == "claude-code":  # the project's shared file, as `claude mcp add --scope project`
        return ClientConfig(client, cwd / ".mcp.json", "mcpServers", entry)
    if client == "cursor":
        return ClientConfig(client, home / ".cursor" / "mcp.json", "mcpServers", entry)
    if client == "vscode":  # the workspace's file; VS Code's key is "servers", with a type
        return ClientConfig(client, cwd / ".vscode" / "mcp.json", "servers", {"type": "stdio", **entry})
    if platform == "darwin":
        folder = home / "Library" / "Application Support" / "Claude"
    elif platform.startswith("win"):
        folder = Path(environ.get("APPDATA") or home) / "Claude"
    else:
        folder = Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude"
    return ClientConfig(client, folder / "claude_desktop_config.json", "mcpServers", entry)
