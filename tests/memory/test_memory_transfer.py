"""Memories moving in from other tools (Claude Code's auto memory, mem0, JSONL) through the
reconcile path, and out again (`memory export`): byte for byte, telemetry included."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ok, run_in_process

from aibuddy_cli.vault import Vault, init_vault

FIXTURES = Path(__file__).parents[1] / "fixtures"
AUTO_MEMORY = FIXTURES / "claude-code-memory"

GITHUB_TOKEN = "ghp_" + "q7Rk2ZpX9mWv4Lb" + "T8sYc1Nf6Hd3Gj5Ua0E"  # made up, shaped like one


def imported(cli, *args: str) -> dict:
    return ok(cli("import", *args, "--json"))


def outcomes(result: dict) -> dict[str, str]:
    return {d.get("name", d["detail"]): d["outcome"] for d in result["decisions"]}


def test_claude_codes_auto_memory_comes_in_as_auto_records_with_their_types(cli, vault: Vault) -> None:
    dry = imported(cli, "claude-code-memory", str(AUTO_MEMORY), "--dry-run")
    assert dry["written"] == [] and not (vault.root / "memory/demo").exists()
    assert sorted(d["outcome"] for d in dry["decisions"]) == ["dropped"] + ["would-create"] * 4
    done = imported(cli, "claude-code-memory", str(AUTO_MEMORY))
    assert sorted(done["written"]) == [
        "grafana-latency",
        "merge-freeze",
        "no-mocked-databases-in-integration-tests",
        "user_role",
    ]
    shown = ok(cli("memory", "show", "no-mocked-databases-in-integration-tests", "--json"))
    assert shown["type"] == "feedback" and shown["provenance"] == "auto"
    assert "**How to apply:** every test under tests/integration/" in shown["body"]
    assert ok(cli("memory", "show", "grafana-latency", "--json"))["type"] == "reference"
    again = imported(cli, "claude-code-memory", str(AUTO_MEMORY))
    assert again["written"] == [] and sorted(outcomes(again).values()).count("no-op") == 4


def test_a_persons_record_is_never_overwritten_by_an_import(cli, vault: Vault) -> None:
    description = "Alice is a data engineer; ten years of Go, new to React"
    ok(cli("memory", "save", "user_role", "--type", "user", "-d", description, "--body", "Mine.", "--json"))
    before = (vault.root / "memory/demo/user_role.md").read_bytes()
    done = imported(cli, "claude-code-memory", str(AUTO_MEMORY))
    assert "user_role" not in done["written"]
    assert outcomes(done)["user_role"] in ("protected", "no-op")
    assert (vault.root / "memory/demo/user_role.md").read_bytes() == before


def test_mem0_and_plain_jsonl_come_in_the_same_way(cli, vault: Vault, tmp_path: Path) -> None:
    done = imported(cli, "mem0", str(FIXTURES / "mem0-export.json"))
    assert len(done["written"]) == 2 and outcomes(done)["item 3: no memory text"] == "dropped"
    record = ok(cli("memory", "show", done["written"][0], "--json"))
    assert record["type"] == "user" and record["provenance"] == "auto"
    lines = tmp_path / "memories.jsonl"
    lines.write_text(
        json.dumps({"name": "standup", "type": "project", "description": "Daily standup at 9:30", "body": ""})
        + "\nnot json\n"
        + json.dumps(
            {
                "name": "key",
                "type": "reference",
                "description": "Deploy key",
                "body": GITHUB_TOKEN,
            }
        )
        + "\n"
    )
    done = imported(cli, "jsonl", str(lines))
    assert sorted(done["written"]) == ["key", "standup"] and outcomes(done)["line 2: not JSON"] == "dropped"
    assert GITHUB_TOKEN not in (vault.root / "memory/demo/key.md").read_text()  # redacted


def test_export_then_import_into_an_empty_vault_gives_the_same_files(
    cli, vault: Vault, tmp_path: Path, env: dict[str, str]
) -> None:
    ok(
        cli(
            "memory",
            "save",
            "tea",
            "--type",
            "user",
            "--description",
            "Drinks green tea",
            "--body",
            "Sencha, 70°C.\n",
            "--json",
        )
    )
    deploys = ("deploys", "--type", "project", "--description", "Deploys on Tuesdays", "--json")
    ok(cli("memory", "save", *deploys))
    ok(cli("memory", "recall", "green tea", "--json"))  # telemetry: recallCount 1, lastRecalledAt
    exported = run_in_process("memory", "export", env=env)
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 2
    other = init_vault(tmp_path / "other", "demo")
    other_env = {**env, "AIBUDDY_VAULT": str(other.root)}
    done = run_in_process("import", "jsonl", "-", "--json", env=other_env, input=exported.stdout)
    assert sorted(json.loads(done.stdout)["written"]) == ["deploys", "tea"]
    for name in ("tea", "deploys"):
        assert (other.root / f"memory/demo/{name}.md").read_bytes() == (
            vault.root / f"memory/demo/{name}.md"
        ).read_bytes()
    assert "recallCount: 1" in (other.root / "memory/demo/tea.md").read_text()
    # Again: nothing changes; a different record of that name is kept, never overwritten.
    (other.root / "memory/demo/deploys.md").write_text(
        (other.root / "memory/demo/deploys.md").read_text().replace("Tuesdays", "Fridays")
    )
    again = json.loads(
        run_in_process("import", "jsonl", "-", "--json", env=other_env, input=exported.stdout).stdout
    )
    assert outcomes(again) == {"tea": "no-op", "deploys": "kept"}
    assert "Fridays" in (other.root / "memory/demo/deploys.md").read_text()


def test_export_for_claude_code_is_a_folder_its_auto_memory_reads(cli, vault: Vault, tmp_path: Path) -> None:
    ok(
        cli(
            "memory",
            "save",
            "tea",
            "--type",
            "feedback",
            "--description",
            "Keep answers short",
            "--body",
            "Two lines.",
            "--json",
        )
    )
    folder = tmp_path / "memory"
    result = ok(cli("memory", "export", "--format", "claude-code", "--output", str(folder), "--json"))
    assert result["records"] == 1
    assert "[Keep answers short](tea.md)" in (folder / "MEMORY.md").read_text()
    topic = (folder / "tea.md").read_text()
    assert topic.startswith("---\nname: tea\ndescription: Keep answers short\ntype: feedback\n---\n")
    other = init_vault(tmp_path / "other", "demo")
    back = run_in_process("--vault", str(other.root), "import", "claude-code-memory", str(folder), "--json")
    assert json.loads(back.stdout)["written"] == ["tea"]
    assert "Two lines." in (other.root / "memory/demo/tea.md").read_text()
    refused = cli("memory", "export", "--format", "claude-code")
    assert refused.exit_code == 6 and "--output DIR" in refused.stderr
