"""aibuddy.toml: each key is declared once (aibuddy_cli/config.py); the settings objects, validation,
unknown-key warnings, the `aibuddy init` template and the documentation's key table all come from there."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import pytest
from helpers import REPO

from aibuddy_cli import config, vault
from aibuddy_cli.config import FLAG, NUMBER, SCHEMA, TABLES, WHOLE, Schema, Setting, Table
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.models import calls as models
from aibuddy_cli.settings import Settings

SOURCE = "/v/aibuddy.toml"


def checked_settings() -> list[tuple[Table, Setting]]:
    """The declarations validated when the file is loaded (not [models], checked when a role is called)."""
    return [(table, setting) for table in TABLES if not table.raw for setting in table.settings]


# --- defaults ------------------------------------------------------------------------------------


def test_every_default_of_the_settings_objects_is_the_declared_one() -> None:
    loaded = config.config_from_data({}, SOURCE)
    assert loaded == config.Config()
    for table, setting in checked_settings():
        holder = getattr(loaded, table.name) if table.name else loaded
        assert getattr(holder, setting.name) == setting.default, (table.name, setting.name)
    assert loaded.models == {} and loaded.warnings == ()
    assert config.RecallSettings().max_bodies == SCHEMA.setting("recall", "max_bodies").default


def test_the_settings_objects_are_typed_named_tuples() -> None:
    recall = config.RecallSettings
    declared = next(table for table in TABLES if table.name == "recall")
    assert recall._fields == tuple(setting.name for setting in declared.settings)
    fields = {"window": int, "max_bodies": int, "lexical_share": int, "semantic": bool}
    assert typing.get_type_hints(recall) == fields  # each key's type, its facts beside it (Annotated)
    assert typing.get_type_hints(config.ExtractionSettings)["similarity"] is float
    assert config.Config._fields == ("default_user", "admins", "vault_id", "models", "recall", "knowledge",
                                     "extraction", "context", "tables", "consolidation", "store", "indexes",
                                     "teams", "warnings", "team_vault")


def test_the_models_table_keys_and_timeout_come_from_the_declarations() -> None:
    assert models.ROLES == config.ROLES and models.DEFAULT_TIMEOUT == 20.0
    declared = {"default", "api_base", "timeout", "keep_worker", *models.ROLES}
    assert set(config.KNOWN_KEYS["models"] or ()) == declared
    timeout = SCHEMA.setting("models", "timeout")
    assert models.model_settings("recall", {}, Settings.read({})).timeout == float(timeout.default)
    # models.model_settings checks the range the declaration documents.
    for value, usable in ((timeout.high, True), (timeout.high + 1, False), (timeout.low, False)):
        given = {"default": "openai/x", "timeout": value}
        settings = models.model_settings("recall", given, Settings.read({}))
        assert (settings.problem is None) is usable, value
        assert usable or f"from {timeout.low} to {timeout.high}, not {value!r}" in (settings.problem or "")


# --- validation: today's messages, made from the declared ranges ---------------------------------


NUMERIC = [(table, setting) for table, setting in checked_settings() if setting.kind in (WHOLE, NUMBER)]


@pytest.mark.parametrize("table, setting", NUMERIC, ids=[f"{t.name}.{s.name}" for t, s in NUMERIC])
def test_each_number_accepts_its_range_and_is_named_when_refused(table: Table, setting: Setting) -> None:
    def load(value: object) -> object:
        loaded = config.config_from_data({table.name: {setting.name: value}}, SOURCE)
        return getattr(getattr(loaded, table.name), setting.name)

    assert load(setting.default) == setting.default
    if setting.kind is NUMBER:
        assert load(0) == 0.0 and load(1) == 1.0 and isinstance(load(1), float)
        for bad in (-0.1, 1.5, True, "0.5"):
            with pytest.raises(InvalidInput) as raised:
                load(bad)
            assert str(raised.value) == f"{SOURCE}: {setting.name} must be a number from 0 to 1"
    elif isinstance(setting.low, int) and isinstance(setting.high, int):  # bounds that name no other key
        assert load(setting.low) == setting.low and load(setting.high) == setting.high
        for bad in (setting.low - 1, setting.high + 1, True, "5", 1.5):
            with pytest.raises(InvalidInput) as raised:
                load(bad)
            assert str(raised.value) == (
                f"{SOURCE}: {setting.name} must be a whole number from {setting.low} to {setting.high}"
            )


def test_recall_bounds_follow_the_other_recall_keys() -> None:
    with pytest.raises(InvalidInput, match=r"^/v/aibuddy.toml: window must be a whole number from 4 to 200$"):
        config.config_from_data({"recall": {"window": 3, "max_bodies": 4}}, SOURCE)
    with pytest.raises(InvalidInput, match="lexical_share must be a whole number from 0 to 10$"):
        config.config_from_data({"recall": {"window": 10, "lexical_share": 11}}, SOURCE)
    with pytest.raises(InvalidInput, match="max_bodies must be a whole number from 1 to 5$"):  # checked first
        config.config_from_data({"recall": {"window": 0, "max_bodies": 0}}, SOURCE)
    # A key left out takes its default within its range: lexical_share is at most window.
    assert config.config_from_data({"recall": {"window": 30}}, SOURCE).recall == (30, 5, 30, True)


def test_top_level_keys_and_tables_keep_their_messages() -> None:
    ignored = config.config_from_data({"default_user": "Bob Smith", "admins": ["ann"]}, SOURCE)
    assert ignored.default_user is None and ignored.admins == ("ann",)
    assert ignored.warnings == (
        f"{SOURCE}: default_user 'Bob Smith' is not a valid user name (1-64 lowercase letters, digits, "
        "'.', '-' or '_'); ignored",
    )
    with pytest.raises(InvalidInput, match="^/v/aibuddy.toml: admins must be a list of user names$"):
        config.config_from_data({"admins": ["ann", 5]}, SOURCE)
    with pytest.raises(InvalidInput) as raised:
        config.config_from_data({"recall": 5}, SOURCE)
    tables = (
        "[models], [recall], [knowledge], [extraction], [context], [tables], [consolidation], [store], "
        "[indexes], [teams]"
    )
    assert str(raised.value) == f"{SOURCE}: {tables} must be tables"


def test_unknown_keys_get_a_warning_with_the_closest_declared_spelling() -> None:
    data = {"colour": 1, "modles": {}, "recall": {"windw": 1}, "models": {"defualt": "x", "compact": "y"}}
    loaded = config.config_from_data(data, SOURCE)
    assert loaded.warnings == (
        f"{SOURCE}: unknown key 'colour'; ignored",
        f"{SOURCE}: unknown table 'modles' (did you mean models?); ignored",
        f"{SOURCE}: unknown key in [recall]: 'windw' (did you mean window?); ignored",
        f"{SOURCE}: unknown key in [models]: 'defualt' (did you mean default?); ignored",
    )
    assert loaded.models == data["models"]  # [models] stays the file's mapping, checked when a role is called


# --- the template aibuddy init writes ------------------------------------------------------------


def test_the_template_writes_the_declared_defaults_and_leaves_out_the_rest() -> None:
    text = config.config_template("alice")
    parsed = tomllib.loads(text)
    made = config.Config(default_user="alice", admins=("alice",), models={"timeout": 20})
    assert config.config_from_data(parsed, SOURCE) == made
    for table in TABLES:
        written = parsed.get(table.name, {}) if table.name else parsed
        for setting in table.settings:
            if setting.template == "{key} = {default}":
                assert written[setting.name] == setting.default, setting.name
            elif setting.name not in ("default_user", "admins"):
                assert setting.name not in written, setting.name
    # The lines tests and scripts edit in place, and the [models] examples, as before.
    lines = text.splitlines()
    assert lines[:3] == ["# aibuddy vault configuration", 'default_user = "alice"', 'admins = ["alice"]']
    for line in (
        "window = 200", "max_bodies = 5", "max_steps = 8", "max_writes = 5", "compact_at_tokens = 6000",
        "timeout = 20", '# default = "openai/gpt-4o-mini"', '# recall = "ollama/llama3.2"',
        f"# {', '.join(models.ROLES)}.",
    ):
        assert line in lines, line


def test_init_writes_the_template(tmp_path: Path) -> None:
    made = vault.init_vault(tmp_path / "v", "alice")
    assert (made.root / vault.CONFIG_FILE).read_text(encoding="utf-8") == config.config_template("alice")
    assert made.config == config.Config(default_user="alice", admins=("alice",), models={"timeout": 20})


# --- the documentation's key table ---------------------------------------------------------------


def test_the_documented_key_table_matches_the_declarations() -> None:
    page = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert config.with_reference(page) == page, (
        "docs/reference/configuration.md's table differs from aibuddy_cli/config.py; "
        "run: .venv/bin/python docs/gen_reference.py"
    )
    for table in TABLES:
        for setting in table.settings:
            key = f"`[{table.name}] {setting.name}`" if table.name else f"`{setting.name}`"
            assert f"| {key} |" in page


# --- a new table is one declaration ---------------------------------------------------------------

CONSOLIDATION = Table("example", (
    Setting("every", WHOLE, 50, "messages between two consolidation passes", low=1, high=10_000),
    Setting("memory", FLAG, True, "distil user memory records"),
    Setting("contacts", FLAG, False, "keep a contacts table", template=""),
))  # fmt: skip


def test_a_new_table_is_one_more_declaration() -> None:
    extended = Schema((*TABLES, CONSOLIDATION))
    loaded = extended.parse({"example": {"every": 10}, "recall": {"window": 100}}, SOURCE)
    assert loaded.example == (10, True, False) and loaded.example.every == 10
    assert loaded.recall.window == 100 and loaded.recall.max_bodies == 5  # the others are untouched
    assert extended.parse({}, SOURCE).example.memory is True
    assert extended.config_type().example.every == 50
    with pytest.raises(InvalidInput, match="^/v/aibuddy.toml: every must be a whole number from 1 to 10000$"):
        extended.parse({"example": {"every": 0}}, SOURCE)
    with pytest.raises(InvalidInput, match="^/v/aibuddy.toml: memory must be true or false$"):
        extended.parse({"example": {"memory": 1}}, SOURCE)
    with pytest.raises(InvalidInput, match=r"\[teams\], \[example\] must be tables$"):
        extended.parse({"example": []}, SOURCE)
    assert extended.parse({"example": {"evry": 3}}, SOURCE).warnings == (
        f"{SOURCE}: unknown key in [example]: 'evry' (did you mean every?); ignored",
    )
    template = extended.template("alice")
    assert template.endswith("\n[example]\nevery = 50\nmemory = true\n")
    assert extended.parse(tomllib.loads(template), SOURCE).example == (50, True, False)
    assert "| `[example] every` | whole number | `50` | 1 to 10000 |" in extended.reference()
    # The running configuration does not know it.
    assert "example" not in config.KNOWN_KEYS and "example" not in config.Config._fields


def test_a_declared_settings_class_must_match_its_table() -> None:
    """The classes mypy checks the settings reads against cannot drift from the declarations."""
    from typing import NamedTuple

    class Recall(NamedTuple):  # max_bodies' default differs from the declared one
        window: int = 200
        max_bodies: int = 4
        lexical_share: int = 50

    class Shuffled(NamedTuple):
        max_bodies: int = 5
        window: int = 200
        lexical_share: int = 50

    class Retyped(NamedTuple):
        window: float = 200
        max_bodies: int = 5
        lexical_share: int = 50

    for declared in (Recall, Shuffled, Retyped):
        with pytest.raises(ValueError, match="does not match its declarations"):
            Schema(TABLES, None, {"recall": declared})
    assert SCHEMA.config_type is config.Config and SCHEMA.settings_types["recall"] is config.RecallSettings


def test_a_bound_must_name_another_key_of_its_table() -> None:
    broken = Table("x", (Setting("a", WHOLE, 1, "a", low=1, high="b"),))
    with pytest.raises(ValueError, match="bound 'b' is not another key"):
        Schema((broken,))


# --- compatibility and start-up --------------------------------------------------------------------


def test_vault_still_exports_the_configuration_names() -> None:
    for name in ("Config", "RecallSettings", "KnowledgeSettings", "ExtractionSettings", "ContextSettings",
                 "KNOWN_KEYS", "CONFIG_FILE", "config_from_data", "config_template"):
        assert getattr(vault, name) is getattr(config, name), name


@pytest.mark.process
def test_loading_the_configuration_module_stays_cheap() -> None:
    code = (
        "import sys, aibuddy_cli.vault\n"
        "heavy = ('tomllib', 'dataclasses', 'difflib', 'litellm', 'typer')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))"
    )
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert imported.split() == []
