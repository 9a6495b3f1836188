"""Claude Code's hooks: an assistant's own sessions feed aibuddy, with nothing to remember to do.

`aibuddy hook claude-code` reads one hook event (JSON on stdin: `hook_event_name`, `session_id`,
`transcript_path`, `cwd`, …) and:

- **SessionStart**: prints the context to inject (`hookSpecificOutput.additionalContext`): the
  memories a lexical recall finds for the project (its folder's name and the goal of its latest
  session with a request), at most five, and the map of the documents attached to the session's
  task, within CONTEXT_BUDGET characters; nothing at all when nothing matches.
- **UserPromptSubmit, Stop, SubagentStop, PreCompact, SessionEnd**: imports the transcript lines
  added since the last event into the task bound to the session (one task per session id, made
  at the first event that brings a prompt or a turn, its goal the session's first request: an
  empty session makes none; a transcript not written yet is nothing to read). Turns are added
  by their own ids, so a replayed or duplicated event adds nothing; the task's consolidation
  runs every `[consolidation] every` messages, in the background.
- **PreCompact and SessionEnd** also run automatic extraction over the latest three pairs (in a
  detached process when it needs the model): what the person stated for good becomes memory.

It never breaks or slows the host. No model is called while Claude Code waits (recall is lexical
here; consolidation and extraction run detached), every failure exits 0 with its reason in
`.aibuddy/logs/hooks.jsonl`, and it writes nothing outside the vault (the transcript is only
read). Where the task of a session keeps its place in the transcript: `hook.json` in the task's
folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from ..errors import InvalidInput, describe_failure

if TYPE_CHECKING:
    from ..transcripts import Reading

AGENT = "claude-code"
EVENT_LIMIT = 1024 * 1024  # an event is a few hundred bytes; anything past a megabyte is not one
CONTEXT_BUDGET = 6000  # characters of additionalContext at SessionStart
RECALLED = 5
IMPORTING = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd"})
EXTRACTING = frozenset({"PreCompact", "SessionEnd"})
BINDING = "hook.json"  # in the task's folder: the session it records and its place in the transcript
READ_LIMIT = 8 * 1024 * 1024  # one event reads at most this much new transcript
LOCK_SECONDS = 5.0  # the longest an event waits for another event of the user's


class Event(NamedTuple):
    name: str
    session_id: str
    transcript: Path | None
    cwd: Path | None
    raw: Mapping[str, Any]


def parse_event(data: bytes) -> Event:
    """The hook event; InvalidInput when it is not one."""
    if len(data) > EVENT_LIMIT:
        raise InvalidInput("the hook event is larger than 1 MiB")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInput("the hook event on stdin is not JSON") from None
    if not isinstance(raw, dict):
        raise InvalidInput("the hook event is not a JSON object")
    name, session = raw.get("hook_event_name"), raw.get("session_id")
    if not isinstance(name, str) or not name or not isinstance(session, str) or not session.strip():
        raise InvalidInput("the hook event has no hook_event_name or session_id")

    def path(key: str) -> Path | None:
        value = raw.get(key)
        return Path(value) if isinstance(value, str) and os.path.isabs(value) else None

    return Event(name, session, path("transcript_path"), path("cwd"), raw)


class Outcome(NamedTuple):
    task: str | None = None
    added: int = 0
    context_chars: int = 0
    extraction: str | None = None  # foreground | background, at PreCompact and SessionEnd
    skipped_lines: int = 0
    redacted: int = 0  # messages added whose credential-shaped values were redacted
    transcript: str | None = None  # "not written yet": its path names no file so far
    output: dict[str, Any] | None = None  # what the host reads on stdout


def handle(session: Any, event: Event, spawn: Any) -> Outcome:
    """What the event asks of aibuddy (see the module's docstring). spawn(args): start a detached
    aibuddy for the work that may need the model."""
    if event.name == "SessionStart":
        return session_start(session, event)
    if event.name not in IMPORTING:
        return Outcome()
    # One event of a session at a time, waiting less than the agent gives a hook (10 s): a busy
    # lock fails this event (logged), and the next one imports what it would have.
    with session.store.lock(f"hook-{AGENT}-{session.user}", timeout=LOCK_SECONDS):
        outcome = import_new(session, event, find_bound(session, event.session_id))
    task = outcome.task
    if task is not None and event.name in EXTRACTING:
        from ..tasks.ending import extract_latest

        source = f"task {task} ({AGENT} {event.name})"
        args = ["hook", AGENT, "--extract", task]
        _, mode = extract_latest(
            session.tasks, session.memory, task, start=lambda _: spawn(args), source=source
        )
        outcome = outcome._replace(extraction=mode)
    return outcome


# --- the session's task -------------------------------------------------------------------------


def find_bound(session: Any, session_id: str) -> tuple[str, dict[str, Any]] | None:
    """The task bound to the session and its binding, the newest tasks looked at first."""
    tasks = session.tasks
    for task_id in reversed(tasks.ids()):
        binding = tasks.document(task_id, BINDING)
        if binding is not None and binding.get("agent") == AGENT and binding.get("session_id") == session_id:
            return task_id, binding
    return None


def _placeholder(project: str) -> str:
    return f"{AGENT} session in {project}"


def has_placeholder_goal(goal: str) -> bool:
    """Whether a task's goal is the stand-in it got before its session's first request was seen:
    it says nothing of the work."""
    return goal.startswith(_placeholder(""))


def _goal(text: str) -> str:
    """A task's goal from an agent's first request: one line, bounded, redacted (an automatic
    write: a key pasted into the prompt is not kept), no lone surrogate."""
    from ..redaction.detect import redact

    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return " ".join(redact(text)[0].split())[:200]


def _first_request(event: Event, reading: Reading) -> str | None:
    """The session's request this event brings: the prompt of a UserPromptSubmit, else the first
    user turn with text among the lines read; None when neither has any."""
    prompt = event.raw.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    return next((t.content for t in reading.turns if t.role == "user" and t.content.strip()), None)


def read_new(event: Event, binding: Mapping[str, Any]) -> tuple[Reading, dict[str, Any] | None]:
    """The turns of the transcript's lines after the binding's place, and the place after them;
    None for the place when there is no transcript to read: no transcript_path, or a file not
    written yet (Claude Code writes it at the session's first message, after SessionStart and
    the first UserPromptSubmit: an empty session never writes one)."""
    from ..transcripts import Reading, read_transcript

    nothing = Reading([], {}, 0, 0, [])
    path = event.transcript
    if path is None:
        return nothing, None
    try:
        status = os.stat(path)
        identity = [status.st_dev, status.st_ino]  # a file written anew in its place is another one
    except FileNotFoundError:
        return nothing, None
    except OSError:
        identity = None  # (new_lines says why)
    same = binding.get("transcript") == str(path) and binding.get("file", identity) == identity
    offset = binding.get("offset", 0) if same else 0
    line = binding.get("line", 1) if same else 1
    try:
        lines, end, next_line = new_lines(path, offset, line, final=event.name == "SessionEnd")
    except FileNotFoundError:  # gone since os.stat
        return nothing, None
    place = {"transcript": str(path), "file": identity, "offset": end, "line": next_line}
    return read_transcript(lines, first_line=line), place


def import_new(session: Any, event: Event, found: tuple[str, dict[str, Any]] | None) -> Outcome:
    """The transcript's lines added since the binding's offset, as the messages of the session's
    task (found: it and its binding, None before the session has one). The task is made at the
    first event that brings something of the conversation, a prompt or a turn: a session opened
    and closed with nothing said, or a transcript_path that holds no transcript, makes none (it
    would stand as the project's latest session, its goal a stand-in)."""
    from ..operations.task import import_turns

    task, binding = found if found is not None else (None, {})
    reading, place = read_new(event, binding)
    unwritten = "not written yet" if event.transcript is not None and place is None else None
    request = _first_request(event, reading)
    if task is None:
        if request is None and not reading.turns:
            return Outcome(skipped_lines=reading.skipped, transcript=unwritten)  # nothing kept
        project = event.cwd.name if event.cwd else "a project"
        task = session.tasks.new(_goal(request or _placeholder(project))).id
        binding = {
            "agent": AGENT,
            "session_id": event.session_id,
            "cwd": str(event.cwd) if event.cwd else None,
        }
    task_record = session.tasks.get(task)
    added = redacted = 0
    if reading.turns and task_record.status != "closed":  # open, blocked or done: it takes messages
        imported = import_turns(session, task, reading)
        added, redacted = len(imported.added), len(imported.redacted)
    if request and has_placeholder_goal(task_record.goal):  # made before its first request was seen
        session.tasks.set_goal(task, _goal(request))
    kept = {"transcript": None, "offset": 0, "line": 1, **binding, **(place or {})}
    session.tasks.keep_document(task, BINDING, kept)
    return Outcome(task, added, skipped_lines=reading.skipped, redacted=redacted, transcript=unwritten)


def new_lines(path: Path, offset: int, line: int, *, final: bool) -> tuple[list[str], int, int]:
    """The whole lines of path after byte offset (all of them when final: a line cut short for
    good is then read, and skipped as no JSON), the offset after them and the next line's number.
    A file shorter than offset was written anew: read from its start. At most READ_LIMIT bytes a
    call, cut at their last line break (a line longer than that is passed over whole)."""
    import stat

    # (no FIFO or device: opening one would wait for a writer, and the agent with it)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):  # (checked before fdopen, which names no path for a folder)
        os.close(descriptor)
        raise InvalidInput(f"{path} is not a regular file")
    with os.fdopen(descriptor, "rb") as handle:
        size = status.st_size
        if size < offset:
            offset, line = 0, 1
        handle.seek(offset)
        data = handle.read(min(size - offset, READ_LIMIT))
    if final and len(data) < READ_LIMIT:
        complete = data
    elif b"\n" in data or len(data) < READ_LIMIT:
        complete = data[: data.rfind(b"\n") + 1]
    else:  # one line longer than READ_LIMIT: passed over (its rest goes as a line not JSON)
        complete = data
    text = complete.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines, offset + len(complete), line + len(lines)


# --- SessionStart ---------------------------------------------------------------------------------


def session_start(session: Any, event: Event) -> Outcome:
    found = find_bound(session, event.session_id)
    task = found[0] if found else None
    project = event.cwd.name if event.cwd else ""
    goal = session.tasks.get(task).goal if task is not None else ""
    if not goal or has_placeholder_goal(goal):
        goal = recent_goal(session, event)
    query = " ".join(part for part in (project, goal) if part)
    parts: list[str] = []
    if query.strip():
        recalled = session.memory.recall(query, RECALLED)
        parts += [_record_text(record) for record in recalled.records]
    documents = session.knowledge.map(task)[0] if task is not None else []
    text = _context(parts, documents, task)
    if not text:
        return Outcome(task)
    output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return Outcome(task, context_chars=len(text), output=output)


def recent_goal(session: Any, event: Event) -> str:
    """The goal of the project's latest session (a task bound to a session in the same folder)
    that says what the work was: a stand-in goal is passed over (a task an empty session made
    before this was fixed took the project's recall with it)."""
    tasks = session.tasks
    if event.cwd is None:
        return ""
    for task_id in reversed(tasks.ids()):
        binding = tasks.document(task_id, BINDING)
        if binding is not None and binding.get("cwd") == str(event.cwd):
            goal = str(tasks.get(task_id).goal)
            if not has_placeholder_goal(goal):
                return goal
    return ""


def _record_text(record: Any) -> str:
    body = record.body.strip()
    return f"- [{record.type}] {record.name}: {record.description}" + (f"\n  {body}" if body else "")


def _context(parts: list[str], documents: list[Any], task: str | None) -> str:
    """The memories and the document map, cut to CONTEXT_BUDGET (a memory's body first)."""
    sections = []
    if parts:
        sections.append(
            "What aibuddy remembers for this project (recalled from the user's memory):\n" + "\n".join(parts)
        )
    if documents:
        listed = "\n".join(
            f"- {d.ref.qualified}: {d.title} ({d.section_count} sections)"
            + (f" — {d.summary}" if d.summary else "")
            for d in documents
        )
        sections.append(f"Reviewed documents attached to this session's task {task}:\n{listed}")
    text = "\n\n".join(sections)
    if len(text) > CONTEXT_BUDGET:
        text = text[: CONTEXT_BUDGET - 40].rstrip() + "\n… (cut to aibuddy's context budget)"
    return text


# --- the command ----------------------------------------------------------------------------------


def run_claude_code(
    vault: str | None,
    user: str | None,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    environ: Mapping[str, str],
) -> int:
    """`aibuddy hook claude-code`: always 0 (see the module's docstring)."""
    from ..app.session import Session
    from ..settings import Settings

    began = time.monotonic()
    try:
        event = parse_event(stdin.read(EVENT_LIMIT + 1))
    except (InvalidInput, OSError) as error:
        stderr.write(f"aibuddy hook: {getattr(error, 'message', error)}\n")  # no vault known yet
        return 0
    # Recall here is lexical: the host waits on this process, and a model may take seconds.
    settings = Settings.read(environ)
    try:
        quiet = settings.with_models_off("recall")
        session = Session.locate(vault, user, settings=quiet, cwd=event.cwd or Path.cwd())
    except Exception as error:  # noqa: BLE001 - no vault, no user: nothing to do, nowhere to log
        stderr.write(f"aibuddy hook: {describe_failure(error)}\n")
        return 0
    record: dict[str, Any] = {"agent": AGENT, "event": event.name, "session_id": event.session_id}
    try:

        def spawn(args: list[str]) -> None:
            from ..background import spawn_aibuddy

            spawn_aibuddy(session.vault.root, session.user, args, settings)

        outcome = handle(session, event, spawn)
        if outcome.output is not None:
            stdout.write(json.dumps(outcome.output, ensure_ascii=False) + "\n")
        record.update({k: v for k, v in outcome._asdict().items() if k != "output" and v not in (None, 0)})
        record["outcome"] = "ok"
    except Exception as error:  # noqa: BLE001 - the host is never broken; the log says why
        record.update({"outcome": "failed", "error": describe_failure(error)})
    finally:
        record["ms"] = round((time.monotonic() - began) * 1000)
        _log(session, record)
        session.close()
    return 0


def run_extraction(session: Any, task: str) -> Any:
    """`aibuddy hook claude-code --extract T`: the detached extraction a PreCompact or SessionEnd
    started, the model included."""
    from ..tasks.ending import extract_now

    return extract_now(session.tasks, session.memory, task, source=f"task {task} ({AGENT})")


def _log(session: Any, record: dict[str, Any]) -> None:
    from ..clock import utc_now

    try:
        session.tasks.append_log("hooks", json.dumps({"at": utc_now(), **record}, ensure_ascii=False) + "\n")
    except Exception:  # noqa: BLE001, S110 - a log that cannot be written never breaks the host
        pass
