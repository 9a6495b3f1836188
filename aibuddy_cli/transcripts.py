"""Reading an agent's conversation log, whatever agent wrote it, as one list of turns.

Each line of a JSONL transcript is read by the first shape that fits it:

- **Claude Code** (`~/.claude/projects/…/<session>.jsonl`): entries of `type` user or assistant
  with a `message` whose content is text or blocks: `text`, `tool_use` (a tool call), `tool_result`
  (in a user entry: the tool's answer, a `tool` turn), `thinking` and `redacted_thinking` (left
  out: the model's scratch work is not the conversation). Sidechain entries (a subagent's own
  conversation), meta entries (command caveats), the slash commands a user ran and their output
  (`<command-name>`, `<local-command-stdout>` entries) and the other entry types (summary,
  file-history-snapshot, queue-operation, system) are not turns. A turn's id is its entry's uuid.
- **OpenAI chat** (`{"role", "content", "tool_calls"}`, what `memory extract` read before).
- **Codex CLI** rollouts (`~/.codex/sessions/…/rollout-*.jsonl`): `response_item` entries whose
  payload is a `message` (content parts `input_text` / `output_text`), a `function_call` or a
  `function_call_output`; `reasoning`, `session_meta`, `turn_context` and `event_msg` are not
  turns, nor the environment and instruction blocks Codex repeats as user messages.

A line that fits none, or is not JSON (a truncated last line), is counted and skipped, never
fatal. Turns without an id of their own get one from their line number and bytes, so reading an
append-only file again gives every turn the same id: an import skips what it already has.

Tool calls are kept in the OpenAI shape (`{"id", "type": "function", "function": {"name",
"arguments"}}`), whatever the agent; a tool call's arguments or a tool result longer than
TOOL_TEXT_LIMIT is cut (a file the agent read or wrote is not conversation), except the
arguments of aibuddy's own memory and row tools, which the skip rule and the consolidation
shield read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

TOOL_TEXT_LIMIT = 4000
MAX_PROBLEMS = 20
# Codex repeats these as user messages at the start of every session: context, not conversation.
_CODEX_BOILERPLATE = ("<environment_context>", "<user_instructions>", "<permissions", "# AGENTS.md")
# What Claude Code writes as user entries when the user runs a slash command (/model, /clear):
# the command and its output, nothing said to the model (the caveat before them is a meta entry).
_LOCAL_COMMAND = re.compile(
    r"\s*(?:<(command-name|command-message|command-args|local-command-(?:stdout|stderr|caveat))>"
    r".*?</\1>\s*)+",
    re.DOTALL,
)


class Turn(NamedTuple):
    role: str  # user | assistant | tool
    content: str
    tool_calls: list[dict[str, Any]] | None
    source_id: str  # the agent's own id for it, else one made from its line (see the docstring)


class Reading(NamedTuple):
    turns: list[Turn]
    shapes: dict[str, int]  # lines read by each shape
    ignored: int  # lines of a known shape that hold no turn (thinking, sidechains, metadata)
    skipped: int  # lines no shape fits (not JSON, truncated, unknown)
    problems: list[str]  # why, for the first MAX_PROBLEMS of them

    @property
    def summary(self) -> str:
        read = ", ".join(f"{count} {shape}" for shape, count in sorted(self.shapes.items())) or "no"
        return (
            f"{len(self.turns)} turn(s) from {read} line(s); {self.ignored} ignored, {self.skipped} skipped"
        )


def aibuddy_tool(name: str) -> str:
    """A tool name as aibuddy's own tools are named: `mcp__aibuddy__memory_save` (how Claude Code
    names an MCP server's tool in its transcript) is `memory_save`."""
    return name.removeprefix("mcp__aibuddy__")


# The calls whose arguments are kept whole, however long: aibuddy's own writes, which extraction
# and consolidation's shield read (cut, a pass would write the rows a call added a second time).
_KEPT_WHOLE = frozenset(
    {"memory_save", "memory_update", "memory_delete"}
    | {"add_rows", "table_add_rows", "update_rows", "table_update_rows"}
)


def _cut(text: str) -> str:
    return (
        text if len(text) <= TOOL_TEXT_LIMIT else text[:TOOL_TEXT_LIMIT] + f"… ({len(text)} characters, cut)"
    )


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any] | None:
    if not isinstance(name, str) or not name:
        return None
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    if aibuddy_tool(name) not in _KEPT_WHOLE and len(text) > TOOL_TEXT_LIMIT:
        text = json.dumps({"cut": f"{len(text)} characters of arguments left out"})
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": text}}
    if isinstance(call_id, str):
        call["id"] = call_id
    return call


def _text_of(content: Any) -> str:
    """The text of a tool result's content: a string, or text blocks (images and the rest left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return ""


class _Line(NamedTuple):
    number: int
    text: str
    data: Any

    def made_id(self) -> str:
        return f"L{self.number}:{hashlib.sha1(self.text.encode('utf-8')).hexdigest()[:16]}"


class _NotTurn(Exception):
    """A line of a known shape that holds no turn."""


def _claude_code(line: _Line) -> list[Turn] | None:
    data = line.data
    ids = ("uuid", "sessionId", "leafUuid", "messageId")
    if not isinstance(data, dict) or "payload" in data or not any(key in data for key in ids):
        return None
    kind = data.get("type")
    if kind not in ("user", "assistant"):
        if isinstance(kind, str):
            raise _NotTurn  # summary, system, file-history-snapshot, queue-operation …
        return None
    message = data.get("message")
    if not isinstance(message, dict):
        return None
    if data.get("isSidechain") or data.get("isMeta"):
        raise _NotTurn
    uuid = data.get("uuid")
    source = uuid if isinstance(uuid, str) and uuid else line.made_id()
    content = message.get("content")
    if isinstance(content, str):
        if kind == "user" and _LOCAL_COMMAND.fullmatch(content):
            raise _NotTurn
        return [Turn(kind, content, None, source)]
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[Turn] = []
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block_type == "tool_use":
            call = _call(block.get("id"), block.get("name"), block.get("input", {}))
            if call is not None:
                calls.append(call)
        elif block_type == "tool_result":
            result = _cut(_text_of(block.get("content")))
            results.append(Turn("tool", result, None, f"{source}#{index}"))
    turns = list(results)
    if calls or (texts and not (kind == "user" and _LOCAL_COMMAND.fullmatch("\n".join(texts)))):
        turns.append(Turn(kind, "\n".join(texts), calls or None, source))
    if not turns:
        raise _NotTurn  # thinking only, an image only
    return turns


def _openai(line: _Line) -> list[Turn] | None:
    data = line.data
    if not isinstance(data, dict) or not isinstance(data.get("role"), str) or "type" in data:
        return None
    role = data["role"]
    content = data.get("content")
    text = content if isinstance(content, str) else _text_of(content) if isinstance(content, list) else ""
    if content is not None and not isinstance(content, str | list):
        return None
    if role == "system":
        raise _NotTurn
    if role not in ("user", "assistant", "tool"):
        return None
    calls = []
    for raw in data.get("tool_calls") or []:
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict):
            call = _call(raw.get("id"), function.get("name"), function.get("arguments", ""))
            if call is not None:
                calls.append(call)
    return [Turn(role, _cut(text) if role == "tool" else text, calls or None, line.made_id())]


def _codex(line: _Line) -> list[Turn] | None:
    data = line.data
    if not isinstance(data, dict) or not isinstance(data.get("payload"), dict) or "type" not in data:
        return None
    if data["type"] != "response_item":
        raise _NotTurn  # session_meta, turn_context, event_msg, compacted …
    payload = data["payload"]
    kind = payload.get("type")
    if kind == "message":
        role = {"developer": "system"}.get(payload.get("role"), payload.get("role"))
        text = _text_of(
            [
                {"text": part.get("text")}
                for part in payload.get("content") or []
                if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
            ]
        )
        if role not in ("user", "assistant") or (
            role == "user" and text.lstrip().startswith(_CODEX_BOILERPLATE)
        ):
            raise _NotTurn
        return [Turn(role, text, None, line.made_id())]
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        arguments = payload.get("arguments", payload.get("input", payload.get("action", {})))
        call = _call(payload.get("call_id"), payload.get("name", kind), arguments)
        if call is None:
            return None
        return [Turn("assistant", "", [call], line.made_id())]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return [Turn("tool", _cut(text), None, line.made_id())]
    raise _NotTurn  # reasoning, web_search_call …


SHAPES = (("claude-code", _claude_code), ("codex", _codex), ("openai", _openai))


def _whole_text(value: Any) -> Any:
    """value with each lone surrogate (a `\\ud83d` escape whose pair was cut off) as U+FFFD: no
    UTF-8 text can hold one, and one such line must not stop the rest."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_whole_text(item) for item in value]
    if isinstance(value, dict):
        return {_whole_text(key): _whole_text(item) for key, item in value.items()}
    return value


def read_transcript(lines: Iterable[str], first_line: int = 1) -> Reading:
    """Every turn of lines (first_line: the number of the first, when reading resumes mid-file)."""
    turns: list[Turn] = []
    shapes: Counter[str] = Counter()
    ignored = skipped = 0
    problems: list[str] = []

    def skip(number: int, why: str) -> None:
        nonlocal skipped
        skipped += 1
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"transcript line {number} skipped: {why}")

    for number, text in enumerate(lines, first_line):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            skip(number, "not JSON (a line cut short?)")
            continue
        if "\\ud" in text or "\\uD" in text:  # a string cut inside an emoji by a JavaScript writer
            data = _whole_text(data)
        line = _Line(number, text.rstrip("\n"), data)
        for shape, read in SHAPES:
            try:
                found = read(line)
            except _NotTurn:
                shapes[shape] += 1
                ignored += 1
                break
            if found is not None:
                shapes[shape] += 1
                turns.extend(found)
                break
        else:
            skip(number, "no known transcript shape (Claude Code, Codex or OpenAI chat)")
    return Reading(turns, dict(shapes), ignored, skipped, problems)
