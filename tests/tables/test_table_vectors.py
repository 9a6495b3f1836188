"""Semantic table search: vectorized columns embedded through litellm.embedding (the local fake
server's embedding folds a few synonyms together), cached in the index, with a lexical fallback."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI
from helpers import ok

from aibuddy_cli.vault import Vault

NOTES = [
    {"name": "Fleet", "notes": "leases every automobile we drive"},
    {"name": "Kennel", "notes": "boards a dog over the holidays"},
    {"name": "Bakery", "notes": "bread on Fridays"},
]


@pytest.fixture
def suppliers(cli, vault: Vault) -> str:
    ok(cli("table", "create", "suppliers", "--json"))
    ok(cli("table", "add", "suppliers", *[a for r in NOTES for a in ("--row", json.dumps(r))], "--json"))
    return "suppliers"


@pytest.fixture
def embedding(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    monkeypatch.setenv("AIBUDDY_MODEL_EMBEDDING", "openai/embed-test")
    monkeypatch.setenv("AIBUDDY_TIMEOUT", "30")
    return fake_openai


def embedding_calls(server: FakeOpenAI) -> list[list[str]]:
    return [r["body"]["input"] for r in server.requests if r["path"].endswith("/embeddings")]


def test_vectorizing_needs_an_embedding_model(cli, vault: Vault, suppliers: str) -> None:
    schema = vault.root / "tables/personal/demo/suppliers.schema.json"
    before = schema.read_bytes()
    result = cli("table", "column", "vectorize", "suppliers", "notes", "--json")
    assert result.exit_code == 7 and json.loads(result.stdout)["error"]["code"] == "model_unavailable"
    assert schema.read_bytes() == before


@pytest.mark.process
def test_search_by_meaning_finds_what_the_words_miss(cli, vault: Vault, suppliers: str, embedding) -> None:
    assert ok(cli("table", "search", "car", "--json"))["hits"] == []  # no shared word
    vectorized = ok(cli("table", "column", "vectorize", "suppliers", "notes", "--json"))
    assert vectorized["values"] == 3 and embedding_calls(embedding) == [[r["notes"] for r in NOTES]]
    schema = json.loads((vault.root / "tables/personal/demo/suppliers.schema.json").read_text())
    assert [c.get("vectorized", False) for c in schema["columns"]] == [False, False, True]
    found = ok(cli("table", "search", "car", "--json"))
    assert found["method"] == "embedding"
    assert found["hits"][0]["row"]["name"] == "Fleet" and found["hits"][0]["match"] == "embedding"
    assert embedding_calls(embedding)[-1] == ["car"]  # the rows' vectors came from the cache
    ok(cli("table", "add", "suppliers", "--row", '{"name": "Vet", "notes": "treats every cat"}', "--json"))
    pets = ok(cli("table", "search", "pet", "--limit", "2", "--json"))["hits"]
    assert {h["row"]["name"] for h in pets} == {"Kennel", "Vet"}
    assert embedding_calls(embedding)[-1] == ["pet", "treats every cat"]  # only what is new


@pytest.mark.process
def test_a_failing_embedding_model_falls_back_to_words(cli, suppliers: str, embedding) -> None:
    ok(cli("table", "column", "vectorize", "suppliers", "notes", "--json"))
    # litellm reads max_retries=0 as unset for embeddings and tries again: every try fails here.
    embedding.embedding_failures.extend([500] * 5)
    result = cli("table", "search", "bread", "--json")
    assert json.loads(result.stdout)["method"] == "lexical"
    assert json.loads(result.stdout)["hits"][0]["row"]["name"] == "Bakery"
    assert "searched their words instead" in result.stderr


@pytest.mark.process
def test_several_reference_texts_rank_by_summed_similarity(vault: Vault, suppliers: str, embedding) -> None:
    from aibuddy_cli.app.session import Session

    session = Session(Vault.open(vault.root), "demo")
    session.tables.changes.vectorize_column("suppliers", "notes")
    found = session.tables.queries.search(["truck", "dog"], ["suppliers"], limit=3)
    assert found.method == "embedding" and found.query == "truck | dog"
    assert [h.row["name"] for h in found.hits][:2] in (["Fleet", "Kennel"], ["Kennel", "Fleet"])
    assert found.hits[-1].row["name"] == "Bakery"


@pytest.mark.process
def test_across_tables_hits_by_meaning_and_by_words_share_one_scale(
    cli, vault: Vault, suppliers: str, embedding
) -> None:
    """A table searched by meaning and one searched by words: the best word match is not put
    behind the other table's rows that mean nothing like the question (cosine 0), and the scores
    are of one kind (fused ranks)."""
    ok(cli("table", "column", "vectorize", "suppliers", "notes", "--json"))
    ok(cli("table", "create", "recipes", "--json"))
    ok(cli("table", "add", "recipes", "--row", '{"name": "Sourdough", "notes": "bread"}', "--json"))
    found = ok(cli("table", "search", "bread", "--json"))
    names = [h["row"]["name"] for h in found["hits"]]
    assert set(names[:2]) == {"Bakery", "Sourdough"}, found
    assert {h["match"] for h in found["hits"][:2]} == {"embedding", "lexical"}
    scores = [h["score"] for h in found["hits"]]
    assert scores == sorted(scores, reverse=True) and scores[0] == scores[1] == round(1 / 61, 6)
