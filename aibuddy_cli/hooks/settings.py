"""`aibuddy hook install|uninstall claude-code`: aibuddy's hooks merged into (and taken out of)
Claude Code's `settings.json`, keeping everything else in it.

Where: `--user` (the default) is `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json`
when that is set), so every session of this person feeds the one vault; `--project` is the
project's `.claude/settings.local.json`, a file git must never commit (an absolute path to this
machine's aibuddy and vault, and the person's --user, have no place in a file a team shares).
Claude Code keeps it out of git only when Claude Code made it (with a line in the person's global
git ignore file), so `keep_out_of_git` makes sure before it is written: a line in the clone's own
`.git/info/exclude`, which is never committed and touches nothing outside this repository.

What: one hook per event (SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd), each the
command `<absolute aibuddy> --vault V --user U hook claude-code`. A hook counts as aibuddy's when
its command runs `hook claude-code` of an `aibuddy` program: install replaces those (a vault or a
path that moved) and adds nothing twice; uninstall removes exactly those, and the groups and
events it leaves empty, and nothing else.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import Conflict, InvalidInput
from ..mcp.clients import json_object

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
TIMEOUT = 10  # seconds Claude Code gives a hook; aibuddy answers in a fraction of it


def settings_path(scope: str, environ: Mapping[str, str], cwd: Path) -> Path:
    if scope == "project":
        return cwd / ".claude" / "settings.local.json"
    config = environ.get("CLAUDE_CONFIG_DIR")
    home = Path(config) if config else Path(environ.get("HOME") or Path.home()) / ".claude"
    return home / "settings.json"


def hook_command(command: list[str], vault: Path, user: str) -> str:
    return shlex.join([*command, "--vault", str(vault), "--user", user, "hook", "claude-code"])


def is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    runs_aibuddy = any(Path(word).name == "aibuddy" or word == "aibuddy_cli" for word in words[:3])
    return runs_aibuddy and words[-2:] == ["hook", "claude-code"]


def _document(path: Path, current: str | None) -> dict[str, Any]:
    document = json_object(path, current)
    hooks = document.get("hooks")
    if hooks is not None and (
        not isinstance(hooks, dict) or not all(isinstance(groups, list) for groups in hooks.values())
    ):
        raise InvalidInput(f"{path}: 'hooks' is not an object of lists; nothing was written")
    return document


def _without_ours(hooks: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """hooks with aibuddy's hooks taken out, and the groups and events that held only them."""
    kept: dict[str, list[Any]] = {}
    for event, groups in hooks.items():
        left = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_ours(hook) for hook in inner):
                left.append(group)
                continue
            rest = [hook for hook in inner if not is_ours(hook)]
            if rest:
                left.append({**group, "hooks": rest})
        if left or not groups:
            kept[event] = left
    return kept


def installed(path: Path, current: str | None, command: str) -> str:
    """The settings text with aibuddy's hooks in it; current itself when it has exactly them."""
    document = _document(path, current)
    hooks = _without_ours(document.get("hooks") or {})
    for event in EVENTS:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": TIMEOUT}]}
        if event == "SessionStart":
            group = {"matcher": "", **group}  # startup, resume, clear and compact alike
        hooks[event] = [*hooks.get(event, []), group]
    updated = {**document, "hooks": hooks}
    if current is not None and current.strip() and json.loads(current) == updated:
        return current
    return json.dumps(updated, indent=2, ensure_ascii=False) + "\n"


def uninstalled(path: Path, current: str | None) -> str | None:
    """The settings text without aibuddy's hooks; current itself when it has none (None: no file)."""
    if current is None:
        return None
    document = _document(path, current)
    if "hooks" not in document:
        return current
    hooks = _without_ours(document["hooks"])
    if hooks == document["hooks"]:
        return current
    updated = {key: value for key, value in document.items() if key != "hooks"}
    if hooks:
        updated["hooks"] = hooks
    return json.dumps(updated, indent=2, ensure_ascii=False) + "\n"


# The line `keep_out_of_git` adds: Claude Code's own, for every project folder of the repository.
EXCLUDE_LINE = "**/.claude/settings.local.json"


class GitIgnored(NamedTuple):
    """How git keeps a project's settings file out of commits."""

    repository: str  # the repository holding it
    added_to: str | None  # the exclude file the line went into; None: git ignored it already

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    def line(self) -> str:
        if self.added_to is None:
            return f"git ignores it already in {self.repository}"
        return f"git ignores it: `{EXCLUDE_LINE}` added to {self.added_to} (this clone's, never committed)"


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)


def keep_out_of_git(path: Path) -> GitIgnored | None:
    """Make sure git ignores the settings file at path (a project's .claude/settings.local.json):
    already ignored, or a line added to its repository's .git/info/exclude. None when path is in
    no repository. Conflict when git tracks it (a line cannot untrack it) or still would not
    ignore it (a `!` rule of the project's own)."""
    project = path.parent.parent
    try:
        found = _git(project, "rev-parse", "--show-toplevel")
    except OSError:
        return None  # no git here: nothing commits the file
    if found.returncode != 0:
        return None
    top = Path(found.stdout.strip())
    name = (project.resolve() / path.parent.name / path.name).relative_to(top.resolve()).as_posix()
    if _git(top, "ls-files", "--error-unmatch", "--", name).returncode == 0:
        raise Conflict(
            f"git tracks {path}: your paths and --user would be committed with it; "
            f"`git rm --cached {name}` and commit, or install with --user"
        )
    if _git(top, "check-ignore", "-q", "--", name).returncode == 0:
        return GitIgnored(str(top), None)
    where = _git(top, "rev-parse", "--git-path", "info/exclude").stdout.strip()
    exclude = Path(where) if Path(where).is_absolute() else top / where
    exclude.parent.mkdir(parents=True, exist_ok=True)
    from ..git.files import add_lines

    add_lines(exclude, [EXCLUDE_LINE])
    if _git(top, "check-ignore", "-q", "--", name).returncode != 0:
        raise Conflict(
            f"git does not ignore {path} even with `{EXCLUDE_LINE}` in {exclude} (a rule of the "
            "project's .gitignore un-ignores it): nothing was written; install with --user"
        )
    return GitIgnored(str(top), str(exclude))
