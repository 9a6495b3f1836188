"""aibuddy in shell loops and pipes: stdin read only when asked, closed and broken standard
streams, bounded transcripts."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import child_env, run_aibuddy

from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses bash, FIFOs and /dev/zero")

EIGHT_MIB = 8 * 1024 * 1024


@pytest.fixture
def env(vault: Vault) -> dict[str, str]:
    environment = child_env(vault.root)
    # Buffered stdout as users have it (PYTHONUNBUFFERED would hide a broken pipe's error).
    environment.pop("PYTHONUNBUFFERED", None)
    return environment


def shell(
    command: str, exe: list[str], env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run command in bash with "$AIBUDDY" as the tool, as a script would."""
    return subprocess.run(
        ["bash", "-c", command],
        env={**env, "AIBUDDY": " ".join(exe)},
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
    )


def records(vault: Vault) -> dict[str, str]:
    folder = vault.root / "memory" / "demo"
    return {path.stem: path.read_text() for path in folder.glob("*.md")} if folder.is_dir() else {}


def body_of(vault: Vault, name: str) -> str:
    return records(vault)[name].split("\n---\n", 1)[1]


def write_record(vault: Vault, name: str, body: str, description: str = "notes about tea") -> None:
    folder = vault.root / "memory" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: user\nprovenance: manual\n"
        "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\nrecallCount: 0\n"
        f"lastRecalledAt: null\n---\n{body}"
    )


# --- memory save reads stdin only when asked ----------------------------------------------


@pytest.mark.process
def test_save_in_a_while_read_loop_saves_every_name_with_an_empty_body(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path
) -> None:
    (tmp_path / "names.txt").write_text("alpha\nbeta\ngamma\n")
    result = shell(
        'while read n; do $AIBUDDY memory save "$n" --type user --description d; done < names.txt',
        aibuddy_exe,
        env,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(records(vault)) == ["alpha", "beta", "gamma"]
    assert all(body_of(vault, name) == "" for name in ("alpha", "beta", "gamma"))


@pytest.mark.process
def test_save_does_not_wait_for_a_pipe_that_stays_open(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    # `sleep 30 | aibuddy memory save x …`: the writer never writes and never closes.
    process = subprocess.Popen(
        [*aibuddy_exe, "memory", "save", "x", "--type", "user", "--description", "d"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        code = process.wait(timeout=60)
    finally:
        process.stdin.close()  # type: ignore[union-attr]
        process.kill()
        process.wait()
    assert code == 0 and body_of(vault, "x") == ""


@pytest.mark.process
def test_body_file_dash_still_reads_stdin(aibuddy_exe: list[str], env: dict[str, str], vault: Vault) -> None:
    saved = run_aibuddy(
        aibuddy_exe,
        "memory",
        "save",
        "x",
        "-t",
        "user",
        "-d",
        "d",
        "--body-file",
        "-",
        env=env,
        input=b"piped",
    )
    assert saved.returncode == 0, saved.stderr
    assert body_of(vault, "x") == "piped"


def test_save_help_says_stdin_is_read_only_with_body_file_dash(cli) -> None:
    text = " ".join(cli("memory", "save", "--help").stdout.split())
    assert "--body-file -" in text and "empty" in text


# --- closed stdin ---------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    "args",
    [
        "memory save x -t user -d d --body-file -",
        "memory update tea --body-file -",
        "memory extract --transcript -",
    ],
)
def test_reading_a_closed_stdin_is_a_one_line_usage_error(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path, args: str
) -> None:
    write_record(vault, "tea", "keep me")
    result = shell(f"$AIBUDDY {args} <&-", aibuddy_exe, env, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.decode() == "error: standard input is closed: there is nothing to read\n"
    assert sorted(records(vault)) == ["tea"] and body_of(vault, "tea") == "keep me"


@pytest.mark.process
def test_task_message_from_a_closed_stdin_is_a_usage_error(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path
) -> None:
    task = json.loads(run_aibuddy(aibuddy_exe, "task", "new", "a goal", "--json", env=env).stdout)["id"]
    result = shell(f"$AIBUDDY task add-message {task} --role user - <&-", aibuddy_exe, env, tmp_path)
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert b"standard input is closed" in result.stderr
    assert not (vault.root / "tasks" / "demo" / task / "messages.jsonl").exists()


@pytest.mark.process
def test_commands_that_do_not_read_stdin_work_with_it_closed(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path
) -> None:
    saved = shell("$AIBUDDY memory save x -t user -d d <&-", aibuddy_exe, env, tmp_path)
    assert saved.returncode == 0, saved.stderr
    cleared = shell("$AIBUDDY memory clear <&-", aibuddy_exe, env, tmp_path)
    assert cleared.returncode == 2 and b"--yes" in cleared.stderr and b"Traceback" not in cleared.stderr
    assert "x" in records(vault)


# --- closed or unusable stdout: nothing done, one line on stderr ------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    ("redirect", "problem"),
    [(">&-", "closed"), ("1</dev/null", "not open for writing")],
)
@pytest.mark.parametrize(
    "args",
    [
        "memory save x -t user -d d --body b",
        "memory save x -t user -d d --body b --json",
        "memory recall tea",  # the fast path: a recall writes telemetry
        "memory recall tea --json",
        "memory update tea --body changed",
        "memory delete tea",
    ],
)
def test_unusable_stdout_stops_the_command_before_it_writes(
    aibuddy_exe: list[str],
    env: dict[str, str],
    vault: Vault,
    tmp_path: Path,
    redirect: str,
    problem: str,
    args: str,
) -> None:
    write_record(vault, "tea", "green tea, no sugar")
    before = records(vault)
    result = shell(f"$AIBUDDY {args} {redirect}", aibuddy_exe, env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == f"error: standard output is {problem}: nothing was done\n"
    assert records(vault) == before


@pytest.mark.process
def test_a_pipe_whose_reader_is_gone_stops_the_command_before_it_writes(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [*aibuddy_exe, "memory", "save", "x", "-t", "user", "-d", "d"],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 2
    assert result.stderr.decode() == "error: standard output is a pipe nobody reads: nothing was done\n"
    assert records(vault) == {}


@pytest.mark.process
def test_kb_watch_prints_nothing_on_stdout_so_it_runs_with_stdout_closed(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        ["bash", "-c", "exec $AIBUDDY kb watch >&-"],
        env={**env, "AIBUDDY": " ".join(aibuddy_exe)},
        stderr=subprocess.PIPE,
    )
    try:
        first = process.stderr.readline()  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert first.startswith(b"watching ")


@pytest.mark.process
@pytest.mark.parametrize("args", ["memory show tea", "memory recall tea", "memory list --json"])
def test_a_full_disk_behind_stdout_is_one_line_on_stderr(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, tmp_path: Path, args: str
) -> None:
    write_record(vault, "tea", "green tea, no sugar")
    result = shell(f"$AIBUDDY {args} > /dev/full", aibuddy_exe, env, tmp_path)
    assert result.returncode == 1
    error = result.stderr.decode()
    assert error.startswith("error: ") and error.count("\n") == 1 and "No space left on device" in error


# --- the reader goes away mid-output ------------------------------------------------------------


def read_a_little_then_close(command: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """`command | head -c 100`: read the beginning, close the pipe, collect stderr."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = os.read(process.stdout.fileno(), 100)  # type: ignore[union-attr]
    process.stdout.close()  # type: ignore[union-attr]
    error = process.stderr.read()  # type: ignore[union-attr]
    return process.wait(timeout=60), first, error


@pytest.mark.process
@pytest.mark.parametrize(
    "args",
    [
        ["memory", "list"],  # the Typer app
        ["memory", "list", "--json"],
        ["memory", "show", "big"],
        ["memory", "recall", "leaves"],  # the fast path
        ["memory", "recall", "leaves", "--json"],
    ],
)
def test_a_reader_that_goes_away_ends_the_output_quietly(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault, args: list[str]
) -> None:
    # Far more output than a pipe holds: a long listing and big bodies.
    for number in range(300):
        write_record(vault, f"note-{number:03d}", "tea\n", description="tea " * 250)
    for number in range(3):
        write_record(vault, f"big{number}" if number else "big", "tea leaves\n" * 60_000)
    code, first, error = read_a_little_then_close([*aibuddy_exe, *args], env)
    assert first
    assert error == b""
    assert code == 141  # as a shell reports a tool ended by SIGPIPE


# --- memory extract: a bounded transcript ------------------------------------------------------


def transcript_lines(count: int) -> bytes:
    line = json.dumps({"role": "user", "content": "I prefer short answers. " + "x" * 200}) + "\n"
    return line.encode() * count


def test_a_transcript_over_8_mib_is_refused(cli, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    data = transcript_lines(EIGHT_MIB // 200)
    assert len(data) > EIGHT_MIB
    big.write_bytes(data)
    result = cli("memory", "extract", "--transcript", str(big), "--dry-run", "--json")
    assert result.exit_code == 6
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_input" and "larger than 8 MiB" in error["message"]


def test_a_transcript_within_the_bound_is_read(cli, tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_bytes(
        transcript_lines(3) + json.dumps({"role": "assistant", "content": "Noted."}).encode() + b"\n"
    )
    result = cli("memory", "extract", "--transcript", str(small), "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr


def test_transcript_dash_reads_stdin_with_the_same_bound(cli) -> None:
    small = transcript_lines(1) + json.dumps({"role": "assistant", "content": "Noted."}).encode() + b"\n"
    assert cli("memory", "extract", "--transcript", "-", "--dry-run", input=small).exit_code == 0
    big = cli("memory", "extract", "--transcript", "-", "--dry-run", input=transcript_lines(EIGHT_MIB // 200))
    assert big.exit_code == 6 and "standard input is larger than 8 MiB" in big.stderr


def test_an_endless_fifo_is_read_only_up_to_the_bound(cli, tmp_path: Path) -> None:
    fifo = tmp_path / "transcript.fifo"
    os.mkfifo(fifo)
    chunk = transcript_lines(1000)

    def feed() -> None:
        try:
            with open(fifo, "wb") as writer:
                for _ in range(EIGHT_MIB // len(chunk) + 100):  # more than the bound, then EOF
                    writer.write(chunk)
        except BrokenPipeError:
            pass  # the reader stopped at the bound

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    result = cli("memory", "extract", "--transcript", str(fifo), "--dry-run")
    feeder.join(timeout=30)
    assert result.exit_code == 6 and "larger than 8 MiB" in result.stderr


@pytest.mark.process
def test_dev_zero_as_a_transcript_is_refused_without_exhausting_memory(
    aibuddy_exe: list[str], env: dict[str, str]
) -> None:
    def limit_memory() -> None:  # an unbounded read would fail here instead of eating the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    result = subprocess.run(
        [*aibuddy_exe, "memory", "extract", "--transcript", "/dev/zero", "--dry-run"],
        env=env,
        capture_output=True,
        timeout=120,
        preexec_fn=limit_memory,
    )
    assert result.returncode == 6, result.stderr[-500:]
    assert (
        result.stderr.decode()
        == "error: transcript /dev/zero is larger than 8 MiB: pass only the latest turns\n"
    )


def test_extract_help_documents_the_bound(cli) -> None:
    assert "8 MiB" in cli("memory", "extract", "--help").stdout
