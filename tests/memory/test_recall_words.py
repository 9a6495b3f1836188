"""Recall by words keeps every record that matches: a word most records hold weighs little but still
makes a candidate, so recall fills its five from the next best; a question that names a time ranks
that time's records first, by its subject."""

from __future__ import annotations

import datetime as dt

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault

CHECKLIST = ["freeze the branch", "run the reconciliation", "announce the window", "check the flags",
             "sign off the canary", "tag the release", "roll back on declines"]  # fmt: skip


def write(
    vault: Vault, name: str, description: str, body: str = "", created: str = "2026-01-05T09:00:00Z"
) -> None:
    record = MemoryRecord(
        name=name, description=description, type="project", body=body, created=created, updated=created
    )
    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(render_record(record))


def recalled(vault: Vault, query: str) -> list[str]:
    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:  # its settings read anew
        return [record.name for record in session.memory.recall(query).records]


def words_alone(vault: Vault) -> None:
    """[recall] semantic = false: the ranking by words alone."""
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("[recall]\n", "[recall]\nsemantic = false\n"))


def checklist(vault: Vault) -> None:
    """The issue's vault: 7 of 8 records about the payments release checklist, 1 holding "marker"."""
    for number, step in enumerate(CHECKLIST):
        write(vault, f"release-{number}", f"Payments release checklist: {step}")
    write(vault, "whiteboard", "The blue whiteboard marker in room 3 is dry")


def test_records_that_hold_only_common_words_fill_the_five(vault: Vault) -> None:
    checklist(vault)
    names = recalled(vault, "payments release marker")
    # By words and meaning (the default) the five are the release checklist, which the question is
    # about; the record that only shares the rare word ranks after them.
    assert len(names) == 5 and all(name.startswith("release-") for name in names)
    words_alone(vault)
    names = recalled(vault, "payments release marker")
    assert names[0] == "whiteboard"  # by the words alone, the rarest word ranks first
    assert len(names) == 5 and all(name.startswith("release-") for name in names[1:])


def test_a_word_no_record_holds_does_not_hide_the_common_ones(vault: Vault) -> None:
    """Over 200 records (where the words held by more than half were left out of the match), a
    question of common words and one no record holds found nothing."""
    checklist(vault)
    for number in range(240):
        write(vault, f"note-{number:03d}", f"Payments team note {number}", "Release train notes.")
    assert len(recalled(vault, "payments release steps for Lisbon")) == 5
    names = recalled(vault, "payments release checklist")
    assert len(names) == 5 and all(name.startswith("release-") for name in names)


def test_a_record_holding_the_rare_word_and_common_ones_comes_before_one_holding_only_the_rare_word(
    vault: Vault,
) -> None:
    checklist(vault)
    write(vault, "release-marker", "Payments release marker: the tag that starts the rollout")
    assert recalled(vault, "payments release marker")[0] == "release-marker"
    words_alone(vault)
    assert recalled(vault, "payments release marker")[:2] == ["release-marker", "whiteboard"]


def test_task_context_surfaces_the_release_records(vault: Vault) -> None:
    checklist(vault)
    with Session(vault, "demo", environ={}) as session:
        task = session.tasks.new("Payments release")
        session.tasks.add_message(task.id, "user", "Where is the marker?")
        memories = session.context.assemble(task.id).memories
    assert len(memories.records) == 5


def test_a_dated_question_ranks_that_days_records_first(vault: Vault) -> None:
    """The day's record shares only a name the whole vault holds; another month's shares the
    question's rare word: the date narrows, then the words rank."""
    for day, text in enumerate(["went running", "called her mother", "read a novel", "visited the zoo"], 1):
        write(vault, f"melanie-{day}", f"Melanie {text}", created=f"2023-03-0{day}T18:00:00Z")
    write(vault, "melanie-cake", "Melanie made a lemon cake for her kids", created="2023-06-16T18:00:00Z")
    write(vault, "caroline-group", "Caroline went to a support group", created="2023-06-16T18:00:00Z")
    write(vault, "melanie-bread", "Melanie wants to bake bread more often", created="2023-08-02T18:00:00Z")
    names = recalled(vault, "What did Melanie bake on 16 June 2023?")
    assert names[0] == "melanie-cake"
    assert "melanie-bread" in names  # the other month's match still follows


def test_records_of_the_time_that_share_no_word_come_only_when_none_does(vault: Vault) -> None:
    monday = dt.date.today() - dt.timedelta(days=dt.date.today().weekday())
    last_week = f"{monday - dt.timedelta(days=3)}T12:00:00Z"
    write(vault, "vendor-choice", "Chose Acme as the payments vendor", created=last_week)
    write(vault, "report-format", "Weekly report: done, next, risks", created="2024-02-01T12:00:00Z")
    assert recalled(vault, "what did I decide last week?") == ["vendor-choice"]
    assert recalled(vault, "draft last week's report") == ["report-format"]


def test_a_long_pasted_question_still_recalls(vault: Vault) -> None:
    """More terms than one SQL statement may score (SQLite allows 500 SELECTs in a UNION)."""
    checklist(vault)
    words = " ".join(f"word{number}" for number in range(600))
    write(vault, "glossary", "Glossary", words)
    names = recalled(vault, f"{words} canary")
    assert names[0] == "glossary" and "release-4" in names


def test_a_server_ranks_by_words_as_a_one_shot_command_does(vault: Vault) -> None:
    """A long-lived process sums each phrase's kept BM25 scores in numpy (lexical.PhraseScores)
    instead of asking FTS5 to score every record that holds a word: the same records, the same
    scores, the same order, ties by name, a record out of recall (expired) left out, a word more
    than half of the records hold, a question's time; and after a record changes, what it says now."""
    from aibuddy_cli.memory import lexical
    from aibuddy_cli.memory.index import _live

    checklist(vault)
    for number in range(40):  # identical records: ties, ordered by name
        write(
            vault,
            f"twin-{number:02d}",
            "Weekly budget meeting notes",
            "deploy report",
            f"2026-03-{number % 28 + 1:02d}T09:00:00Z",
        )
    write(vault, "gone", "Weekly budget meeting notes deploy report budget budget")
    path = vault.root / "memory/demo/gone.md"
    path.write_text(path.read_text().replace("\nupdated:", "\nexpires: 2020-01-01\nupdated:", 1))
    questions = [
        "budget meeting", "deploy report payments", "payments release marker", "weekly notes",
        "budget meeting on 2026-03-14", "what did we decide in March", "marker", "nothing here",
    ]  # fmt: skip
    today = dt.date(2026, 4, 2)
    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:
        index = session.memory.index()
        assert "gone" in {item.record.name for item in index.records(expired=True)}
        where = str(index.path)
        lexical.kept_scores(
            where, index.db, *index.generation()[1:], index.changed_since
        )  # a first question: numpy may not be loaded
        for _ in range(2):
            scores = lexical.kept_scores(where, index.db, *index.generation()[1:], index.changed_since)
            assert scores is not None
            for question in questions:
                for limit in (3, 5, 50):
                    alone = lexical.rank(index.db, question, limit, today, _live("r"))
                    assert lexical.rank(index.db, question, limit, today, _live("r"), scores) == alone
                    assert "gone" not in dict(alone)
            # A record changed: its words are read again, not the ones kept.
            session.memory.update("twin-07", description="Marker: the marker of the release, marker")
            index = session.memory.index()
            kept = lexical.kept_scores(where, index.db, *index.generation()[1:], index.changed_since)
            assert kept is not None
            assert lexical.rank(index.db, "marker", 1, today, _live("r"), kept)[0][0] == "twin-07"
            session.memory.update("twin-07", description="Weekly budget meeting notes")
            index = session.memory.index()


def test_a_server_keeps_the_scores_of_its_latest_indexes_only() -> None:
    """A server of many users keeps what it learned of the indexes it used last (each store is
    bounded), not of every user it ever served."""
    from aibuddy_cli.memory import lexical

    kept: dict = {}
    for user in range(10):
        lexical.keep_latest(kept, f"index-{user}", user)
    lexical.keep_latest(kept, "index-6", 6)  # used again: the latest
    lexical.keep_latest(kept, "index-10", 10)
    assert list(kept) == ["index-8", "index-9", "index-6", "index-10"]


def test_a_server_ranks_as_a_one_shot_command_after_each_save(vault: Vault) -> None:
    """After a save (or a forget) a long-lived process reads the changed records again only and
    computes every kept phrase's score at the index's new counts: the same records, scores and
    order as FTS5's own, save after save; and an index written by a version that lists no changes
    is ranked in SQL alone."""
    import numpy  # noqa: F401  (a server has it loaded)

    from aibuddy_cli.memory import lexical
    from aibuddy_cli.memory.index import _live

    checklist(vault)
    for number in range(30):
        write(vault, f"note-{number:02d}", "Weekly budget meeting notes", f"deploy report {number}")
    questions = ["budget meeting", "deploy report payments", "marker release", "weekly notes deploy"]
    today = dt.date(2026, 4, 2)
    renewed = []
    real = lexical.PhraseScores._renewed

    def spy(self: lexical.PhraseScores, db: object, phrase: str) -> object:
        found = real(self, db, phrase)  # type: ignore[arg-type]
        renewed.append(found is not None)
        return found

    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:
        lexical.PhraseScores._renewed = spy  # type: ignore[method-assign]
        try:
            for step in range(6):
                index = session.memory.index()
                scores = lexical.kept_scores(
                    str(index.path), index.db, *index.generation()[1:], index.changed_since
                )
                assert scores is not None
                for question in questions:
                    alone = lexical.rank(index.db, question, 5, today, _live("r"))
                    assert lexical.rank(index.db, question, 5, today, _live("r"), scores) == alone
                if step % 3 == 2:
                    session.memory.delete(f"note-{step:02d}")
                else:
                    session.memory.update(
                        f"note-{step:02d}", description=f"Budget marker release {step}, deploy deploy budget"
                    )
        finally:
            lexical.PhraseScores._renewed = real  # type: ignore[method-assign]
    assert any(renewed)


def test_a_server_sees_a_write_made_by_another_writer(vault: Vault) -> None:
    """Another process that writes the index without telling anyone (any writer of this version:
    the index's own triggers list what it changed) is seen by the next question; an index that
    lists no changes (an older version made it) is ranked in SQL alone."""
    import sqlite3

    import numpy  # noqa: F401

    from aibuddy_cli.memory import lexical
    from aibuddy_cli.memory.index import _live

    checklist(vault)
    today = dt.date(2026, 4, 2)
    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:
        index = session.memory.index()
        where = str(index.path)

        def kept() -> lexical.PhraseScores | None:
            return lexical.kept_scores(where, index.db, *index.generation()[1:], index.changed_since)

        first = kept()
        assert first is not None
        before = lexical.rank(index.db, "release", 5, today, _live("r"), first)
        other = sqlite3.connect(index.path, isolation_level=None)
        key = other.execute("SELECT id FROM records WHERE name = ?", (before[0][0],)).fetchone()[0]
        other.execute("DELETE FROM records_fts WHERE rowid = ?", (key,))
        other.execute("DELETE FROM records WHERE id = ?", (key,))
        after = lexical.rank(index.db, "release", 5, today, _live("r"), kept())
        assert after == lexical.rank(index.db, "release", 5, today, _live("r"))
        assert before[0][0] not in dict(after)
        other.execute("DROP TABLE record_changes")
        other.close()
        assert kept() is None


def test_a_record_rewritten_while_a_question_is_read_is_found_all_the_same(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server keeps each phrase's records as of one change of the index. A question reads that
    change, then the records: had another writer rewritten the record in between (its row made
    anew), the question took the kept phrase for the state it read and then did not find the
    record at all by its words (it happened to twenty writers on one host). The question's
    reads are one state of the index."""
    import numpy  # noqa: F401 - loaded, as in a server: the phrases are kept

    from aibuddy_cli.memory import lexical

    reader = Session(vault, "demo", environ={}).memory
    reader.save("shared", type="project", description="The shared runbook for deploys", body="")
    reader.save("other", type="project", description="Budget meeting", body="")
    assert [r.name for r in reader.recall("shared runbook deploys").records] == ["shared"]
    reader.save("zeta", type="project", description="Budget meeting", body="")  # (after it, shared's
    # row made anew gets another id)
    writer = Session(vault, "demo", environ={}).memory
    writer.index()  # (open: the writer tells the index what it writes)
    kept_scores = lexical.kept_scores

    def rewritten_meanwhile(*arguments: object) -> object:
        scores = kept_scores(*arguments)  # type: ignore[arg-type]
        monkeypatch.setattr(lexical, "kept_scores", kept_scores)
        writer.update("shared", body="Rewritten by another writer meanwhile.")
        return scores

    index = reader.index()
    assert [name for name, _ in index.rank_words("shared runbook deploys", 5)] == ["shared"]  # kept
    monkeypatch.setattr(lexical, "kept_scores", rewritten_meanwhile)
    assert [name for name, _ in index.rank_words("shared runbook deploys", 5)] == ["shared"]
