"""Recall's meaning signal, on by default: WordLlama's static vectors (shipped in its wheel, a base
dependency) fused with the words, so a question finds a record it shares no word with; the
`embedding` model role replaces them when configured; `--json` names the signals that ranked."""

from __future__ import annotations

import pytest

from aibuddy_cli.memory import semantic
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.session import Session
from aibuddy_cli.vault import Vault
from tests.fake_openai import FakeOpenAI

NOTES = {
    "dogs": "Walked her dog by the river",
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


def setting(vault: Vault, table: str, line: str) -> None:
    config = vault.root / "aibuddy.toml"
    text = config.read_text()
    if f"[{table}]\n" not in text:
        text += f"\n[{table}]\n"
    config.write_text(text.replace(f"[{table}]\n", f"[{table}]\n{line}\n", 1))


def recall(vault: Vault, query: str, environ: dict[str, str] | None = None) -> tuple[list, str, list]:
    """(names recalled, method, warnings)."""
    with Session(Vault.open(vault.root, {}), "demo", environ=environ or {}) as session:
        result = session.memory.recall(query)
        return [r.name for r in result.records], result.method, result.warnings + session.warnings


def test_a_question_finds_a_record_it_shares_no_word_with_by_default(notes: Vault) -> None:
    names, method, _ = recall(notes, "Does she have pets?")
    assert names[0] == "dogs" and method == "words+meaning"
    assert recall(notes, "accounting paperwork for the government")[0][0] == "tax"
    assert recall(notes, "guitar")[0][0] == "guitar"  # the words still count


def test_semantic_false_keeps_the_words_alone(notes: Vault) -> None:
    setting(notes, "recall", "semantic = false")
    assert recall(notes, "Does she have pets?")[:2] == ([], "lexical")  # nothing in common


def test_a_question_close_to_no_record_gets_none(notes: Vault) -> None:
    """The rule that no body comes without a match holds for meaning: under the model's floor
    (cosine 0.15, and half the best) a record is no match."""
    assert recall(notes, "zzqx blorf")[0] == []


def test_a_changed_record_is_embedded_again(notes: Vault) -> None:
    assert recall(notes, "the stove is faulty")[0][0] == "oven"
    path = notes.root / "memory/demo/oven.md"
    path.write_text(path.read_text().replace("The oven thermostat is broken", "Booked a flight to Lisbon"))
    assert recall(notes, "plane journey abroad")[0][0] == "oven"


def test_without_the_model_recall_uses_the_words_and_says_so(
    notes: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(semantic, "_SHARED", semantic.StaticModel(tmp_path / "no-such-package"))
    names, method, warnings = recall(notes, "guitar scales")
    assert names == ["guitar"] and method == "lexical"
    assert any("used the words alone" in w for w in warnings)


def test_a_chinese_question_keeps_the_words(notes: Vault) -> None:
    """The static vocabulary is English: on MADial-Bench ZH it made Chinese recall worse."""
    assert semantic.mostly_cjk("周报格式是什么") and not semantic.mostly_cjk("weekly 周报 format")
    assert recall(notes, "她有宠物吗")[1] == "lexical"


def test_the_text_is_cut_into_the_vocabularys_pieces() -> None:
    vocab = {"\u2581dogs": 1, "\u2581do": 2, "gs": 3, "\u2581river": 4, "<0xE7>": 5, "<0x8C>": 6, "<0xAB>": 7}

    def known(candidates):
        return {piece: vocab[piece] for piece in candidates if piece in vocab}

    assert semantic.pieces("dogs  river", known) == [1, 4]  # the longest piece at each place
    assert semantic.pieces("猫", known)[-3:] == [5, 6, 7]  # an unknown character: its UTF-8 bytes


# --- the embedding role ---------------------------------------------------------------------------


@pytest.fixture
def embedding_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    return {"AIBUDDY_MODEL_EMBEDDING": "openai/test-embedding", "AIBUDDY_TIMEOUT": "30"}


def embedded_texts(server: FakeOpenAI) -> list[str]:
    return [text for r in server.requests if r["path"].endswith("/embeddings") for text in r["body"]["input"]]


def test_the_embedding_model_replaces_the_static_vectors(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    """The fake model folds "cat" and "dog" together (tests/fake_openai.py): a question about a
    cat finds the dogs by the model's vectors, where the words share nothing."""
    names, method, _ = recall(notes, "cat", embedding_env)
    assert names[0] == "dogs" and method == "words+embedding"
    assert len(embedded_texts(fake_openai)) == len(NOTES) + 1  # every record once, and the question


def test_embeddings_are_cached_per_record_and_refreshed_only_for_changed_records(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    recall(notes, "cat", embedding_env)
    fake_openai.requests.clear()
    recall(notes, "dog", embedding_env)
    assert embedded_texts(fake_openai) == ["dog"]  # the records' vectors were kept
    path = notes.root / "memory/demo/oven.md"
    path.write_text(path.read_text().replace("The oven thermostat is broken", "Bought a new truck"))
    fake_openai.requests.clear()
    names = recall(notes, "car", embedding_env)[0]
    texts = embedded_texts(fake_openai)
    assert names[0] == "oven" and len(texts) == 2 and "truck" in texts[0]  # the changed record, the question


def test_another_embedding_model_embeds_again(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    recall(notes, "cat", embedding_env)
    fake_openai.requests.clear()
    recall(notes, "cat", {**embedding_env, "AIBUDDY_MODEL_EMBEDDING": "openai/other-embedding"})
    assert len(embedded_texts(fake_openai)) == len(NOTES) + 1


def test_when_the_embedding_model_fails_the_words_rank_alone(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    fake_openai.embedding_failures.extend([500] * 10)
    names, method, warnings = recall(notes, "guitar scales", {**embedding_env, "AIBUDDY_MODEL_RETRIES": "0"})
    assert names == ["guitar"] and method == "lexical"
    assert any("used the words alone" in w for w in warnings)


def test_a_chat_model_for_every_role_is_not_asked_for_embeddings(
    notes: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    """AIBUDDY_MODEL (or [models] default) names a chat model: recall's meaning stays static."""
    recall(notes, "Does she have pets?", model_env)
    assert embedded_texts(fake_openai) == []


def test_many_records_at_once_get_the_vectors_one_record_gets() -> None:
    """The records are embedded in bulk (through numpy), a question alone (in Python): the two
    must agree, or a question would be compared with vectors of another kind."""
    texts = ["Walked her dog by the river", "Filed the quarterly tax return 周报"] * (semantic.BULK + 1)
    model = semantic.StaticModel()
    alone = model.embed(texts[:2])
    many = model.embed(texts)
    pairs = zip(alone, many[:2], strict=True)
    assert all(abs(a - b) < 1e-5 for one, other in pairs for a, b in zip(one, other, strict=True))
