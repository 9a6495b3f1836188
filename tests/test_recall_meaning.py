"""`[recall] semantic = true`: an offline meaning signal (WordLlama's static embeddings, shipped in
its wheel) fused with the words, so a question finds a record it shares no word with."""

from __future__ import annotations

import pytest

from aibuddy_cli.memory import semantic
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.session import Session
from aibuddy_cli.vault import Vault

pytest.importorskip("wordllama")

NOTES = {
    "dogs": "Walked her two dogs by the river",
    "tax": "Filed the quarterly tax return",
    "oven": "The oven thermostat is broken",
    "guitar": "Practised scales on the guitar",
}


@pytest.fixture
def notes(vault: Vault) -> Vault:
    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True)
    for name, description in NOTES.items():
        record = MemoryRecord(
            name=name,
            description=description,
            type="user",
            body="",
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
        )
        (folder / f"{name}.md").write_text(render_record(record))
    return vault


def semantic_on(vault: Vault) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("[recall]\n", "[recall]\nsemantic = true\n", 1))


def recalled(vault: Vault, query: str) -> tuple[list[str], list[str]]:
    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:
        result = session.memory.recall(query)
        return [record.name for record in result.records], result.warnings + session.warnings


def test_a_question_finds_a_record_it_shares_no_word_with(notes: Vault) -> None:
    assert recalled(notes, "Does she have pets?")[0] == []  # words alone: nothing in common
    semantic_on(notes)
    assert recalled(notes, "Does she have pets?")[0][0] == "dogs"
    assert recalled(notes, "accounting paperwork for the government")[0][0] == "tax"
    assert recalled(notes, "guitar")[0][0] == "guitar"  # the words still count


def test_a_changed_record_is_embedded_again(notes: Vault) -> None:
    semantic_on(notes)
    assert recalled(notes, "kitchen appliance repair")[0][0] == "oven"
    path = notes.root / "memory/demo/oven.md"
    path.write_text(path.read_text().replace("The oven thermostat is broken", "Booked a flight to Lisbon"))
    assert recalled(notes, "airline trip")[0][0] == "oven"


def test_without_the_model_recall_uses_the_words_and_says_so(
    notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic_on(notes)

    def missing() -> None:
        raise semantic.SemanticUnavailable("[recall] semantic needs the wordllama package")

    monkeypatch.setattr(semantic, "_SHARED", None)
    monkeypatch.setattr(semantic, "_load_model", missing)
    names, warnings = recalled(notes, "guitar scales")
    assert names == ["guitar"] and any("used the words alone" in w for w in warnings)


def test_a_chinese_question_keeps_the_words(vault: Vault) -> None:
    assert semantic.mostly_cjk("周报格式是什么") and not semantic.mostly_cjk("weekly 周报 format")
