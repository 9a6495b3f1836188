"""A first memory index build inserts its rows in bulk: the index it makes holds exactly the rows
a record-by-record build makes (records, days, words, character runs, the folder digest), over a
vault of varied records: English, Chinese, dated, expiring, with extra keys, and malformed files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import write_record_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.index import Loaded, MemoryIndex
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault

BODIES = [
    "Deploy the API to prod on 16 June 2023; the rollback runbook is in ops/rollback.md.",
    "周报格式：每周五下午三点前提交，2024年3月8日起改为用模板。会议纪要见共享盘。",
    "Budget meeting notes.\n\n- Q3 spend is over by 4%\n- next review June 16th, then 2025-01-07",
    "",
    "Mixed 中文 and English: 她平时吃荤吗？ on March 3, 2022 we met in Berlin.",
    "İstanbul trip in ſeptember; naïve café résumé, snake_case_words and CamelCase.",
]


def varied_vault(vault: Vault) -> None:
    for number in range(60):
        body = BODIES[number % len(BODIES)]
        record = MemoryRecord(
            name=f"note-{number:03d}",
            description=["Deploy report", "周报 格式", "Budget meeting 2023-06-16", "x"][number % 4],
            type=["user", "feedback", "project", "reference"][number % 4],
            body=f"{body}\n\nItem {number}.",
            provenance=["manual", "auto"][number % 2],
            created=f"2026-0{number % 9 + 1}-1{number % 10}T08:00:00Z",
            updated=None if number % 5 == 0 else f"2026-10-0{number % 9 + 1}T09:30:00Z",
            recall_count=number % 7,
            last_recalled_at=None if number % 3 else "2026-11-20T10:00:00Z",
            extra=(("owner", "ops"), ("tags", ["a", "b"])) if number % 6 == 0 else (),
            expires=None if number % 8 else ("2020-01-01" if number % 16 else "2999-12-31"),
        )
        write_record_file(vault, record.name, render_record(record))
    write_record_file(vault, "no-header", "just text, no frontmatter\n")
    write_record_file(vault, "bad-type", "---\nname: bad-type\ndescription: d\ntype: nonsense\n---\nbody\n")
    write_record_file(vault, "not-utf8", b"---\nname: not-utf8\n\xff\xfe\n---\n")
    write_record_file(vault, "in-conflict", "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n")
    folded = "---\nname: 'yaml-header'\ndescription: >\n  folded text\ntype: user\n---\n周报\n"
    write_record_file(vault, "yaml-header", folded)


def rows(path: Path) -> dict[str, list[tuple]]:
    db = sqlite3.connect(path)
    try:
        return {
            "records": db.execute("SELECT * FROM records ORDER BY id").fetchall(),
            "record_days": db.execute("SELECT id, day FROM record_days ORDER BY id, day").fetchall(),
            "records_fts": db.execute(
                "SELECT rowid, name, description, body FROM records_fts ORDER BY rowid"
            ).fetchall(),
            "record_grams": db.execute("SELECT * FROM record_grams ORDER BY gram, id").fetchall(),
            "record_gram_lengths": db.execute("SELECT * FROM record_gram_lengths ORDER BY id").fetchall(),
            "meta": db.execute("SELECT * FROM meta WHERE key <> 'generation' ORDER BY key").fetchall(),
            "record_changes": db.execute("SELECT seq, id FROM record_changes ORDER BY seq").fetchall(),
            "schema": db.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
            ).fetchall(),
            "matches": db.execute(
                'SELECT rowid FROM records_fts WHERE records_fts MATCH \'"deploy" OR "周" OR "runbook"\''
                " ORDER BY rank, rowid"
            ).fetchall(),
        }
    finally:
        db.close()


def built(vault: Vault) -> dict[str, list[tuple]]:
    with Session(vault, "demo", environ={}) as session:
        listed = session.memory.list_records()
        path = session.memory.index().path
    assert listed  # the build happened and the records are listed
    return rows(path)


def test_a_first_build_makes_the_rows_a_record_by_record_build_makes(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    varied_vault(vault)
    bulk = built(vault)
    path = vault.memory_index_path("demo")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)

    def one_by_one(self: MemoryIndex, loaded: list[Loaded]) -> int:
        return sum(self._upsert(*outcome) for outcome in loaded if outcome is not None)

    monkeypatch.setattr(MemoryIndex, "_insert_new", one_by_one)
    reference = built(vault)
    assert len(bulk["records"]) == 65 and len(bulk["record_grams"]) > 100 and bulk["record_days"]
    assert sum(1 for row in bulk["records"] if row[7] is not None) == 4  # the malformed files
    assert bulk == reference


def test_the_records_vectors_are_the_sums_of_their_pieces_rows_exactly() -> None:
    """Bulk embedding (the first recall's) makes each row float32 once: the vectors are exactly
    the normalised sums of the float16 rows of the texts' pieces, as when each text's rows were
    converted on their own."""
    import numpy as np

    from aibuddy_cli.memory import semantic

    model = semantic.StaticModel()
    texts = [text for body in BODIES for text in (body, body.upper(), f"{body} deploy report")] * 2
    mapped, offset, count = model._load()
    table = np.frombuffer(mapped, dtype="<f2", count=count * semantic.DIMENSIONS, offset=offset)
    table = table.reshape(count, semantic.DIMENSIONS)
    vocabulary = model.vocab()

    def expected(text: str) -> list[float]:
        ids = [
            piece
            for word in text.split()
            for piece in semantic.pieces(word, lambda cut: {p: vocabulary[p] for p in cut if p in vocabulary})
        ]
        total = (
            table[ids].astype(np.float32).sum(axis=0) if ids else np.zeros(semantic.DIMENSIONS, np.float32)
        )
        norm = float(np.linalg.norm(total))
        return (total / norm if norm else total).tolist()

    assert len(texts) > semantic.BULK
    assert model.embed(texts) == [expected(text) for text in texts]


def test_a_first_build_that_fails_half_way_leaves_the_index_whole(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build makes the character runs' index and the trigger that lists added records at
    its end: one that fails half way (here, in the 40th record) keeps both, so the saves that
    follow are still listed for a server, and the next build makes the same rows."""
    from aibuddy_cli.memory import ngrams

    varied_vault(vault)
    reference = built(vault)
    path = vault.memory_index_path("demo")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    grams, calls = ngrams.grams, []

    def failing(text: str):  # type: ignore[no-untyped-def]
        calls.append(text)
        if len(calls) == 40:
            raise RuntimeError("the build stops here")
        return grams(text)

    monkeypatch.setattr(ngrams, "grams", failing)
    with Session(vault, "demo", environ={}) as session, pytest.raises(RuntimeError):
        session.memory.index()
    schema = rows(path)["schema"]
    assert ("trigger", "record_added", "records") in [row[:3] for row in schema]
    assert ("index", "record_grams_by_id", "record_grams") in [row[:3] for row in schema]
    monkeypatch.setattr(ngrams, "grams", grams)
    assert built(vault) == reference
