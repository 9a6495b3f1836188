from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from typer.testing import CliRunner

from aibuddy_cli.cli.app import app
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault, init_vault

REPO = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO / "sample_vault"
# Small documents written for these tests; they always travel with the repository.
FIXTURE_DOCS = Path(__file__).parent / "fixtures" / "docs"
STRINGS = FIXTURE_DOCS / "ch08-02-strings.md"  # Chinese, Rust-book-like: CJK anchors, `#` lines in code
BODY = FIXTURE_DOCS / "body.md"  # English, FastAPI-like: `{ #anchor }` headings, `/// note` blocks
SPEC = FIXTURE_DOCS / "spec.txt"  # CommonMark-spec-like: front matter closed by '...', `# foo` in fences
# The real documents beside the development checkout: an extra layer of checks where present.
CORPUS = REPO.parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="../shared/corpus is absent: it exists only beside the development checkout"
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's home, vault, model settings or provider keys."""
    for name in list(os.environ):
        if name.startswith(("AIBUDDY_", "OPENAI_", "LITELLM_", "ANTHROPIC_")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return init_vault(tmp_path / "vault", "demo")


@pytest.fixture
def memory(vault: Vault) -> MemoryService:
    return MemoryService(vault, "demo", environ={})


@pytest.fixture
def cli(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """Invoke the Typer app in-process against the test vault; stderr is kept apart."""
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None) -> Any:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def model_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every model role pointed at the fake server; provider settings come from litellm's own
    variables, as a user would set them."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    return {"AIBUDDY_MODEL": "openai/test-model", "AIBUDDY_TIMEOUT": "30"}


@pytest.fixture
def aibuddy_exe() -> list[str]:
    """The installed console script when present (as users run it), else the module."""
    script = Path(sys.executable).parent / "aibuddy"
    return [str(script)] if script.exists() else [sys.executable, "-m", "aibuddy_cli"]


def run_aibuddy(
    exe: list[str],
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*exe, *args], env=env, cwd=cwd, input=input, capture_output=True, timeout=120)
