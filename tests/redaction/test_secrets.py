"""Secrets never enter memory by themselves: automatic writes (extraction, consolidation, table
runs, summaries, compaction, the logs) redact credential-shaped values; a person's explicit write
keeps them with a warning; `aibuddy scan` reports them; the pre-commit hook refuses them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import child_env, ok, run_aibuddy, run_in_process
from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.extraction import Extractor, Message
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.vault import Vault, init_vault

KEY = "sk-proj-" + "Q7w8E9r0T1y2" * 3  # made up, shaped like an OpenAI key
GITHUB = "ghp_" + "aB3dE5gH7jK9" * 3
# litellm's first import counts against a model call's timeout; on a loaded machine it can take
# longer than the usual 30 s of the tests, and the fake server answers at once anyway.
SLOW = "180"
GIT_USER = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def git(repo: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *GIT_USER, *args], env=env, capture_output=True, text=True, check=check
    )


def talk(*turns: str) -> list[Message]:
    return [Message("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(turns)]


def vault_text(vault: Vault) -> str:
    """Everything the vault holds in files, the derived cache's logs included."""
    return "\n".join(
        path.read_text(errors="replace")
        for path in sorted(vault.root.rglob("*"))
        if path.is_file() and ".sqlite" not in path.name and "index" not in path.name
    )


# --- automatic writes ----------------------------------------------------------------------------


@pytest.mark.process
def test_extraction_stores_a_redacted_record_and_logs_the_kind_not_the_key(
    vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    memory = Session(vault, "demo", environ={**model_env, "AIBUDDY_TIMEOUT": SLOW}).memory
    fake_openai.reply_json(
        {
            "candidates": [
                {
                    "type": "reference",
                    "name": "openai-account",
                    "description": f"The user's OpenAI key is {KEY}",
                    "body": f"Use {KEY} for the staging project; the db password is hunter22.",
                    "salience": 0.9,
                    "durable": True,
                    "recoverable": False,
                },
                {
                    "type": "user",
                    "name": KEY.lower(),
                    "description": "A key as a name",
                    "body": "x",
                    "salience": 0.9,
                    "durable": True,
                    "recoverable": False,
                },
            ]
        }
    )
    result = Extractor(memory).run(
        talk("Remember that my OpenAI key for staging is " + KEY + ", always use it.", "Noted.")
    )
    assert result.written == ["openai-account"], result.decisions
    record = memory.show("openai-account")
    assert record.provenance == "auto"
    assert record.description == "The user's OpenAI key is [redacted: api key]"
    assert (
        record.body
        == "Use [redacted: api key] for the staging project; the db password is [redacted: password]."
    )
    created, named = [d for d in result.decisions if d.step in ("write", "candidate")]
    assert created.outcome == "created" and created.detail.endswith("; redacted: 2 api keys, 1 password")
    assert named.outcome == "dropped" and named.name is None and "looks like 1 api key" in named.detail
    log = (vault.cache_dir / "logs" / "extraction.jsonl").read_text()
    assert "redacted: 2 api keys, 1 password" in log
    assert KEY not in log and KEY.lower() not in log and "hunter22" not in log
    assert KEY not in vault_text(vault) and KEY.lower() not in vault_text(vault)


@pytest.mark.process
def test_extraction_of_the_same_secret_again_is_a_no_op(
    vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    memory = Session(vault, "demo", environ={**model_env, "AIBUDDY_TIMEOUT": SLOW}).memory
    candidate = {
        "type": "reference",
        "name": "staging-key",
        "description": "Staging uses the team key",
        "body": f"Key: {KEY}",
        "salience": 0.9,
        "durable": True,
        "recoverable": False,
    }
    for _ in range(2):
        fake_openai.reply_json({"candidates": [candidate]})
        result = Extractor(memory).run(talk("Remember: staging always uses the team key " + KEY, "Noted."))
    assert [d.outcome for d in result.decisions][-1] == "no-op"
    assert memory.show("staging-key").body == "Key: [redacted: api key]"


def test_the_auto_write_operations_redact_whatever_calls_them(memory: MemoryService) -> None:
    memory.create_auto("k", type="reference", description=f"key {KEY}", body=f"token {GITHUB}")
    assert (memory.show("k").description, memory.show("k").body) == (
        "key [redacted: api key]",
        "token [redacted: token]",
    )
    memory.update_auto("k", description="key", body=f"password: hunter22 and {KEY}")
    assert memory.show("k").body == "password: [redacted: password] and [redacted: api key]"


@pytest.fixture
def consolidating(cli, vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("every = 50", "every = 2"))
    ok(cli("task", "new", "Set up staging", "--json"))  # before a model is set: no background pass
    ok(
        cli(
            "task",
            "add-message",
            "t1",
            # What the reply cites must be stated here: consolidation checks the words.
            f"Maria Lopez's staging deploy token is {GITHUB}; key {KEY}; login password: hunter22",
            "--role",
            "user",
            "--json",
        )
    )
    ok(cli("task", "add-message", "t1", "Noted.", "--role", "assistant", "--json"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    monkeypatch.setenv("AIBUDDY_MODEL_CONSOLIDATE", "openai/consolidate-test")
    monkeypatch.setenv("AIBUDDY_TIMEOUT", SLOW)
    for name in ("CONTACTS", "KNOWLEDGE", "TASKS"):
        monkeypatch.setenv(f"AIBUDDY_CONSOLIDATE_{name}", "1")
    return fake_openai


@pytest.mark.process
def test_consolidation_redacts_memory_contacts_rows_summary_plan_and_its_log(
    cli, vault: Vault, consolidating: FakeOpenAI
) -> None:
    ok(cli("table", "create", "servers", "-c", "host:str", "-c", "login:str", "--json"))
    consolidating.reply_json(
        {
            "memory": [
                {
                    "type": "project",
                    "name": "staging-access",
                    "description": "Staging deploys use Maria's token",
                    "body": f"Token {GITHUB}",
                    "evidence": [1],
                }
            ],
            "contacts": [
                {"name": "Maria Lopez", "bio": f"Deploys staging with {GITHUB}", "evidence": [1]},
                {"name": KEY, "bio": "a key as a name", "evidence": [1]},
            ],
            "knowledge": [
                {
                    "table": "servers",
                    "rows": [{"host": "staging", "login": "password: hunter22"}],
                    "evidence": [1],
                }
            ],
            "summary": {"text": f"Setting up staging with key {KEY}.", "evidence": [1, 2]},
            "tasks": {"plan": f"1. export OPENAI_API_KEY={KEY}", "evidence": [1]},
        }
    )
    decisions = ok(cli("task", "consolidate", "t1", "--json"))["passes"][0]["decisions"]
    details = {(d["step"], d["outcome"]): d["detail"] for d in decisions}
    assert details[("memory", "created")].endswith("; redacted: 1 token")
    assert details[("contacts", "created")].endswith("; redacted: 1 token")
    assert details[("contacts", "dropped")] == "the name looks like a credential"
    assert details[("knowledge", "added")] == "1 row(s); redacted: 1 password"
    assert details[("summaries", "updated")] == "through message 2; redacted: 1 api key"
    assert details[("tasks", "updated")] == "plan; redacted: 1 api key"
    assert ok(cli("memory", "show", "staging-access", "--json"))["body"] == "Token [redacted: token]"
    contacts = ok(cli("table", "filter", "contacts", "--json"))["tables"][0]["rows"]
    assert [(r["name"], r["bio"]) for r in contacts] == [
        ("Maria Lopez", "Deploys staging with [redacted: token]")
    ]
    servers = ok(cli("table", "filter", "servers", "--json"))["tables"][0]["rows"]
    assert servers[0]["login"] == "password: [redacted: password]"
    shown = ok(cli("task", "show", "t1", "--json"))
    assert shown["consolidation"]["summary"] == "Setting up staging with key [redacted: api key]."
    assert "[redacted: api key]" in json.dumps(shown)
    log = (vault.root / ".aibuddy/logs/consolidation.jsonl").read_text()
    assert "redacted: 1 token" in log and KEY not in log and GITHUB not in log
    # Only the task's own messages (the user's words, not memory) still hold the values.
    messages = vault.root / "tasks/demo/t1"
    outside = [
        p
        for p in vault.root.rglob("*")
        if p.is_file() and messages not in p.parents and KEY in p.read_text(errors="replace")
    ]
    assert outside == []


def test_a_table_update_run_redacts_the_rows_the_model_writes(cli, vault: Vault) -> None:
    ok(cli("table", "create", "vendors", "-c", "name:str", "-c", "note:str", "--json"))
    model = ScriptedModel()
    model.call(("ask", {"question": "What vendors are there?"}))
    model.answer("None yet.")
    model.call(("add_rows", {"table": "vendors", "rows": [{"name": "Acme", "note": f"api key {KEY}"}]}))
    model.call(("update_rows", {"table": "vendors", "filter": "True", "values": {"note": f"token {GITHUB}"}}))
    model.call(("create_table", {"name": "keys", "description": f"Keys such as {KEY}"}))
    model.answer("Added Acme.")
    session = Session(Vault.open(vault.root), "demo", environ={"AIBUDDY_MODEL_TABLES": "openai/t"})
    TableAgent(session.tables, session.settings, connect=lambda settings: model).change("update", "Add Acme")
    rows = ok(cli("table", "filter", "vendors", "--json"))["tables"][0]["rows"]
    assert rows[0]["note"] == "token [redacted: token]"
    assert session.warnings == [
        "update, a row of vendors: redacted 1 api key (automatic writes never store such values)",
        "update, a value of vendors: redacted 1 token (automatic writes never store such values)",
        "update, the description of keys: redacted 1 api key (automatic writes never store such values)",
    ]
    assert ok(cli("table", "show", "keys", "--json"))["description"] == "Keys such as [redacted: api key]"
    journal = (vault.root / ".aibuddy/logs/tables.jsonl").read_text()
    assert KEY not in journal and GITHUB not in journal


@pytest.mark.process
def test_summaries_and_compaction_are_redacted(
    vault: Vault, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    guide = tmp_path / "guide.md"
    guide.write_text(f"# Staging\n\nExport OPENAI_API_KEY={KEY} before deploying.\n")
    Session(vault, "demo", environ={}).knowledge.import_paths([str(guide)], scope="system")
    environ = {
        "AIBUDDY_MODEL_SUMMARY": "openai/s",
        "AIBUDDY_MODEL_COMPACT": "openai/c",
        "AIBUDDY_TIMEOUT": SLOW,
    }
    service = Session(vault, "demo", environ=environ).knowledge
    fake_openai.enqueue(content=f"How to deploy staging with the key {KEY}.")
    (outcome,) = service.summarize(["system/guide"])
    assert outcome.summary == "How to deploy staging with the key [redacted: api key]."
    assert service.warnings == [
        "system/guide summary: redacted 1 api key (automatic writes never store such values)"
    ]
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 100"))
    tasks = Session(Vault.open(vault.root), "demo").tasks
    task = tasks.new("Long task")
    for i in range(10):
        tasks.add_message(task.id, "user" if i % 2 == 0 else "assistant", f"message {i} " + "words " * 30)
    fake_openai.enqueue(content=f"The user shared the key {KEY} and asked ten things.")
    context = Session(Vault.open(vault.root), "demo", environ=environ).context.assemble(task.id).to_json()
    assert context["summary"]["text"].startswith("The user shared the key [redacted: api key] and")
    cached = (vault.root / "tasks/demo" / task.id / "summary.json").read_text()
    assert KEY not in cached and "[redacted: api key]" in cached


# --- explicit writes, scan, and git ---------------------------------------------------------------


@pytest.mark.process
def test_an_explicit_save_keeps_the_key_warns_and_scan_finds_it(
    vault: Vault, env: dict[str, str], aibuddy_exe: list[str]
) -> None:
    saved = run_aibuddy(
        aibuddy_exe, "memory", "save", "deploy-key", "--type", "reference", "--description", "The deploy key",
        "--body", f"line one\nkey: {KEY}\n", env=env,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    stderr = saved.stderr.decode()
    assert stderr == (
        "warning: memory save deploy-key: the record holds what looks like 1 api key; kept because you "
        "wrote it explicitly (automatic writes redact such values; `aibuddy scan` lists them)\n"
    )
    assert KEY in (vault.root / "memory/demo/deploy-key.md").read_text()
    added = run_aibuddy(
        aibuddy_exe, "table", "add", "logins", "--row", json.dumps({"pw": "password: hunter22"}), env=env
    )
    assert added.returncode == 3 and b"warning" not in added.stderr  # no such table: nothing kept
    clean = run_in_process("scan", "--json", env=child_env(vault.root), cwd=vault.root)
    found = json.loads(clean.stdout)
    assert clean.returncode == 4, clean.stderr
    assert found == {
        "findings": [
            {"path": "memory/demo/deploy-key.md", "line": 12, "kind": "api key", "hint": "sk-proj-…"}
        ],
        "scanned": found["scanned"],
    }
    assert found["scanned"] >= 2 and KEY not in clean.stdout.decode()
    text = run_in_process("scan", str(vault.root), env=env)
    assert text.returncode == 4
    assert text.stdout.decode().splitlines()[0] == "memory/demo/deploy-key.md:12: api key (sk-proj-…)"
    run_in_process("memory", "update", "deploy-key", "--body", "key: in the team vault", env=env)
    after = run_in_process("scan", "--json", env=env)
    assert after.returncode == 0 and json.loads(after.stdout)["findings"] == []


def test_an_explicit_table_add_keeps_the_value_with_a_warning(
    vault: Vault, env: dict[str, str], aibuddy_exe
) -> None:
    made = run_in_process("table", "create", "logins", "-c", "site:str", "-c", "note:str", env=env)
    assert made.returncode == 0, made.stderr
    row = json.dumps({"site": "wiki", "note": "password: hunter22"})
    added = run_in_process("table", "add", "logins", "--row", row, "--json", env=env)
    assert added.returncode == 0, added.stderr
    assert added.stderr.decode().startswith(
        "warning: table add logins: a row holds what looks like 1 password; kept because you wrote it"
    )
    assert "hunter22" in (vault.root / "tables/personal/demo/logins.csv").read_text()
    assert "hunter22" not in added.stderr.decode()


@pytest.mark.process
def test_git_setup_installs_a_hook_that_refuses_a_record_with_a_key(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    repo = tmp_path / "repo"
    init_vault(repo / "vault", "demo")
    env = child_env(repo / "vault")
    git(repo, "init", "-q", env=env)
    setup = run_in_process("git", "setup", "--json", env=env)
    assert setup.returncode == 0, setup.stderr
    hook = json.loads(setup.stdout)["pre_commit"]
    assert hook == {"path": str(repo / ".git/hooks/pre-commit"), "installed": True, "reason": None}
    git(repo, "add", "-A", env=env)
    assert git(repo, "commit", "-qm", "vault", env=env, check=False).returncode == 0  # clean: committed
    record = repo / "vault/memory/demo/deploy-key.md"
    saved = run_aibuddy(
        aibuddy_exe, "memory", "save", "deploy-key", "--type", "reference", "--description", "d",
        "--body", f"key {KEY}", env=env,
    )  # fmt: skip
    assert saved.returncode == 0 and record.exists()
    git(repo, "add", "-A", env=env)
    refused = git(repo, "commit", "-qm", "key", env=env, check=False)
    assert refused.returncode != 0
    assert "memory/demo/deploy-key.md:11: api key (sk-proj-…)" in refused.stderr  # git shows hooks on stderr
    assert "commit refused" in refused.stderr and "--no-verify" in refused.stderr
    assert KEY not in refused.stdout + refused.stderr
    assert git(repo, "log", "--oneline", env=env).stdout.count("\n") == 1
    # What is judged is the staged blob, not the working tree: fix the file without staging it.
    record.write_text(record.read_text().replace(KEY, "[removed]"))
    assert git(repo, "commit", "-qm", "key", env=env, check=False).returncode != 0
    bypass = git(repo, "commit", "-qm", "key", "--no-verify", env=env, check=False)
    assert bypass.returncode == 0, bypass.stderr
    again = run_in_process("git", "setup", "--json", env=env)
    assert json.loads(again.stdout)["pre_commit"]["installed"] is True  # its own hook: rewritten


def vault_repository(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A vault that is a git repository of its own, and the environment of aibuddy in it."""
    repo = tmp_path / "repo"
    init_vault(repo, "demo")
    env = child_env(repo)
    git(repo, "init", "-q", env=env)
    return repo, env


@pytest.mark.process
def test_git_setup_leaves_a_foreign_hook_alone_and_respects_core_hooks_path(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    repo, env = vault_repository(tmp_path)
    git(repo, "config", "core.hooksPath", "githooks", env=env)
    setup = run_in_process("git", "setup", "--json", env=env)
    assert json.loads(setup.stdout)["pre_commit"]["path"] == str(repo / "githooks/pre-commit")
    assert (repo / "githooks/pre-commit").read_text().startswith("#!/bin/sh\n# aibuddy pre-commit hook")
    foreign = repo / "githooks/pre-commit"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    again = run_in_process("git", "setup", "--json", env=env)
    assert again.returncode == 0
    hook = json.loads(again.stdout)["pre_commit"]
    assert hook["installed"] is False and "not aibuddy's" in hook["reason"]
    assert foreign.read_text() == "#!/bin/sh\nexit 0\n"
    assert "pre-commit secrets check not installed" in again.stderr.decode()


@pytest.mark.process
def test_the_hook_falls_back_to_aibuddy_on_path_and_refuses_when_there_is_none(
    tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    import sys

    repo, env = vault_repository(tmp_path)
    assert run_in_process("git", "setup", env=env).returncode == 0
    hook = repo / ".git/hooks/pre-commit"
    assert sys.executable in hook.read_text()  # found at set-up: the running interpreter
    hook.write_text(hook.read_text().replace(sys.executable, str(tmp_path / "gone/python")))
    (repo / "memory/demo").mkdir(parents=True, exist_ok=True)
    (repo / "memory/demo/k.md").write_text(f"key {KEY}\n")
    git(repo, "add", "-A", env=env)
    bin_dir = tmp_path / "bin"  # `aibuddy` on PATH: a script running the same package
    bin_dir.mkdir()
    script = bin_dir / "aibuddy"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m aibuddy_cli "$@"\n')
    script.chmod(0o755)
    tools = tmp_path / "tools"  # only what the hook needs besides aibuddy: sh and git
    tools.mkdir()
    for name in ("sh", "git"):
        (tools / name).symlink_to(shutil.which(name) or f"/usr/bin/{name}")
    on_path = {**env, "PATH": f"{bin_dir}:{tools}"}
    refused = git(repo, "commit", "-qm", "key", env=on_path, check=False)
    assert refused.returncode != 0 and "k.md:1: api key (sk-proj-…)" in refused.stderr
    nowhere = {**env, "PATH": str(tools)}
    missing = git(repo, "commit", "-qm", "key", env=nowhere, check=False)
    assert missing.returncode != 0 and "aibuddy is not installed here" in missing.stderr
    assert git(repo, "commit", "-qm", "key", "--no-verify", env=nowhere, check=False).returncode == 0


# The shapes the hand-written patterns stored verbatim (issue 33), through two automatic paths.
MISSED_BEFORE = [
    "redis://:S3cretRedisPass@cache:6379/0",
    "密码是：Winter2024，别外传",
    "the password for the staging db is Winter2024!",
    "password is: Hunter2xyz",
    "Authorization: Basic YWxpY2U6c2VjcmV0LXBhc3M5",
    "whsec_" + "Nq8rT2vW5yZ1bC4dF7gH0jK3mP6sU9xA",
    "hf_" + "JewMMsfGwzAbcgCPoZwfFvMIAUmCkoBYAR",
    "npm_" + "IZsNbNP0nqdzyPifDaH7pbek610MH6z1P2Qr",
    "DB_PASS=Tr0ub4dor&3",
    '{"user": "bob", "pass": "$uper$ecret9"}',
]
SECRETS = [
    "S3cretRedisPass", "Winter2024", "Hunter2xyz", "YWxpY2U6c2VjcmV0LXBhc3M5",
    "Nq8rT2vW5yZ1bC4dF7gH0jK3mP6sU9xA", "JewMMsfGwzAbcgCPoZwfFvMIAUmCkoBYAR",
    "IZsNbNP0nqdzyPifDaH7pbek610MH6z1P2Qr", "Tr0ub4dor&3", "$uper$ecret9",
]  # fmt: skip


@pytest.mark.process
def test_the_shapes_the_old_patterns_kept_never_reach_the_vault(
    vault: Vault, model_env: dict[str, str], fake_openai: FakeOpenAI, env: dict[str, str], tmp_path: Path
) -> None:
    """A model's record and an imported transcript holding each of them: stored redacted, and
    `aibuddy scan` (so the pre-commit check) finds nothing left."""
    memory = Session(vault, "demo", environ={**model_env, "AIBUDDY_TIMEOUT": SLOW}).memory
    body = "\n".join(MISSED_BEFORE)
    fake_openai.reply_json({"candidates": [{
        "type": "reference", "name": "staging-access", "description": "How staging is reached",
        "body": body, "salience": 0.9, "durable": True, "recoverable": False,
    }]})  # fmt: skip
    result = Extractor(memory).run(talk("Remember how we reach staging:\n" + body, "Noted."))
    assert result.written == ["staging-access"], result.decisions
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(
        "".join(json.dumps({"role": "user", "content": line}) + "\n" for line in MISSED_BEFORE)
    )
    assert run_in_process("task", "new", "Staging", env=env).returncode == 0
    done = run_in_process("task", "import", "t1", "--transcript", str(transcript), env=env)
    assert done.returncode == 0, done.stderr
    stored = vault_text(vault)
    assert [secret for secret in SECRETS if secret in stored] == []
    assert stored.count("[redacted: ") >= 2 * len(MISSED_BEFORE)
    assert run_in_process("scan", str(vault.root), env=env).returncode == 0
