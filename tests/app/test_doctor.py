"""`aibuddy doctor`: one line per thing that must hold for the vault to work, exit 4 when one does
not, and each failing line says what is wrong and what to run."""

from __future__ import annotations

import json
import subprocess

import pytest
from fake_openai import FakeOpenAI
from helpers import run_in_process

from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.process  # every test here starts a process or a server


def doctor(env: dict[str, str]) -> tuple[int, dict[str, dict[str, object]], str]:
    done = run_in_process("doctor", "--json", env=env)
    document = json.loads(done.stdout)
    return done.returncode, {check["name"]: check for check in document["checks"]}, done.stdout.decode()


def test_a_fresh_vault_is_healthy_line_by_line(vault: Vault, env: dict[str, str]) -> None:
    code, checks, _ = doctor(env)
    assert code == 0 and all(check["ok"] for check in checks.values())
    assert checks["vault"]["detail"] == f"{vault.root} (from AIBUDDY_VAULT)"
    assert checks["user"]["detail"] == "demo (from AIBUDDY_USER)"
    assert checks["store"]["detail"] == "files in the folder"
    assert "deterministic path" in str(checks["model for recall"]["detail"])
    assert str(checks["secret detector"]["detail"]).startswith("kingfisher-secret-scanner ")
    text = run_in_process("doctor", env=env).stdout.decode().splitlines()
    assert text[0].startswith("ok") and "vault:" in text[0]


def test_what_is_wrong_is_named_and_exits_4(vault: Vault, env: dict[str, str]) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + "\nrecal_window = 5\n")
    (vault.root / "memory/demo").mkdir(parents=True)
    (vault.root / "memory/demo/broken.md").write_text("---\nname: [unclosed\n---\n")
    assert run_in_process("memory", "list", env=env).returncode == 0  # builds the memory index
    index = vault.memory_index_path("demo")
    index.write_bytes(b"not a database" * 100)
    code, checks, _ = doctor(env)
    assert code == 4
    assert not checks["configuration"]["ok"] and "recal_window" in str(checks["configuration"]["detail"])
    assert not checks["memory index"]["ok"] and "delete it" in str(checks["memory index"]["detail"])
    assert not checks["memory records"]["ok"] and "broken" in str(checks["memory records"]["detail"])


def test_git_without_the_merge_driver_fails_until_git_setup(vault: Vault, env: dict[str, str]) -> None:
    subprocess.run(["git", "init", "-q"], cwd=vault.root, check=True)
    config = vault.root / ".git/config"
    config.write_text("\n".join(line for line in config.read_text().splitlines() if "aibuddy" not in line))
    assert "merge=aibuddy" in (vault.root / ".gitattributes").read_text()
    code, checks, _ = doctor(env)
    assert code == 4 and "aibuddy git setup" in str(checks["merge driver"]["detail"])
    assert run_in_process("git", "setup", env=env).returncode == 0
    code, checks, _ = doctor(env)
    assert code == 0 and checks["merge driver"]["ok"]


def test_each_model_role_is_asked_once_within_a_bound(
    vault: Vault, env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    answering = {
        **env,
        "AIBUDDY_MODEL": "openai/doctor-test",
        "AIBUDDY_MODEL_EMBEDDING": "openai/embedding-test",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": fake_openai.url,
        "AIBUDDY_TIMEOUT": "30",
    }
    before = len(fake_openai.requests)
    code, checks, _ = doctor(answering)
    assert checks["model for recall"]["ok"] and "answers" in str(checks["model for recall"]["detail"])
    # Every role but embedding shares one model and endpoint: one request for all of them (the
    # embedding role's model is a chat request to the same fake server too).
    assert len(fake_openai.requests) - before == 2
    assert code == 0
    closed = {**answering, "AIBUDDY_MODEL_EMBEDDING": "openai/x", "OPENAI_API_BASE": "http://127.0.0.1:9/v1"}
    code, checks, _ = doctor(closed)
    assert code == 4 and not checks["model for embedding"]["ok"]
