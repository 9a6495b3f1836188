"""Recall's meaning signal, on by default: WordLlama's static vectors (shipped in its wheel, a base
dependency) fused with the words, so a question finds a record it shares no word with; the
`embedding` model role replaces them when configured; `--json` names the signals that ranked."""

from __future__ import annotations

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory import semantic
from aibuddy_cli.memory.records import MemoryRecord, render_record
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


# --- Chinese: the characters a question shares with the records (memory/ngrams.py) ---------------

CHINESE_NOTES = {
    "vegetarian": ("从去年开始吃素，不碰肉类", "可以吃鸡蛋和牛奶。"),
    "corgi": ("家里养了一只柯基，叫豆豆", "每天傍晚在小区里遛它。"),
    "weekly-report": ("每周五下午写周报发给主管", "格式：本周完成、遇到的问题、下周计划。"),
    "high-speed-rail": ("出差尽量坐高铁，不坐飞机", "晕机严重，上海到北京也选高铁。"),
}


@pytest.fixture
def chinese_notes(notes: Vault) -> Vault:
    folder = notes.root / "memory/demo"
    for name, (description, body) in CHINESE_NOTES.items():
        record = MemoryRecord(
            name=name,
            description=description,
            type="user",
            body=body,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
        )
        (folder / f"{name}.md").write_text(render_record(record))
    return notes


def test_a_text_s_character_runs_are_its_runs_of_one_to_three_cjk_characters() -> None:
    """The grams a record is ranked by for a Chinese question: each run of 1 to 3 CJK characters
    with its count, never across a space, a punctuation mark or a Latin letter."""
    from collections import Counter

    from aibuddy_cli.memory.ngrams import grams

    assert grams("周报格式，周报 ok 周x报") == Counter(
        {"周": 3, "报": 3, "格": 1, "式": 1, "周报": 2, "报格": 1, "格式": 1, "周报格": 1, "报格式": 1}
    )
    assert grams("deploy report") == Counter() and grams("周 报") == Counter({"周": 1, "报": 1})


def test_a_chinese_question_finds_a_record_it_shares_only_a_character_with(chinese_notes: Vault) -> None:
    """ "她平时吃荤吗？" shares no two adjacent characters (the words) with "从去年开始吃素": the
    characters it shares with the records find it, and --json's method says meaning ranked."""
    names, method, warnings = recall(chinese_notes, "她平时吃荤吗？")
    assert names == ["vegetarian"] and method == "words+meaning" and warnings == []
    assert recall(chinese_notes, "周报什么时候交？")[0][0] == "weekly-report"  # the words still count


def test_a_chinese_question_with_semantic_false_keeps_the_words(chinese_notes: Vault) -> None:
    assert recall(chinese_notes, "她平时吃荤吗？")[:2] == (["vegetarian"], "words+meaning")
    setting(chinese_notes, "recall", "semantic = false")
    assert recall(chinese_notes, "她平时吃荤吗？")[:2] == ([], "lexical")


def test_a_chinese_question_needs_no_static_model(
    chinese_notes: Vault, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """The characters need no package: without WordLlama a Chinese question still ranks by meaning."""
    monkeypatch.setattr(semantic, "_SHARED", semantic.StaticModel(tmp_path / "no-such-package"))
    names, method, warnings = recall(chinese_notes, "她平时吃荤吗？")
    assert names == ["vegetarian"] and method == "words+meaning" and warnings == []


def test_an_english_question_never_uses_the_characters(
    chinese_notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a question mostly in Chinese or Japanese is ranked by its characters; a mixed one
    ("weekly 周报 format") is an English question: the static vectors rank it, as before."""
    from aibuddy_cli.memory.index import MemoryIndex

    asked: list[str] = []
    real = MemoryIndex.rank_characters

    def spied(self: MemoryIndex, query: str, *rest: object) -> object:
        asked.append(query)
        return real(self, query, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryIndex, "rank_characters", spied)
    assert semantic.mostly_cjk("周报格式是什么") and not semantic.mostly_cjk("weekly 周报 format")
    for question in ("Does she have pets?", "weekly 周报 format"):
        assert recall(chinese_notes, question)[1] == "words+meaning"
    assert recall(chinese_notes, "Does she have pets?")[0][0] == "dogs"
    assert asked == []
    recall(chinese_notes, "她有宠物吗")
    assert asked == ["她有宠物吗"]


def test_a_chinese_question_finds_what_a_changed_record_says_now(chinese_notes: Vault) -> None:
    """The records' characters are kept in the derived index and replaced when a record changes."""
    path = chinese_notes.root / "memory/demo/vegetarian.md"
    text = path.read_text().replace("从去年开始吃素，不碰肉类", "周末去爬山")
    path.write_text(text.replace("可以吃鸡蛋和牛奶。", ""))
    assert "vegetarian" not in recall(chinese_notes, "她平时吃荤吗？")[0]
    assert recall(chinese_notes, "喜欢登山吗？")[0] == ["vegetarian"]
    path.unlink()
    assert recall(chinese_notes, "喜欢登山吗？")[0] == []


def test_a_record_sharing_only_common_characters_is_no_match(vault: Vault) -> None:
    """A match by meaning holds at least 15 % of the question's characters, weighted by rarity: a
    question about something no record mentions gets nothing for the 的 and 是 it shares with them."""
    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True)
    for number, description in enumerate(
        ["女儿的钢琴课在周六上午", "我的电脑是去年买的", "妈妈做的红烧肉最好吃", "公司的年会在十二月",
         "朋友送的绿萝长得很好", "周报的格式是三段式"]
    ):  # fmt: skip
        record = MemoryRecord(name=f"note-{number}", description=description, type="user", body="")
        (folder / f"note-{number}.md").write_text(render_record(record))
    assert recall(vault, "量子计算机的原理是什么？")[:2] == ([], "words+meaning")
    assert recall(vault, "周报怎么写？")[0] == ["note-5"]


# --- the embedding role ---------------------------------------------------------------------------


@pytest.fixture
def embedding_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    return {"AIBUDDY_MODEL_EMBEDDING": "openai/test-embedding", "AIBUDDY_TIMEOUT": "30"}


def embedded_texts(server: FakeOpenAI) -> list[str]:
    return [text for r in server.requests if r["path"].endswith("/embeddings") for text in r["body"]["input"]]


@pytest.mark.process
def test_the_embedding_model_replaces_the_static_vectors(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    """The fake model folds "cat" and "dog" together (tests/fake_openai.py): a question about a
    cat finds the dogs by the model's vectors, where the words share nothing."""
    names, method, _ = recall(notes, "cat", embedding_env)
    assert names[0] == "dogs" and method == "words+embedding"
    assert len(embedded_texts(fake_openai)) == len(NOTES) + 1  # every record once, and the question


@pytest.mark.process
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


@pytest.mark.process
def test_another_embedding_model_embeds_again(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    recall(notes, "cat", embedding_env)
    fake_openai.requests.clear()
    recall(notes, "cat", {**embedding_env, "AIBUDDY_MODEL_EMBEDDING": "openai/other-embedding"})
    assert len(embedded_texts(fake_openai)) == len(NOTES) + 1


@pytest.mark.process
def test_when_the_embedding_model_fails_the_words_rank_alone(
    notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    fake_openai.embedding_failures.extend([500] * 10)
    names, method, warnings = recall(notes, "guitar scales", {**embedding_env, "AIBUDDY_MODEL_RETRIES": "0"})
    assert names == ["guitar"] and method == "lexical"
    assert any("used the words alone" in w for w in warnings)


@pytest.mark.process
def test_a_chat_model_for_every_role_is_not_asked_for_embeddings(
    notes: Vault, fake_openai: FakeOpenAI, model_env: dict[str, str]
) -> None:
    """AIBUDDY_MODEL (or [models] default) names a chat model: recall's meaning stays static."""
    recall(notes, "Does she have pets?", model_env)
    assert embedded_texts(fake_openai) == []


@pytest.mark.process
def test_the_embedding_model_ranks_a_chinese_question_itself(
    chinese_notes: Vault, fake_openai: FakeOpenAI, embedding_env: dict[str, str]
) -> None:
    """An embedding model reads Chinese: it replaces the characters as it replaces the static vectors."""
    assert recall(chinese_notes, "她平时吃荤吗？", embedding_env)[1] == "words+embedding"


def test_many_records_at_once_get_the_vectors_one_record_gets() -> None:
    """The records are embedded in bulk (through numpy), a question alone (in Python): the two
    must agree, or a question would be compared with vectors of another kind."""
    texts = ["Walked her dog by the river", "Filed the quarterly tax return 周报"] * (semantic.BULK + 1)
    model = semantic.StaticModel()
    alone = model.embed(texts[:2])
    many = model.embed(texts)
    pairs = zip(alone, many[:2], strict=True)
    assert all(abs(a - b) < 1e-5 for one, other in pairs for a, b in zip(one, other, strict=True))


def test_a_few_records_a_server_embeds_get_the_very_vectors_of_a_bulk_build() -> None:
    """A server embeds the records saved since the last question a few at a time (numpy being
    loaded): exactly the vectors a first build gives them (the whole table made float32 first)."""
    import numpy  # noqa: F401 - loaded, as in a server

    texts = [
        f"Walked her dog by the river {n}, then filed the tax return 周报"
        for n in range(semantic.WHOLE_TABLE + 1)
    ]
    model = semantic.StaticModel()
    bulk = model.embed(texts, records=True)
    assert [model.embed([text], records=True)[0] for text in texts[:3]] == bulk[:3]


def test_a_server_session_finds_what_records_say_now(notes: Vault) -> None:
    """A long-lived process (the MCP server) keeps the records' sign codes in memory from its
    second question on: a record changed by hand, saved, updated or deleted since is ranked by
    what it says now."""
    with Session(Vault.open(notes.root, {}), "demo", environ={}) as session:

        def names(query: str) -> list[str]:
            return [record.name for record in session.memory.recall(query).records]

        for _ in range(3):  # the codes are kept from the second question on
            assert names("Does she have pets?")[0] == "dogs"
        path = notes.root / "memory/demo/oven.md"
        text = path.read_text().replace("The oven thermostat is broken", "Booked a flight to Lisbon")
        path.write_text(text)
        assert names("plane journey abroad")[0] == "oven"
        planted = "Planted tomatoes in the vegetable patch"
        session.memory.save("garden", type="user", description=planted, body="")
        assert names("growing food plants")[0] == "garden"
        session.memory.update("garden", description="Repaired the roof tiles after the storm")
        assert names("fixing the house top")[0] == "garden"
        session.memory.delete("dogs")
        assert "dogs" not in names("Does she have pets?")


def test_the_shortlist_in_memory_is_the_one_read_from_the_index() -> None:
    """SignCodes (numpy, a server's) picks the very records the pure-Python popcount picks: the
    fewest differing signs, ties to the lower id; only among the given ids when some are."""
    import heapq
    import random

    rng = random.Random(7)

    def code() -> bytes:  # many alike: ties
        return bytes(rng.choice([0, 255, rng.randrange(256)]) for _ in range(32))

    rows = [(key, code()) for key in range(1, 900)]
    rng.shuffle(rows)
    table = semantic.SignCodes([(key, blob, None) for key, blob in rows])
    for _ in range(20):
        question = bytes(rng.randrange(256) for _ in range(32))
        among = sorted(rng.sample(range(1, 900), 300))
        for size, within in ((200, None), (50, among), (1000, among)):
            listed = [(key, blob) for key, blob in rows if within is None or key in within]
            bits = int.from_bytes(question, "little")
            expected = heapq.nsmallest(
                size, (((int.from_bytes(blob, "little") ^ bits).bit_count(), key) for key, blob in listed)
            )
            assert table.shortlist(question, size, within) == [key for _, key in expected]


def test_the_vectors_in_memory_score_as_the_index_s() -> None:
    """A server's cosines from the vectors it keeps are the very numbers the vectors read from
    the index give (a ranking never depends on where they came from)."""
    import random

    rng = random.Random(3)
    vectors = {key: semantic.normalised([rng.uniform(-1, 1) for _ in range(32)]) for key in range(1, 300)}
    rows = [(key, semantic.code(vector), semantic.pack(vector)) for key, vector in vectors.items()]
    table = semantic.SignCodes(rows[::-1])
    question = semantic.normalised([rng.uniform(-1, 1) for _ in range(32)])
    chosen = table.shortlist(semantic.code(question), 50)
    by_blobs = semantic.cosines(question, [semantic.pack(vectors[key]) for key in chosen])
    assert table.cosines(question, chosen) == by_blobs
    alone = [
        sum(a * b for a, b in zip(question, semantic.unpack(semantic.pack(vectors[key])), strict=True))
        for key in chosen
    ]
    assert all(abs(a - b) < 1e-12 for a, b in zip(alone, by_blobs, strict=True))


def test_a_servers_sign_codes_follow_changed_records_as_a_fresh_read_does() -> None:
    """SignCodes.changed (a server's codes after a save: the changed records read again only)
    gives the same shortlist and cosines as the codes read anew."""
    import random

    from aibuddy_cli.memory import semantic

    chance = random.Random(7)

    def row(key: int) -> tuple[int, bytes, bytes]:
        vector = [chance.uniform(-1, 1) for _ in range(4)]
        return key, chance.randbytes(8), semantic.pack(vector)

    rows = {key: row(key) for key in range(1, 300)}
    table = semantic.SignCodes(list(rows.values()), "before")
    first = table
    for step in range(40):  # save after save: the kept vectors grow, and are copied anew at times
        changed = sorted({chance.randrange(1, 300 + step * 40) for _ in range(30)} | {300 + step})
        for key in changed:
            if key in rows and chance.random() < 0.5:
                del rows[key]
            else:
                rows[key] = row(key)
        fresh = semantic.SignCodes(list(rows.values()))
        table = table.changed([rows[key] for key in changed if key in rows], changed, step)
        question, some = chance.randbytes(8), chance.sample(sorted(rows), 5)
        assert table.shortlist(question, 20) == fresh.shortlist(question, 20)
        assert table.shortlist(question, 20, some) == fresh.shortlist(question, 20, some)
        assert table.cosines([0.5, 0.1, -0.2, 0.3], some) == fresh.cosines([0.5, 0.1, -0.2, 0.3], some)
    assert first.generation == "before" and table.generation == 39


def test_a_one_shot_shortlist_is_the_one_a_server_picks() -> None:
    """semantic.nearest (a one-shot command's shortlist, without numpy) picks the very records
    SignCodes.shortlist picks: the fewest differing signs, ties to the lower id; with many ties,
    codes of other widths, and codes differing in every bit from the question's."""
    import random

    rng = random.Random(11)
    for width in (1, 8, 32, 33, 192):
        for count in (0, 3, 200, 201, 1500):
            alike = [rng.randbytes(width) for _ in range(3)]
            question = rng.randbytes(width)
            opposite = bytes(255 - byte for byte in question)
            codes = [rng.choice([*alike, opposite, rng.randbytes(width)]) for _ in range(count)]
            ids = sorted(rng.sample(range(1, 5 * count + 2), count))
            table = semantic.SignCodes([(key, blob, None) for key, blob in zip(ids, codes, strict=True)])
            for size in (1, 5, 200):
                got = semantic.nearest(question, ids, semantic.columns(codes), size)
                assert got == table.shortlist(question, size), (width, count, size)


def test_a_kept_pack_of_codes_follows_changed_records_as_a_fresh_read_does() -> None:
    """CodePack.merged (a pack renewed after saves: the changed records read again only) holds
    the very ids and codes a pack made anew from every code holds."""
    import random

    from aibuddy_cli.memory.index import CodePack

    chance = random.Random(5)
    rows = {key: chance.randbytes(32) for key in range(1, 400, 2)}
    pack = CodePack.of("m", 1, 0, sorted(rows.items()))
    assert pack is not None
    for step in range(1, 30):
        changed = sorted({chance.randrange(1, 400 + step * 20) for _ in range(chance.choice([1, 5, 60]))})
        for key in changed:
            if key in rows and chance.random() < 0.4:
                del rows[key]
            elif chance.random() < 0.9:
                rows[key] = chance.randbytes(32)
        merged = pack.merged(changed, {key: rows[key] for key in changed if key in rows})
        fresh = CodePack.of("m", 1, step, sorted(rows.items()))
        assert merged is not None and fresh is not None
        assert (list(merged.ids), merged.codes) == (list(fresh.ids), fresh.codes)
        pack = merged
    assert pack.merged([1], {1: b"short"}) is None  # a code of another width: made anew instead


def test_a_one_shot_recall_reads_the_codes_from_one_row_and_finds_what_records_say_now(
    notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command run once (no numpy: no codes kept in memory) reads the records' sign codes from
    one row the index keeps (a pack, renewed when records change), not a row a record, and
    counts no records when none changed; a record changed by hand, saved, updated or deleted
    since is ranked by what it says now."""
    from aibuddy_cli.memory.index import MemoryIndex

    monkeypatch.setattr(MemoryIndex, "_sign_codes", lambda self, model: None)
    statements: list[str] = []

    def names(query: str) -> list[str]:
        with Session(Vault.open(notes.root, {}), "demo", environ={}) as session:
            session.memory.index().db.set_trace_callback(statements.append)
            return [record.name for record in session.memory.recall(query).records]

    assert names("Does she have pets?")[0] == "dogs"  # the first makes the pack
    statements.clear()
    assert names("Does she have pets?")[0] == "dogs"
    assert not [sql for sql in statements if "record_codes" in sql or "count(" in sql]
    path = notes.root / "memory/demo/oven.md"
    path.write_text(path.read_text().replace("The oven thermostat is broken", "Booked a flight to Lisbon"))
    assert names("plane journey abroad")[0] == "oven"
    with Session(Vault.open(notes.root, {}), "demo", environ={}) as session:
        planted = "Planted tomatoes in the vegetable patch"
        session.memory.save("garden", type="user", description=planted, body="")
    assert names("growing food plants")[0] == "garden"
    with Session(Vault.open(notes.root, {}), "demo", environ={}) as session:
        session.memory.update("garden", description="Repaired the roof tiles after the storm")
    assert names("fixing the house top")[0] == "garden"
    with Session(Vault.open(notes.root, {}), "demo", environ={}) as session:
        session.memory.delete("dogs")
    assert "dogs" not in names("Does she have pets?")


def test_a_server_ranks_chinese_questions_by_the_postings_it_keeps_as_sqlite_does(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived process sums the characters' postings it keeps (numpy) instead of SQLite: the
    very same scores and order, for every question, among a question's dated records too, and
    after a save (the kept postings are dropped when a record changes)."""
    import random

    import numpy  # noqa: F401  (a server has it loaded)

    from aibuddy_cli.memory import index as memory_index

    chance = random.Random(9)
    text = "周报格式要用三段式进展风险下周计划每次部署前必须先跑完整的测试数据库迁移要在低峰期部署"
    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True)
    for number in range(120):
        words = "，".join(text[start : start + chance.randint(2, 6)] for start in chance.sample(range(40), 6))
        record = MemoryRecord(name=f"n{number:03d}", description=words[:12], type="user", body=words)
        (folder / f"{record.name}.md").write_text(render_record(record))
    questions = ["周报格式", "测试环境部署", "数据库迁移", "每次部署前", "下周计划的风险", "低峰期"]

    def both(index: memory_index.MemoryIndex, among: set[str] | None) -> None:
        for question in questions:
            memory_index._KEPT_GRAMS.clear()
            assert index._gram_postings() is not None
            kept = index.rank_characters(question, 50, among)
            with monkeypatch.context() as patched:  # as a one-shot command: SQLite sums them
                patched.setattr(memory_index.MemoryIndex, "_gram_postings", lambda self: None)
                summed = index.rank_characters(question, 50, among)
            assert kept == summed and kept[0], question

    with Session(Vault.open(vault.root, {}), "demo", environ={}) as session:
        index = session.memory.index()
        both(index, None)
        both(index, {f"n{number:03d}" for number in range(0, 120, 3)})
        kept = index._gram_postings()
        session.memory.save("later", type="user", description="周报格式", body="周报格式 下周计划")
        index = session.memory.index()
        assert index._gram_postings() is not kept
        both(index, None)
