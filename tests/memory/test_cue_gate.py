"""The deterministic cue gate of automatic extraction, measured on a labelled table of user turns.

tests/fixtures/cue_turns.tsv: lang (en|zh), label (lasting|chatter), kind (the expected cue kind of a
lasting turn, "-" for chatter), text (newlines and tabs escaped as \\n and \\t). Lasting turns state a
durable preference, a fact about the user, feedback on the assistant or a project fact; chatter
turns are task requests, questions and pasted material. bench/cue_gate_rates.py prints the figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers import CODE

from aibuddy_cli.memory.cues import CUE_KINDS, find_cues, normalise

TABLE = Path(__file__).resolve().parents[1] / "fixtures" / "cue_turns.tsv"

# Recall of lasting turns at least, open rate on chatter at most (the targets of the issue).
RECALL = {"en": 0.70, "zh": 0.45}
OPEN_RATE = {"en": 0.15, "zh": 0.05}


class Turn(NamedTuple):
    lang: str
    label: str
    kind: str
    text: str


def load_table() -> list[Turn]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "lang\tlabel\tkind\ttext"
    turns = []
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        assert len(fields) == 4, f"line {number}: {len(fields)} fields"
        lang, label, kind, text = fields
        turns.append(Turn(lang, label, kind, text.replace("\\n", "\n").replace("\\t", "\t")))
    return turns


TURNS = load_table()


def rate(lang: str, label: str) -> float:
    rows = [t for t in TURNS if t.lang == lang and t.label == label]
    return sum(bool(find_cues([t.text])) for t in rows) / len(rows)


def test_the_table_is_large_balanced_and_well_formed() -> None:
    assert len(TURNS) >= 200
    counts = Counter((t.lang, t.label) for t in TURNS)
    assert set(counts) == {("en", "lasting"), ("en", "chatter"), ("zh", "lasting"), ("zh", "chatter")}
    assert min(counts.values()) >= 50, counts
    by_lang = Counter(t.lang for t in TURNS)
    assert abs(by_lang["en"] - by_lang["zh"]) <= 0.1 * len(TURNS), by_lang
    for turn in TURNS:
        assert turn.text.strip()
        assert (turn.kind == "-") == (turn.label == "chatter"), turn
        assert turn.kind == "-" or turn.kind in CUE_KINDS, turn
    kinds = Counter((t.lang, t.kind) for t in TURNS if t.label == "lasting")
    assert all(kinds[(lang, kind)] >= 10 for lang in ("en", "zh") for kind in CUE_KINDS), kinds
    texts = [t.text for t in TURNS]
    assert len(set(texts)) == len(texts), "duplicate rows"


def test_the_held_out_batches_are_well_formed_and_apart_from_the_table() -> None:
    """bench/sets/cue_gate: batches to tune on and ones kept blind (their rates are the bench's, not
    asserted here): at least 60 turns per language and label (80 in the Chinese second round), no turn
    twice, none in the table."""
    folder = TABLE.parent.parent.parent / "bench" / "sets" / "cue_gate"
    seen = {t.text for t in TURNS}
    for name in ("tune", "blind"):
        lines = (folder / f"{name}.tsv").read_text(encoding="utf-8").splitlines()
        assert lines[0] == "lang\tlabel\tkind\ttext"
        rows = [line.split("\t") for line in lines[1:]]
        assert all(len(row) == 4 and row[3].strip() for row in rows), name
        counts = Counter((lang, label) for lang, label, _, _ in rows)
        assert set(counts) == {(lang, label) for lang in ("en", "zh") for label in ("lasting", "chatter")}
        assert min(counts.values()) >= 60, (name, counts)
        for _, label, kind, _ in rows:
            assert (kind == "-") == (label == "chatter") and (kind == "-" or kind in CUE_KINDS), name
        texts = [row[3] for row in rows]
        assert len(set(texts)) == len(texts) and not seen & set(texts), name
        seen |= set(texts)
    # the Chinese second round: 80 turns a label at least, and a fifth column saying what each is about
    durable = {"job", "family", "health", "home", "habit", "ability", "experience", "possession"}
    durable |= {"like", "belief"}
    chatter = {"booking", "search", "correction", "question", "confirmation", "assistant", "transient"}
    for name in ("zh_round2_tune", "zh_round2_blind"):
        lines = (folder / f"{name}.tsv").read_text(encoding="utf-8").splitlines()
        assert lines[0] == "lang\tlabel\tkind\ttext\ttopic"
        rows = [line.split("\t") for line in lines[1:]]
        assert all(len(row) == 5 and row[0] == "zh" and row[3].strip() for row in rows), name
        counts = Counter(label for _, label, _, _, _ in rows)
        assert set(counts) == {"lasting", "chatter"} and min(counts.values()) >= 80, (name, counts)
        for _, label, kind, _, topic in rows:
            assert (kind == "-") == (label == "chatter") and (kind == "-" or kind in CUE_KINDS), name
            assert topic in (durable if label == "lasting" else chatter), (name, topic)
        assert {topic for *_, topic in rows} == durable | chatter, name
        texts = [row[3] for row in rows]
        assert len(set(texts)) == len(texts) and not seen & set(texts), name
        seen |= set(texts)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_recall_of_lasting_statements(lang: str) -> None:
    assert rate(lang, "lasting") >= RECALL[lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_open_rate_on_task_chatter(lang: str) -> None:
    assert rate(lang, "chatter") <= OPEN_RATE[lang]


@pytest.mark.parametrize(
    "text",
    [
        # the misses
        "Please, always prefer tables in every monthly report.",
        "my favourite font is Inter",
        "I have a mild cat allergy.",
        "I grew up in Porto.",
        "我最喜欢的水果是芒果。",
        "我住在南京。",
        # adverbs and punctuation between the words
        "I really, really dislike tabs.",
        "I'd honestly rather you skipped the intro.",
        # Chinese forms that must still open the gate
        "我叫李雷。",
        "以后都用中文回答。",
        "你应该先问我。",
        # feedback and project facts
        "No, that's wrong: the API returns a list.",
        "Too verbose, keep answers short from now on.",
        "The deadline moved to March 14.",
        "我们组一直用 pnpm。",
    ],
)
def test_lasting_statements_open_the_gate(text: str) -> None:
    assert find_cues([text])


@pytest.mark.parametrize(
    "text",
    [
        "perfect, exactly what I wanted, keep doing it that way",
        "就这样写，很好",
        "That's the length I want.",
        # the confirmations, which opened no cue
        "Perfect, exactly what I wanted. Keep it up.",
        "Great job, keep it up.",
        "Love this format, keep it.",
        # approval and "keep it as it is" in two sentences, in either language
        "Perfect length. Keep it.",
        "这个语气刚刚好，别改。",
        "嗯，这种先给结论的写法很好，请沿用。",
    ],
)
def test_a_confirmation_is_feedback(text: str) -> None:
    """An approach the user approves of and wants kept is feedback, as a correction is."""
    assert "feedback" in find_cues([text])


@pytest.mark.parametrize(
    "text",
    [
        "Perfect, thanks!",
        "Great, that works.",
        "好的，谢谢。",
        "就这样吧，先这样。",
        # praise that goes on with the task, and "keep" of the material at hand
        "Great, now book the 7 pm one.",
        "Perfect, next question.",
        "Keep it up to date with the latest prices please.",
        "Great, keep the first paragraph and cut the rest.",
        "Yes, keep it.",
        "Keep it.",
        "很好，把第一段保留，其余删掉。",
        "很好，保持这个文件其他部分不变。",
        "正是我想要的信息，谢谢。",
        "这段别改。",
    ],
)
def test_thanks_alone_is_not_a_confirmation(text: str) -> None:
    assert find_cues([text]) == []


@pytest.mark.parametrize(
    "text",
    [
        # the false openings
        "I want a table for two at eight",
        "I need a train to Boston",
        "Can you summarise this",
        "Use a concise format for this report.",
        "下班以后帮我订车。",
        "明天应该会下雨吧？",
        "帮我叫车。",
        # pasted material: a code block, an indented block, a quoted email, a log, introduced text
        "Fix this please:\n```python\n# I prefer tabs, always\nx = 1\n```",
        "What's wrong?\n~~~\nfrom now on: never use globals\n~~~",
        "Is this valid?\n    always_use_tls: true\n    my_name_is: gateway",
        "Reply to Tom for me:\n> I prefer Thursdays from now on.\n> Our team uses Zoom.",
        "Why?\n2024-05-01 10:00:01 ERROR my team queue: always retry\n2024-05-01 10:00:02 WARN never seen",
        "Translate this into German: I always prefer tea and our team uses Slack.",
        "帮我润色下面这段：\n大家好，我叫张伟，我一直喜欢跑步。",
    ],
)
def test_task_chatter_and_pasted_material_keep_it_shut(text: str) -> None:
    assert find_cues([text]) == []


@pytest.mark.parametrize(
    "text",
    [
        # a correction of a request, a choice among the options of a booking
        "No, I want the 8:15 one.",
        "No, I'd like the Thai place instead.",
        "I would prefer a shared ride.",
        "I'd rather take the aisle seat.",
        "I prefer a regular ride to 12 Oak Street.",
        "I don't want to book it yet.",
        # a bare "no" answers the assistant's question; thanks and closings
        "No. Thank you so much.",
        "I really appreciate your help.",
        "Thanks, I'm all set.",
        # first-person plans and the slots of a booking
        "I wanna go to 480 Castro Street.",
        "I plan to check out on the 9th.",
        "My destination is Lisbon. There will be 2 guests.",
    ],
)
def test_a_request_with_a_first_person_verb_keeps_it_shut(text: str) -> None:
    assert find_cues([text]) == []


@pytest.mark.parametrize(
    "text",
    [
        # a relative clause or a pseudo-cleft in the present tense, the tense of habits
        "The one dish that I always order is pho.",
        "Gardening is something that I do every weekend.",
        "Running is how I clear my head.",
        "Afternoons are when I answer email.",
        # a recurring time as the topic, a habit said without "I prefer"
        "Sundays I visit my grandparents.",
        "Breakfast is usually toast and tea at my place.",
        # possession is stative
        "I have a vegetable garden.",
    ],
)
def test_a_statement_of_habit_opens_it(text: str) -> None:
    assert find_cues([text]) == ["preference"]


@pytest.mark.parametrize(
    "text",
    [
        # plain first-person statements: where the user works, habits, what they never do, their home
        "我在一家医院上夜班。",
        "我在学钢琴。",
        "我每周去两次游泳馆。",
        "我周末一般在家看书。",
        "我不抽烟也不喝酒。",
        "我不会开车。",
        "我家离学校很近。",
        "我养了一只鹦鹉。",
    ],
)
def test_a_plain_chinese_statement_about_the_user_opens_it(text: str) -> None:
    assert find_cues([text])


@pytest.mark.parametrize(
    "text",
    [
        # requests with 我 as their subject
        "我要订一间大床房。",
        "我想查一下明天去杭州的高铁。",
        "我在找一家可以带狗的民宿。",
        "我不要这家，换一家。",
        "我不去了，谢谢。",
        "我家附近有没有地铁站？",
        # the user noting what the assistant said, and liking the options at hand
        "好的，我记下来了，谢谢！",
        "记住了，谢谢你。",
        "太好了，我喜欢，谢谢你的推荐！",
        "都是我喜欢吃的菜，谢谢。",
        # a plain first-person clause about the task at hand: a time, a means, a slot of the trip, an
        # answer among the options, an event done, a task given, a thanks
        "我下午出发。",
        "我坐高铁。",
        "我住两晚。",
        "我一个人。",
        "我都行。",
        "我会在三点左右到。",
        "我去过那家了，换一家吧。",
        "我已经付过钱了。",
        "我有一张优惠券。",
        "我时间不多。",
        "我老板让我写一份总结。",
        "我写的是一个爬虫。",
        "我很满意，谢谢！",
    ],
)
def test_chinese_task_chatter_with_a_first_person_subject_keeps_it_shut(text: str) -> None:
    assert find_cues([text]) == []


@pytest.mark.parametrize(
    "text",
    [
        # states and health
        "我很容易晕船。",
        "我左眼弱视。",
        "我恐高，从来不坐过山车。",
        # abilities
        "我会弹古筝。",
        "我能看懂韩文。",
        "我游泳游得不错。",
        # experiences, also in the negative
        "我曾经去过冰岛。",
        "我没坐过高铁。",
        "我以前是做会计的。",
        # bare habits, without a time word
        "我打网球和篮球。",
        "我骑车上班。",
        # possession, whatever the classifier, and where
        "我有三匹马。",
        "我有一艘帆船。",
        "对了，我在老家有一套房子。",
        # beliefs
        "我相信因果。",
        "我认为早睡很重要。",
        # living alone, a duration in years, the home near a station, a habit with 每次…都 and a hotel
        "我一个人住。",
        "我开出租车二十年了。",
        "我家离地铁站只有五分钟。",
        "我每次去北京都住同一家酒店。",
    ],
)
def test_a_chinese_statement_of_a_state_ability_experience_habit_or_possession_opens_it(text: str) -> None:
    """我 and a predicate with no aspect, modal or deictic: in Chinese, what the user is, can do,
    has done, does and has, not what they want now."""
    assert find_cues([text])


@pytest.mark.parametrize(
    "text",
    ["不对不对，我要的是单程票。", "这个日期不对，应该是二十号。", "我的意思是找离公园近的。"],
)
def test_a_chinese_correction_of_a_request_keeps_it_shut(text: str) -> None:
    """不对 / 我的意思是 about a slot of the request (a ticket, a date, what to look for) corrects the
    request, not the assistant."""
    assert find_cues([text]) == []


def test_a_long_pasted_paragraph_is_not_read() -> None:
    pasted = "Minutes of the meeting. " * 40 + "Our team uses Jira and I prefer Linear from now on."
    assert len(pasted) > 800
    assert find_cues([pasted]) == []
    assert find_cues([pasted, "From now on, answer in French."]) == ["preference"]


def test_full_width_punctuation_and_curly_quotes_are_normalised() -> None:
    assert normalise("Ｐｌｅａｓｅ，ａｌｗａｙｓ  use\ttables！") == "please,always use tables!"
    assert find_cues(["Ｐｌｅａｓｅ，ａｌｗａｙｓ  use\ttables！"]) == ["preference"]
    assert normalise("I\u2019m \u201cvery\u201d sure") == "i'm _ sure"  # quoted spans are mentions
    assert find_cues(["I\u2019m allergic to nuts."]) == ["identity"]
    assert find_cues(["Ｆｒｏｍ ｎｏｗ ｏｎ，ａｎｓｗｅｒ ｉｎ Ｆｒｅｎｃｈ．"]) == ["preference"]
    assert find_cues(["以后，请都用中文回答。"]) == ["preference"]  # ，(full width) → ,
    assert find_cues(["How do you say \u201cI prefer tea\u201d in French?"]) == []


def test_kinds_come_in_a_fixed_order_without_duplicates() -> None:
    turns = [
        "Our team uses Poetry.",
        "No, that's wrong.",
        "My name is Priya.",
        "I prefer short answers.",
        "I prefer tea.",
    ]
    assert find_cues(turns) == list(CUE_KINDS)
    assert find_cues([]) == [] and find_cues(["", "   "]) == []
    assert find_cues(iter(["I prefer tea."])) == ["preference"]


@pytest.mark.process
def test_the_module_imports_light() -> None:
    """Stdlib only; no pattern is compiled at import (the first turn read pays for that). How
    fast that is belongs to `make bench` (bench_memory's start-up figures), not to a test."""
    probe = (
        "import sys\n"
        "import aibuddy_cli.memory.cues as cues\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'typer', 'rich', 'yaml'))\n"
        "print(heavy, cues._RULES[0].pattern._compiled is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    heavy, lazy = out.stdout.rsplit(" ", 1)
    assert heavy == "[]" and lazy.strip() == "True"


@pytest.mark.process
def test_the_bench_script_says_when_the_dev_set_is_absent(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "bench" / "cue_gate_rates.py"
    code = {**os.environ, "PYTHONPATH": str(CODE)}  # this code, not an installed copy
    done = subprocess.run(
        [sys.executable, str(script), "--devsets", str(tmp_path)], capture_output=True, text=True, env=code
    )
    assert done.returncode == 0, done.stderr
    headers = [line.split()[:2] for line in done.stdout.splitlines()]
    assert headers.count(["lang", "lasting"]) == 5  # the table and the four held-out batches
    assert done.stdout.count(f"(no cue-gate dev set at {tmp_path}: only the table is measured)") == 1
