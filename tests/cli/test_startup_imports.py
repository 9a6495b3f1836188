"""What a command imports before it answers: the fast path (`memory recall`, `kb search`,
`kb read`) none of the heavy modules, the git merge driver no Typer, `--help` neither litellm nor
the file watcher."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.process  # every test here starts a process or a server

HEAVY = (
    "typer", "click", "rich", "pydantic", "litellm", "markdown_it", "inotify_simple", "frontmatter",
    "kingfisher_sdk",
)  # fmt: skip


def heavy_after(code: str, env: dict[str, str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules a fresh interpreter holds after running code (which imports the fast
    path as `fastpath` and asserts what it answered)."""
    probe = (
        "import io, json, sys\n"
        "from aibuddy_cli.cli import fastpath\n"
        + code
        + f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_recall_fast_path_imports_no_heavy_module(vault: Vault, env: dict[str, str]) -> None:
    Session(vault, "demo", environ={}).memory.save(
        "tea", type="user", description="Drinks green tea", body="tea"
    )
    code = (
        "out = io.StringIO()\n"
        "code = fastpath.run(['memory', 'recall', 'tea', '--json'], out, sys.stderr)\n"
        "assert code == 0 and '\"tea\"' in out.getvalue(), (code, out.getvalue())\n"
    )
    assert heavy_after(code, env) == []


def test_a_sentence_saved_by_a_person_loads_no_secret_catalogue(tmp_path, env: dict[str, str]) -> None:
    """An explicit save is screened (it warns about a key), but the catalogue's scanner (0.3 s to
    load) is built only for a text that could hold a provider's key."""
    code = (
        "from aibuddy_cli.redaction.detect import holds_secret\n"
        "assert not holds_secret('Prefers concise weekly reports, due 2026-11-29 at https://example.com/x')\n"
        "assert not holds_secret('我喜欢简洁的周报格式。密码需要至少8位。')\n"
        "assert not holds_secret('commit 3f2a9c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f at 2026-12-06T10:16:00Z')\n"
        "assert holds_secret('password: hunter22')\n"  # the rules of its own need no catalogue
    )
    assert heavy_after(code, env, ("kingfisher_sdk",)) == []
    loaded = (
        "from aibuddy_cli.redaction.detect import holds_secret\n"
        "assert holds_secret('my token ' + 'ghp_' + 'q7Rk2ZpX9mWv4LbT8sYc1Nf6Hd3Gj5Ua0E1x')\n"
    )
    assert "kingfisher_sdk" in heavy_after(loaded, env, ("kingfisher_sdk",))


def test_the_kb_fast_path_imports_no_heavy_module(kb_vault: Vault, env: dict[str, str]) -> None:
    code = (
        "calls = (['kb', 'search', '字符串', '--json'], ['kb', 'read', 'ch08-02-strings', '更新字符串'])\n"
        "for args in calls:\n"
        "    out = io.StringIO()\n"
        "    assert fastpath.run(args, out, sys.stderr) == 0, out.getvalue()\n"
    )
    assert heavy_after(code, env) == []


def test_the_merge_driver_imports_no_command_line_framework(tmp_path, env: dict[str, str]) -> None:
    """git runs the driver once per file both sides changed: it skips Typer (~100 ms a file)."""
    record = "---\ndescription: Drinks tea\ntype: user\n---\ntea\n"
    sides = []
    for name, body in (("base", "tea"), ("ours", "green tea"), ("theirs", "tea")):
        path = tmp_path / f"{name}.md"
        path.write_text(record.replace("\ntea\n", f"\n{body}\n"))
        sides.append(str(path))
    code = (
        f"argv = ['git', 'merge-file', *{sides!r}, 'memory/demo/tea.md']\n"
        "assert fastpath.run(argv, sys.stdout, sys.stderr) == 0\n"
    )
    assert heavy_after(code, env, HEAVY[:5]) == []  # a record's header may need PyYAML (frontmatter)
    assert "green tea" in (tmp_path / "ours.md").read_text()


def modules_after_main(args: list[str], env: dict[str, str]) -> set[str]:
    """The modules a fresh interpreter holds after `aibuddy ARGS` (run through main) answered."""
    probe = (
        "import sys\n"
        "from aibuddy_cli.__main__ import main\n"
        f"try:\n    code = main({args!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print('\\n' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return set(result.stdout.splitlines()[-1].split())


def test_help_does_not_import_litellm(env: dict[str, str]) -> None:
    loaded = modules_after_main(["--help"], env)
    assert "litellm" not in loaded and "inotify_simple" not in loaded


def test_a_command_imports_only_its_own_group(vault: Vault, env: dict[str, str]) -> None:
    """`aibuddy memory save` imports the memory group's modules and none of the other commands'
    (the kb group alone is a twentieth of a second of every command's start-up)."""
    save = ["memory", "save", "tea", "-t", "user", "-d", "Drinks tea", "--body", "b"]
    prefix = "aibuddy_cli.cli."
    commands = {m.removeprefix(prefix) for m in modules_after_main(save, env) if m.startswith(prefix)}
    assert "memory" in commands
    others = {"kb", "kb_output", "table", "task", "init", "mcp", "worker", "git", "scan", "doctor"}
    assert not commands & others, commands


def test_recall_by_meaning_imports_no_numpy_nor_the_embedding_package(
    vault: Vault, env: dict[str, str]
) -> None:
    """Recall ranks by meaning by default, from the wheel's files read directly: neither numpy
    (80 ms to import), the wordllama package nor `tokenizers` is loaded for a question."""
    Session(vault, "demo", environ={}).memory.save(
        "dogs", type="user", description="Walked her dog by the river", body=""
    )
    code = (
        "out = io.StringIO()\n"
        "code = fastpath.run(['memory', 'recall', 'Does she have pets?', '--json'], out, sys.stderr)\n"
        "found = out.getvalue()\n"
        "assert code == 0 and '\"dogs\"' in found and 'words+meaning' in found, found\n"
    )
    assert heavy_after(code, env, ("numpy", "wordllama", "tokenizers", "safetensors")) == []
