"""How `kb search` ranks sections: by what a section says (its front matter and link targets count
for little), with the headings above it, and with its document's evidence as a whole."""

from __future__ import annotations

from pathlib import Path

from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault

HANDBOOK = Path(__file__).resolve().parents[2] / "bench" / "sets" / "handbook.md"


def anchors(vault: Vault, query: str) -> list[str]:
    with Session(vault, "demo", environ={}) as session:
        return [found.hit.anchor for found in session.knowledge.search(query, limit=5)]


def publish(vault: Vault, *paths: Path) -> None:
    with Session(vault, "demo", environ={}) as session:
        knowledge = session.knowledge
        knowledge.publish(
            *(o.doc for o in knowledge.import_paths([str(p) for p in paths], scope="system") if o.doc)
        )


def test_front_matter_and_link_lists_count_for_little(vault: Vault) -> None:
    publish(vault, HANDBOOK)
    assert anchors(vault, "security laptops encryption")[0] == "laptops"
    assert "_preamble" not in anchors(vault, "on-call releases")[:2]
    # Still found, below the prose: a search for a link finds the list that holds it.
    assert anchors(vault, "runbooks.northwind.example")[0] == "resources"


def test_a_section_is_found_by_the_headings_above_it(vault: Vault, tmp_path: Path) -> None:
    doc = tmp_path / "payments.md"
    doc.write_text("# Payments\n\n## Failures\n\n### Retries\n\nWait a minute, then try twice more.\n\n"
                   "## Refunds\n\n### Retries\n\nRefunds are never retried automatically.\n\n"
                   "## Links\n\n- [Latency board](https://grafana.internal/d/latency)\n")  # fmt: skip
    publish(vault, doc)
    assert anchors(vault, "retries after failures")[0] == "retries"
    assert anchors(vault, "refunds retries")[0] == "retries-1"
    assert anchors(vault, "grafana") == ["links"]  # a word only a link target holds


# A document of unrelated sections beside the ones a test is about, so that the index weighs
# words as in a real knowledge folder (with three sections every word is in most of them).
GARDEN = "# Garden notes\n\n" + "".join(
    f"## Bed {number}\n\nBed {number} grows {crop} beside the {place}; water it every few days.\n\n"
    for number, (crop, place) in enumerate(
        (crop, place) for crop in ("beans", "leeks", "kale", "peas") for place in ("wall", "pond", "shed")
    )
)


def publish_texts(vault: Vault, tmp_path: Path, **documents: str) -> None:
    paths = []
    for name, text in {**documents, "garden": GARDEN}.items():
        paths.append(tmp_path / f"{name}.md")
        paths[-1].write_text(text, encoding="utf-8")
    publish(vault, *paths)


POLICY = (
    "# Working policy\n\n## Arrangements\n\n### Hybrid\n\nHybrid work means two or three days a week in"
    " the office. A hybrid arrangement needs a manager's approval, and hybrid teams meet in the office"
    " on Tuesdays.\n\n### Remote\n\nRemote work is open to everyone after the first three months.\n\n"
    "## Expectations\n\n### Availability\n\nAnswer messages within two hours during working hours, and"
    " be reachable from 10 to 3 in your time zone.\n\n### Equipment\n\nThe company lends a laptop.\n"
)


def test_a_follow_up_after_the_question_before_it_finds_its_own_section(vault: Vault, tmp_path: Path) -> None:
    """The previous question comes first in the query, the follow-up last: the follow-up decides
    the section, the question before it the document (its words alone ranked the hybrid section
    first)."""
    publish_texts(vault, tmp_path, policy=POLICY)
    found = anchors(vault, "What is the hybrid work arrangement? When do I need to answer messages?")
    assert found[0] == "availability"
    assert "hybrid" in found[:3]  # (the question before is still what the document is about)
    assert anchors(vault, "What is the hybrid work arrangement?")[0] == "hybrid"


def test_a_request_after_the_question_does_not_choose_the_section(vault: Vault, tmp_path: Path) -> None:
    files = (
        "# Request Files\n\n## UploadFile\n\nUploadFile has a filename, a content type and a file. Its"
        " methods are async.\n\n## Examples\n\nAn example in detail: explain the example, then explain"
        " each detail of the example in detail.\n"
    )
    publish_texts(vault, tmp_path, files=files)
    assert anchors(vault, "What is UploadFile? Explain it in detail.")[0] == "uploadfile"
    assert anchors(vault, "Explain the example in detail")[0] == "examples"  # (no question: all words)


def test_chinese_question_words_do_not_choose_the_section(vault: Vault, tmp_path: Path) -> None:
    """什么, 怎么, 哪些 are to a Chinese question what "what", "how", "which" are to an English one:
    a heading that holds them ("什么是所有权规则") is not the answer to 什么是孤儿规则."""
    ownership = (
        "# 什么是所有权\n\n什么是所有权？所有权是一组规则。\n\n## 什么是所有权规则\n\n"
        "这些规则是：每个值有一个所有者；规则由编译器检查；违反规则的程序不能编译。\n"
    )
    traits = (
        "# Trait\n\n## 为类型实现 trait\n\n实现 trait 时，trait 或类型至少有一个属于当前 crate。"
        "不能为外部类型实现外部 trait，这被称为孤儿规则，它让两个 crate 不会为同一类型实现同一个 trait。\n"
    )
    publish_texts(vault, tmp_path, ownership=ownership, traits=traits)
    assert anchors(vault, "什么是孤儿规则？")[0] == "为类型实现-trait"
    assert anchors(vault, "什么是所有权？")[0] == "什么是所有权"  # (a question of question words alone)


def test_words_that_only_deny_or_ask_are_not_searched_for() -> None:
    """What is left of "doesn't", "isn't" and the Chinese verbs of denial found every section that
    denies anything; the question is marked as asking what is not so instead."""
    from aibuddy_cli.knowledge.search import parse_query

    english = parse_query("Which formats doesn't the exporter support? Why isn't XML one of them?")
    assert english.expression is not None and "doesn" not in english.expression
    assert "isn" not in english.expression and english.negated
    assert english.focus == ['"xml"', '"one"']  # the question asked: the last one
    chinese = parse_query("哪些格式不能导出？")
    assert chinese.expression is not None and chinese.negated
    assert '"哪 些"' not in chinese.expression and '"不 能"' not in chinese.expression
    assert '"格 式"' in chinese.expression and '"导 出"' in chinese.expression
    assert '"不 可"' in parse_query("不可变引用").focus  # (immutable is not a denial)
    assert parse_query("什么？").expression == '"什 么"'  # nothing else to search: kept
    assert not parse_query("Which formats does the exporter support?").negated


def test_a_table_row_is_read_with_its_header_and_a_list_item_with_its_lead_in() -> None:
    from aibuddy_cli.knowledge.ranking import passages
    from aibuddy_cli.text import tokens

    text = (
        "Limits differ by plan.\n\n| Plan | Requests per hour |\n|---|---|\n"
        "| Free | 100 |\n| Team | 5,000 |\n\n"
        "The file object has these methods:\n\n* `read(size)`: reads bytes.\n* `seek(offset)`: goes to\n"
        "  the offset.\n\n> To handle overflow, use:\n>\n> * `wrapping_add`\n"
    )
    words = tokens(text)
    read = [[" ".join(words[start:end]) for start, end in passage] for passage in passages(text)]
    assert read == [
        ["plan requests per hour", "free 100"],
        ["plan requests per hour", "team 5 000"],
        ["the file object has these methods", "read size reads bytes"],
        ["the file object has these methods", "seek offset goes to", "the offset"],
        ["to handle overflow use", "wrapping add"],
    ]


def test_a_section_holds_the_question_where_its_words_stand_together() -> None:
    from aibuddy_cli.knowledge.ranking import Phrase, best_window, evidence

    team, hour, data = Phrase(("team",), 2.0), Phrase(("hour",), 1.0), Phrase(("data",), 3.0)
    assert best_window([(0, 0), (40, 1), (44, 2)], [2.0, 1.0, 3.0]) == (4.0, 40)
    # Words far apart weigh as the best of them; a row and its header hold them all.
    columns = {"body": {"team": [2], "hour": [40], "data": [90]}}
    assert evidence(columns, [team, hour, data], 0).window == 3.0
    assert evidence(columns, [team, hour, data], 0, [[(0, 5), (88, 92)]]).window == 5.0
    # A heading the question's words make up counts whole; one among other words, in part.
    assert evidence({"title": {"team": [0]}}, [team], 1).heading == 2.0
    assert evidence({"title": {"team": [0]}}, [team], 4).heading == 0.5
    # A denial among the words counts as one more of them, for a question that asks what is not.
    denied = {"body": {"team": [10], "hour": [12], "not": [11]}}
    held = evidence(denied, [team, hour], 0, denials={"not"}, denial_weight=1.5)
    assert held.negation and held.window == 4.5
    far = {"body": {"team": [10], "not": [60]}}
    assert not evidence(far, [team], 0, denials={"not"}, denial_weight=1.5).negation


def test_token_counts_match_the_tokens_in_every_script() -> None:
    import random

    from aibuddy_cli.text import count_tokens, tokens

    alphabet = "abXY09 _-.,\n、・アー中文가éİ\u0301ß!|*#。，\u3000゛"
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert count_tokens(text) == len(tokens(text)), text
