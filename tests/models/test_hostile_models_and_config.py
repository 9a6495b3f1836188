"""Hostile or broken models and configuration: bounded writes, bounded echoes, a timeout that
bounds the wall time, and settings that fall back with a warning instead of failing the command."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import run_in_process

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import ModelError
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.memory.extraction import Extractor, Message
from aibuddy_cli.models import calls as models
from aibuddy_cli.operations.loops.kb_ask import KnowledgeAgent
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault

CUE = [Message("user", "From now on, always answer in French."), Message("assistant", "D'accord.")]


TOPICS = [
    "Drinks green tea without sugar",
    "Cycles to work every day",
    "Lives in Berlin near the river",
    "Vegetarian since childhood",
    "Plays piano on weekends",
    "Chess club member",
    "Sailing is a summer hobby",
    "Writes services in Rust",
    "Loves Italian opera",
    "Hikes mountains in autumn",
]


def candidate(number: int) -> dict:
    return {
        "type": "user",
        "name": f"fact-{number}",
        "description": TOPICS[number],
        "body": f"body {number}",
        "salience": 0.9,
        "durable": True,
        "recoverable": False,
    }


# --- extraction writes at most max_writes records a reply ------------------------------------


@pytest.mark.process
def test_one_extraction_reply_writes_at_most_five_records(
    vault: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    memory = Session(vault, "demo", environ=model_env).memory
    fake_openai.reply_json({"candidates": [candidate(i) for i in range(8)]})
    result = Extractor(memory).run(CUE)
    assert len(result.written) == 5 and len(memory.list_records().records) == 5
    over = [d for d in result.decisions if "max_writes" in d.detail]
    assert [d.name for d in over] == ["fact-5", "fact-6", "fact-7"]
    assert all(d.outcome == "dropped" for d in over)
    logged = (vault.cache_dir / "logs" / "extraction.jsonl").read_text().splitlines()[-1]
    assert json.loads(logged)["decisions"][-1]["detail"] == "over [extraction] max_writes (5)"


@pytest.mark.process
def test_max_writes_is_configurable_and_a_flood_stays_bounded(
    vault: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("max_writes = 5\n", "max_writes = 2\n"))
    vault = Vault.open(vault.root)
    assert vault.config.extraction.max_writes == 2
    memory = Session(vault, "demo", environ=model_env).memory
    flood = [candidate(i) for i in range(3)] + [{"name": "x" * 2000, "type": "y" * 2000}] * 1000
    fake_openai.reply_json({"candidates": flood})
    result = Extractor(memory).run(CUE)
    assert len(result.written) == 2 and len(memory.list_records().records) == 2
    assert (
        len(result.decisions) < 40
        and result.decisions[-1].detail == "981 more: over [extraction] max_writes (2)"
    )
    assert len(json.dumps(to_json(result))) < 20_000


@pytest.mark.process
def test_a_flood_of_invalid_candidates_is_weighed_only_up_to_a_bound(
    vault: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    memory = Session(vault, "demo", environ=model_env).memory
    junk = {"name": "Bad Name " + "z" * 2000, "type": "user", "description": "d"}
    fake_openai.reply_json({"candidates": [junk] * 2000})
    result = Extractor(memory).run(CUE)
    assert result.written == [] and memory.list_records().records == []
    assert len(result.decisions) < 100
    assert "more: over 50 candidates in one reply" in result.decisions[-1].detail
    assert len(json.dumps(to_json(result))) < 50_000


# --- nothing of unbounded size from a model ------------------------------------------------


@pytest.mark.process
def test_a_huge_compaction_summary_is_cut_to_its_budget(
    vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("compact_at_tokens = 6000", "compact_at_tokens = 400"))
    vault = Vault.open(vault.root)
    tasks = Session(vault, "demo").tasks
    tasks.new("Long task")
    for i in range(12):
        tasks.add_message("t1", "user", f"message {i} " + "words " * 30)
    fake_openai.enqueue(content="A" * 1_000_000)
    environ = {"AIBUDDY_MODEL_COMPACT": "openai/compact-test", "AIBUDDY_TIMEOUT": "30"}
    assembler = Session(vault, "demo", environ=environ).context
    summary = assembler.assemble("t1").to_json()["summary"]
    assert summary["method"] == "model" and len(summary["text"]) <= 400 // 2 * 4
    assert any("cut to its budget" in w for w in assembler.warnings)
    cached = vault.root / "tasks" / "demo" / "t1" / "summary.json"
    assert cached.stat().st_size < 5_000


@pytest.mark.process
def test_kb_ask_echoes_a_bounded_answer_gaps_and_dropped_citations(
    vault: Vault, tmp_path: Path, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\n## Rollback\n\nRun `deployctl rollback`.\n")
    knowledge = Session(vault, "demo", environ={}).knowledge
    (doc,) = [o.doc for o in knowledge.import_paths([str(guide)], scope="system")]
    knowledge.publish(doc)
    tasks = Session(vault, "demo").tasks
    tasks.new("Ops")
    tasks.set_attached("t1", {doc: True})
    fake_openai.call_tools(("read_section", {"doc": doc, "anchor": "rollback"}))
    fake_openai.reply_json(
        {
            "answer": "Run deployctl rollback. " * 20_000,
            "citations": [{"doc": doc, "anchor": "rollback"}]
            + [{"doc": "x" * 2000, "anchor": "y" * 2000, "junk": ["z"] * 100}] * 500,
            "gaps": ["g" * 2000] * 500,
        }
    )
    agent = KnowledgeAgent(Session(Vault.open(vault.root), "demo", environ=model_env).knowledge, "t1")
    result = agent.ask("How do I roll back?")
    assert result.method == "model" and [c.anchor for c in result.citations] == ["rollback"]
    assert len(result.answer) <= 20_000
    assert len(result.gaps) == 20 and all(len(g) <= 500 for g in result.gaps)
    assert len(result.dropped_citations) == 20
    assert result.dropped_citations[0] == {"doc": "x" * 199 + "…", "anchor": "y" * 199 + "…"}
    assert len(json.dumps(to_json(result))) < 60_000


# --- AIBUDDY_TIMEOUT bounds the wall time of a model call ----------------------------------


def test_the_timeout_bounds_the_whole_call_including_a_slow_import(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def stuck_import() -> None:
        release.wait(60)  # a cold litellm import, a hung provider client: the call must not wait
        raise RuntimeError("released")

    monkeypatch.setattr(models, "_litellm", stuck_import)
    # As after an earlier call's import (what the call then waits on is its own thread's): the
    # import's own bound is another test's (test_models.py), so this one holds in any order.
    monkeypatch.setattr(models, "_litellm_module", object())
    settings = models.ModelSettings("recall", "openai/test", None, 0.3)
    outcome: list[BaseException] = []
    caller = threading.Thread(target=lambda: _call(settings, outcome), daemon=True)
    caller.start()
    caller.join(45)  # far below the 60 s a hang would take; generous on a busy machine
    try:
        assert not caller.is_alive(), "the call did not return within its timeout"
        assert isinstance(outcome[0], ModelError) and "timed out after 0.3s" in str(outcome[0])
    finally:
        release.set()


def _call(settings: models.ModelSettings, outcome: list[BaseException]) -> None:
    try:
        models.complete(settings, [{"role": "user", "content": "hi"}])
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        outcome.append(exc)


# --- bad model settings fall back with a warning that names them ---------------------------


@pytest.mark.parametrize(
    "config, environ, named",
    [
        ("default = 5\n", {}, "aibuddy.toml: [models] default must be a litellm model string, not 5"),
        ('default = "openai/test-model"\ntimeout = "abc"\n', {}, "[models] timeout must be a number"),
        ('default = "openai/test-model"\n', {"AIBUDDY_TIMEOUT": "abc"}, "AIBUDDY_TIMEOUT must be a number"),
        ('recall = ["a"]\n', {}, "aibuddy.toml: [models] recall must be a litellm model string"),
    ],
)
def test_a_bad_model_setting_falls_back_with_a_warning(
    vault: Vault, aibuddy_exe: list[str], config: str, environ: dict[str, str], named: str
) -> None:
    path = vault.root / "aibuddy.toml"
    path.write_text(
        path.read_text().replace("[models]\n", "[models]\n" + config).replace("timeout = 20\n", "")
    )
    Session(Vault.open(vault.root), "demo", environ={}).memory.save(
        "tea", type="user", description="Drinks green tea", body="No sugar."
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(vault.root.parent),
        "AIBUDDY_VAULT": str(vault.root),
        **environ,
    }
    for args in (["memory", "recall", "green tea", "--json"], ["--user", "demo", "memory", "recall", "tea"]):
        result = run_in_process(*args, env=env)
        assert result.returncode == 0, result.stderr
        assert named in result.stderr.decode() and "lexical" in result.stderr.decode()
    document = json.loads(run_in_process("memory", "recall", "green tea", "--json", env=env).stdout)
    assert document["method"] == "words+meaning" and [r["name"] for r in document["records"]] == ["tea"]


def test_model_settings_never_raise_for_bad_values() -> None:
    role = models.model_settings("recall", {"default": 5, "timeout": "abc"}, Settings.read({}))
    assert role.configured and role.model is None and "[models] default" in (role.problem or "")
    unused = models.model_settings("recall", {"timeout": "abc"}, Settings.read({}))
    assert not unused.configured and unused.problem is None  # no model: nothing to warn about
    with pytest.raises(ModelError, match=r"\[models\] default must be a litellm model string"):
        models.complete(role, [])


# --- aibuddy.toml: typos are said, never silently passed ------------------------------------


def test_unknown_keys_and_tables_get_a_warning_on_both_routes(
    vault: Vault, cli, aibuddy_exe: list[str]
) -> None:
    path = vault.root / "aibuddy.toml"
    text = path.read_text().replace("window = 200", "windw = 100")
    path.write_text("colour = 1\n" + text + '\n[modles]\ndefault = "openai/x"\n')
    expected = [
        "unknown key 'colour'",
        "unknown key in [recall]: 'windw' (did you mean window?)",
        "unknown table 'modles' (did you mean models?)",
    ]
    listed = cli("memory", "list", "--json")
    assert listed.exit_code == 0
    assert all(message in listed.stderr for message in expected), listed.stderr
    assert str(path) in listed.stderr
    env = {"PATH": "/usr/bin:/bin", "HOME": str(vault.root.parent), "AIBUDDY_VAULT": str(vault.root)}
    recalled = run_in_process("memory", "recall", "tea", "--json", env=env)  # the fast path
    assert recalled.returncode == 0
    assert all(message in recalled.stderr.decode() for message in expected)


def test_an_invalid_default_user_names_the_config_file(vault: Vault, aibuddy_exe: list[str]) -> None:
    path = vault.root / "aibuddy.toml"
    path.write_text(path.read_text().replace('default_user = "demo"', 'default_user = "Bob Smith"'))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(vault.root.parent), "AIBUDDY_VAULT": str(vault.root)}
    without = run_in_process("memory", "list", "--json", env=env)
    assert without.returncode == 2
    stderr = without.stderr.decode()
    assert f"{path}: default_user 'Bob Smith' is not a valid user name" in stderr
    assert "no current user" in stderr
    chosen = run_in_process("--user", "alice", "memory", "list", "--json", env=env)
    assert chosen.returncode == 0 and json.loads(chosen.stdout)["records"] == []


@pytest.mark.process
def test_recall_echoes_a_bounded_list_of_invented_names(
    vault: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    memory = Session(vault, "demo", environ=model_env).memory
    memory.save("tea", type="user", description="Drinks green tea", body="No sugar.")
    fake_openai.reply_json({"selected": ["tea.md"] + [f"invented-{i}-{'x' * 5000}.md" for i in range(3000)]})
    result = memory.recall("green tea")
    assert result.method == "model" and [r.name for r in result.records] == ["tea"]
    assert len(result.dropped) == 20 and all(len(name) <= 200 for name in result.dropped)
    assert "dropped 3000 name(s)" in " ".join(result.warnings)
