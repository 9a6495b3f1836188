"""The environment's settings (aibuddy_cli/settings.py): each variable declared once, read in one place."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest

import aibuddy_cli
from aibuddy_cli.app.session import Session
from aibuddy_cli.settings import VARIABLES, Settings
from aibuddy_cli.vault import Vault

PACKAGE = Path(aibuddy_cli.__file__).parent
# A variable looked up: environ.get("AIBUDDY_…"), environ["AIBUDDY_…"], os.getenv("AIBUDDY_…"),
# with a plain or an f-string name.
LOOKUP = re.compile(r"""(?:\.get|getenv|\[)\(?\s*f?["']AIBUDDY_""")


def test_no_module_but_settings_looks_a_variable_up() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "settings.py" or path.parent != PACKAGE
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if LOOKUP.search(line)
    ]
    assert found == []


def test_settings_reads_every_variable_it_declares_and_none_it_does_not() -> None:
    source = inspect.getsource(Settings.read)
    read = set(re.findall(r"""f?["'](AIBUDDY_[A-Z_]*)""", source))
    patterns = {"AIBUDDY_MODEL_": "<ROLE>", "AIBUDDY_CONSOLIDATE_": "<CATEGORY>"}
    read = {name + patterns.get(name, "") for name in read}
    assert read == {variable.name for variable in VARIABLES}


def test_each_variable_sets_its_field() -> None:
    given = {
        "AIBUDDY_VAULT": "/v",
        "AIBUDDY_USER": "bob",
        "AIBUDDY_PERSONAL_VAULT": "/p",
        "AIBUDDY_STORE_URL": "postgresql://h/db",
        "AIBUDDY_MODEL": "openai/a",
        "AIBUDDY_MODEL_RECALL": "openai/b",
        "AIBUDDY_TIMEOUT": "5",
        "AIBUDDY_IMPORT_TIMEOUT": "60",
        "AIBUDDY_WORKER": "1",
        "AIBUDDY_WORKER_IDLE": "30",
        "AIBUDDY_WATCH": "1",
        "AIBUDDY_WATCH_IDLE": "90",
        "AIBUDDY_CONSOLIDATE_TASKS": "1",
        "AIBUDDY_CONSOLIDATE_CONTACTS": "0",
    }
    settings = Settings.read(given)
    assert (settings.vault, settings.user, settings.personal_vault) == ("/v", "bob", "/p")
    assert settings.store_url == "postgresql://h/db"
    assert (settings.model, dict(settings.role_models)) == ("openai/a", {"recall": "openai/b"})
    assert (settings.timeout, settings.import_timeout) == ("5", "60")
    assert (settings.worker, settings.worker_idle) == (True, 30.0)
    assert (settings.watch, settings.watch_idle) == ("on", "90")
    assert dict(settings.consolidate) == {"contacts": False, "tasks": True}
    assert Settings.read({}) == Settings(environ={}, process=False)  # nothing set: every default


@pytest.mark.parametrize(
    ("given", "mode"),
    [("auto", "auto"), ("ON", "on"), (" off ", "off"), ("0", "off"), ("true", "on"), ("sometimes", None)],
)
def test_the_watch_mode_is_read_in_its_spellings_and_nothing_else(given: str, mode: str | None) -> None:
    assert Settings.read({"AIBUDDY_WATCH": given}).watch == mode


def test_the_worker_serves_the_process_environment_unless_told_otherwise() -> None:
    assert Settings.read().worker == (os.environ.get("AIBUDDY_WORKER") != "0")
    assert Settings.read({}).worker is False  # a mapping a caller built: its calls stay in-process
    assert Settings.read({"AIBUDDY_WORKER": "1"}).worker is True
    assert Settings.read({"AIBUDDY_WORKER": "0"}).worker is False
    assert Settings.read({"AIBUDDY_WORKER_IDLE": "soon"}).worker_idle is None  # the worker derives its own


def test_a_consolidation_switch_is_0_or_1_and_anything_else_leaves_the_file_s() -> None:
    assert dict(Settings.read({"AIBUDDY_CONSOLIDATE_MEMORY": "yes"}).consolidate) == {}


def test_the_settings_never_show_the_environment_s_values() -> None:
    settings = Settings.read({"OPENAI_API_KEY": "sk-secret-value", "AIBUDDY_USER": "bob"})
    assert "sk-secret-value" not in repr(settings)
    assert "user='bob'" in repr(settings) and "<2 variables>" in repr(settings)


def test_a_child_gets_the_process_environment_or_a_built_mapping_over_it() -> None:
    assert Settings.read().for_child() == dict(os.environ)
    child = Settings.read({"AIBUDDY_USER": "bob"}).for_child()
    assert child["AIBUDDY_USER"] == "bob" and child.get("PATH") == os.environ.get("PATH")


def test_a_role_switched_off_keeps_every_other_setting() -> None:
    settings = Settings.read({"AIBUDDY_MODEL": "openai/a", "AIBUDDY_USER": "bob"})
    quiet = settings.with_models_off("recall")
    assert quiet.role_models == {"recall": "none"}
    assert quiet._replace(role_models={}) == settings._replace(role_models={})


def test_the_environment_wins_over_the_file_and_a_flag_over_both(vault: Vault, tmp_path: Path) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[indexes]\nwatch = "on"\n')
    assert Session(Vault.open(vault.root), "demo", environ={"AIBUDDY_WATCH": "off"}).store.watch is None
    assert Session(Vault.open(vault.root), "demo", environ={}).store.watch is not None  # the file's "on"
    environ = {"AIBUDDY_VAULT": str(tmp_path), "AIBUDDY_USER": "nobody"}
    session = Session.locate(str(vault.root), "demo", environ=environ, cwd=tmp_path)
    assert (session.vault.root, session.user) == (vault.root, "demo")
