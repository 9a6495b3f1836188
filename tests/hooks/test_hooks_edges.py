"""Claude Code's hooks, `hook install` and `task import` at their edges (each case a bug a review
found): lone surrogates, keys in a first request, the 8 MiB read limit, a transcript written anew,
a character cut at the end, a linked settings file, a FIFO, a deeply nested event."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

from helpers import run_in_process

from aibuddy_cli.hooks import claude_code as hooks
from aibuddy_cli.vault import Vault

CWD = "/home/alice/src/billing-service"
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


def entry(kind: str, uuid: str, content: Any, *, ascii: bool = True) -> str:
    return json.dumps(
        {"type": kind, "uuid": uuid, "sessionId": "s1", "message": {"role": kind, "content": content}},
        ensure_ascii=ascii,
    )


def event(transcript: Path, name: str = "Stop", **extra: Any) -> bytes:
    return json.dumps(
        {"session_id": "s1", "transcript_path": str(transcript), "cwd": CWD, "hook_event_name": name, **extra}
    ).encode()


def hook(env: dict[str, str], data: bytes) -> None:
    done = run_in_process("hook", "claude-code", env=env, input=data)
    assert done.returncode == 0 and done.stdout == b"", (done.stdout, done.stderr)


def messages(vault: Vault, task: str = "t1") -> list[dict[str, Any]]:
    path = vault.root / f"tasks/demo/{task}/messages.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def log_lines(vault: Vault) -> list[dict[str, Any]]:
    log = vault.root / ".aibuddy/logs/hooks.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --- 1. one lone surrogate escape stalls the session's import for good ------------------------


def test_a_lone_surrogate_in_one_line_stalls_the_sessions_import_for_good(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """JSON allows "\\ud83d" (JavaScript writes it for a string cut inside an emoji's surrogate
    pair): that line is read with U+FFFD in its place, and the session's turns before and after it
    all reach the task (it stalled every later event of the session)."""
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        entry("user", "u1", "Fix the retry job \ud83d") + "\n" + entry("assistant", "a1", "On it.") + "\n",
        encoding="utf-8",
    )
    assert "\\ud83d" in transcript.read_text()  # the escape, as valid JSON holds it
    hook(env, event(transcript))
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(entry("user", "u2", "And add a test") + "\n")
    hook(env, event(transcript))
    assert [line["outcome"] for line in log_lines(vault)] == ["ok", "ok"], log_lines(vault)
    assert [m["content"] for m in messages(vault)][1:] == ["On it.", "And add a test"]


def test_task_import_refuses_a_whole_transcript_for_one_lone_surrogate(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """The same line does not make `task import` refuse the whole transcript."""
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        entry("user", "u1", "Fix the retry job \ud83d") + "\n" + entry("assistant", "a1", "On it.") + "\n",
        encoding="utf-8",
    )
    assert run_in_process("task", "new", "x", env=env).returncode == 0
    done = run_in_process("task", "import", "t1", "--transcript", str(transcript), "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert len(messages(vault)) == 2


# --- 2. the task's goal is the session's first request, unredacted -------------------------------


def test_a_key_in_the_first_prompt_reaches_the_tasks_goal(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """A key in the session's first request is redacted in the task's goal too (task.json, `task
    list`, the SessionStart recall query), as in messages.jsonl."""
    transcript = tmp_path / "s.jsonl"
    prompt = f"Call the API with OPENAI_API_KEY={KEY} and see why it 401s"
    transcript.write_text(entry("user", "u1", prompt) + "\n")
    hook(env, event(transcript, "UserPromptSubmit", prompt=prompt))
    stored = (vault.root / "tasks/demo/t1/messages.jsonl").read_text()
    assert KEY not in stored  # the message is redacted …
    assert KEY not in (vault.root / "tasks/demo/t1/task.json").read_text()  # … the goal is not


def test_a_key_in_the_first_turn_reaches_the_goal_when_the_task_is_made_at_stop(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        entry("user", "u1", f"Use token: {KEY} for the deploy") + "\n" + entry("assistant", "a1", "ok") + "\n"
    )
    hook(env, event(transcript))
    assert KEY not in (vault.root / "tasks/demo/t1/task.json").read_text()


# --- 3. a line across the 8 MiB read limit is lost -------------------------------------------------


def test_a_turn_across_the_read_limit_is_lost(vault: Vault, env: dict[str, str], tmp_path: Path) -> None:
    """A session joined late (more than 8 MiB new): each read stops at its last line break, so the turn
    across the limit is read whole at the next event, never lost in two halves."""
    transcript = tmp_path / "s.jsonl"
    filler = entry("user", "f{}", [{"type": "tool_result", "tool_use_id": "t", "content": "x" * 60000}])
    lines, size, n = [], 0, 0
    while size < hooks.READ_LIMIT - 70000:
        n += 1
        line = filler.replace('"f{}"', f'"f{n}"') + "\n"
        lines.append(line)
        size += len(line.encode())
    pad = hooks.READ_LIMIT - size - 100  # so that the next user line starts 100 bytes before the limit
    line = entry("user", "pad", [{"type": "tool_result", "tool_use_id": "t", "content": "y" * 10}]) + "\n"
    line = line.replace("y" * 10, "y" * (10 + pad - len(line.encode())))
    lines.append(line)
    size += len(line.encode())
    assert size == hooks.READ_LIMIT - 100
    wanted = "The invoice retry must use an idempotency key " * 5
    lines.append(entry("user", "straddling", wanted) + "\n")
    lines.append(entry("assistant", "a-last", "Done.") + "\n")
    transcript.write_text("".join(lines))
    hook(env, event(transcript))
    hook(env, event(transcript))
    contents = [m["content"] for m in messages(vault)]
    assert "Done." in contents
    assert wanted in contents, "the user's turn that crossed the 8 MiB mark was never imported"


# --- 4. a transcript written anew, longer than the old offset -------------------------------------


def test_a_transcript_written_anew_and_longer_loses_its_first_turns(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """A transcript replaced by a longer file (another inode) is read from its start: its first turns
    are not lost (the transcript's own ids keep what the task has from coming twice)."""
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(entry("user", "u1", "First request") + "\n")
    hook(env, event(transcript))
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(
        entry("user", "v1", "A different first request, rather longer than the old one was") + "\n"
        + entry("assistant", "v2", "Answered.") + "\n"
    )  # fmt: skip
    os.replace(replacement, transcript)
    hook(env, event(transcript))
    contents = [m["content"] for m in messages(vault)]
    assert "A different first request, rather longer than the old one was" in contents, contents


# --- 5. `task import` of a live transcript cut inside a character ----------------------------------


def test_task_import_refuses_a_transcript_whose_last_line_is_cut_inside_a_character(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """A live transcript cut inside a multi-byte character: that last line is skipped, never the
    whole file refused as not UTF-8."""
    transcript = tmp_path / "s.jsonl"
    answer = entry("assistant", "a1", "Café au lait", ascii=False)
    whole = (entry("user", "u1", "Hello") + "\n" + answer + "\n").encode()
    transcript.write_bytes(whole[: whole.index("é".encode()) + 1])  # cut after é's first byte
    assert run_in_process("task", "new", "x", env=env).returncode == 0
    done = run_in_process("task", "import", "t1", "--transcript", str(transcript), "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert [m["content"] for m in messages(vault)] == ["Hello"]


# --- 6. `hook install` through a symlinked settings.json ------------------------------------------


def test_install_replaces_a_symlinked_settings_file_instead_of_writing_through_it(
    vault: Vault, env: dict[str, str], tmp_path: Path
) -> None:
    """~/.claude/settings.json as a link into a dotfiles repository: `hook install` writes where the
    link leads, the link stays."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))
    home = tmp_path / "claude"
    home.mkdir()
    (home / "settings.json").symlink_to(target)
    settings = {**env, "CLAUDE_CONFIG_DIR": str(home)}
    done = run_in_process("hook", "install", "claude-code", "--yes", env=settings)
    assert done.returncode == 0, done.stderr
    assert (home / "settings.json").is_symlink(), "the link was replaced by a regular file"
    assert "hooks" in json.loads(target.read_text())


# --- 7. a transcript_path that is a FIFO blocks the hook -------------------------------------------


def test_a_transcript_path_that_is_a_fifo_blocks_the_hook(vault: Vault, tmp_path: Path) -> None:
    """A transcript_path that is a FIFO is refused at once (opening it waited for a writer, with the
    user's hook lock held)."""
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    result: list[int] = []

    def run() -> None:
        out, err = io.StringIO(), io.StringIO()
        result.append(
            hooks.run_claude_code(
                str(vault.root), "demo", io.BytesIO(event(fifo)), out, err, {"AIBUDDY_WORKER": "0"}
            )
        )

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=10)
    blocked = worker.is_alive()
    if blocked:  # let the hook go: a writer that opens and closes at once
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(timeout=10)
    assert not blocked, "the hook waited on the FIFO (Claude Code's 10 s timeout)"
    assert result == [0]


# --- 8. a deeply nested event is a traceback and exit 1 --------------------------------------------


def test_a_deeply_nested_event_exits_0(env: dict[str, str]) -> None:
    """An event nested deeper than the interpreter's limit (well within the 1 MiB accepted) is no
    event: exit 0, the agent never blocked."""
    data = b'{"hook_event_name": "Stop", "session_id": "s", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    assert len(data) < hooks.EVENT_LIMIT
    done = run_in_process("hook", "claude-code", env=env, input=data)
    assert done.returncode == 0 and done.stdout == b"", (done.returncode, done.stderr[-300:])
