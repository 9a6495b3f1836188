from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import REPO

from aibuddy_cli.errors import InvalidInput, MalformedRecord
from aibuddy_cli.memory.records import (
    FIELD_ORDER,
    MemoryRecord,
    parse_record,
    render_record,
    validate_description,
)


def sample(**changes: object) -> MemoryRecord:
    fields = dict(
        name="weekly-report-format",
        description="Use a concise format for every weekly report",
        type="feedback",
        body="Keep it to five bullets.\n\n- done\n- next\n",
        created="2026-11-29T18:00:00Z",
        updated="2026-11-29T18:00:00Z",
    )
    fields.update(changes)
    return MemoryRecord(**fields)  # type: ignore[arg-type]


def test_header_keys_follow_the_design_order_and_the_body_is_verbatim() -> None:
    text = render_record(sample())
    header, body = text.split("---\n")[1], text.split("---\n", 2)[2]
    assert [line.split(":")[0] for line in header.splitlines()] == list(FIELD_ORDER)
    assert "created: 2026-11-29T18:00:00Z" in header  # timestamps are plain, not quoted
    assert "lastRecalledAt: null" in header
    assert body == "Keep it to five bullets.\n\n- done\n- next\n"


def test_the_rendered_bytes_are_pinned() -> None:
    text = render_record(sample(description="Kommentar: «façon» #1", extra=(("tags", ["a", "b"]),)))
    assert text == (
        "---\n"
        "name: weekly-report-format\n"
        "description: 'Kommentar: «façon» #1'\n"
        "type: feedback\n"
        "provenance: manual\n"
        "created: 2026-11-29T18:00:00Z\n"
        "updated: 2026-11-29T18:00:00Z\n"
        "recallCount: 0\n"
        "lastRecalledAt: null\n"
        "tags:\n"
        "- a\n"
        "- b\n"
        "---\n"
        "Keep it to five bullets.\n\n- done\n- next\n"
    )


def test_round_trip_is_lossless_and_rendering_is_byte_stable() -> None:
    record = sample(description="Kommentar: «façon» #1 — 周报: yes", body="no trailing newline")
    text = render_record(record)
    parsed = parse_record(record.name, text)
    assert parsed == record
    assert render_record(parsed) == text


def test_keys_a_person_added_are_kept_in_place() -> None:
    text = render_record(sample()).replace("lastRecalledAt: null\n", "lastRecalledAt: null\ntags: [a, b]\n")
    parsed = parse_record("weekly-report-format", text)
    assert parsed.extra == (("tags", ["a", "b"]),)
    assert "tags:" in render_record(parsed)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("no frontmatter at all\n", "no frontmatter"),
        ("---\nname: [\n---\nbody", "broken frontmatter YAML"),
        ("---\nname: x\ntype: user\n---\nbody", "missing key(s): description"),
        ("---\nname: x\ndescription: d\ndescription: e\ntype: user\n---\n", "duplicate key 'description'"),
        ("---\nname: x\ndescription: d\ntype: user\ntype: project\n---\n", "duplicate key 'type' (line 5)"),
        ("---\nname: x\ndescription: d\ntype: user\ntags: {a: 1, a: 2}\n---\n", "duplicate key 'a'"),
        ("---\n# only a comment\n---\nbody", "missing key(s): name, description, type"),
        ("---\nname: x\n\t\ndescription: d\ntype: user\n---\n", "broken frontmatter YAML"),
        ("---\nname: other\ndescription: d\ntype: user\n---\n", "does not match the file name"),
        ("---\nname: x\ndescription: d\ntype: opinion\n---\n", "unknown type"),
        ("---\nname: x\ndescription: d\ntype: user\nprovenance: model\n---\n", "unknown provenance"),
        ("---\nname: x\ndescription: d\ntype: user\nrecallCount: -1\n---\n", "recallCount"),
        (
            "---\nname: x\ndescription: d\ntype: user\n---\n\n---\nname: x\ndescription: e\n---\nbody",
            "duplicate frontmatter",
        ),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\nname: x\ndescription: d\ntype: user\ncreated: someday\n---\n", "not a timestamp"),
        ("---\nname: x\ndescription: d\ntype: user\ncreated: 2026-02-30T00:00:00Z\n---\n", "out of range"),
    ],
)
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "frontmatter"])
def test_malformed_records_say_what_is_wrong(text: str, problem: str, fast: bool) -> None:
    with pytest.raises(MalformedRecord) as raised:
        parse_record("x", text, fast=fast)
    assert problem in raised.value.message


def test_yaml_is_loaded_safely() -> None:
    text = "---\nname: x\ndescription: !!python/object/apply:os.system ['echo pwned']\ntype: user\n---\n"
    with pytest.raises(MalformedRecord):
        parse_record("x", text)


def test_a_hand_written_record_gets_defaults_for_missing_telemetry() -> None:
    parsed = parse_record("x", "---\nname: x\ndescription: Likes tea\ntype: user\n---\nTea, no sugar.\n")
    assert (parsed.provenance, parsed.recall_count, parsed.last_recalled_at) == ("manual", 0, None)


@pytest.mark.parametrize("bad", ["", "   ", "two\nlines", "x" * 501])
def test_descriptions_are_one_non_empty_line(bad: str) -> None:
    with pytest.raises(InvalidInput):
        validate_description(bad)


# --- python-frontmatter is the reader and writer; the YAML-free parser must agree with it ----

import random  # noqa: E402

import frontmatter  # noqa: E402
import yaml  # noqa: E402
from frontmatter.default_handlers import YAMLHandler  # noqa: E402

from aibuddy_cli.memory.header_edit import mark_recalled_text  # noqa: E402
from aibuddy_cli.memory.headers import load_header, parse_flat_header, yaml_plumbing  # noqa: E402


def frontmatter_header(header: str) -> object:
    """The header as the python-frontmatter route (RecordHandler) loads it, or the problem it reports."""
    try:
        return load_header("x", header)
    except MalformedRecord as exc:
        return exc.problem


def test_records_are_written_by_a_python_frontmatter_handler_in_the_design_order() -> None:
    handler = yaml_plumbing().handler
    assert isinstance(handler, YAMLHandler)
    post = frontmatter.Post("Body\n", handler)
    # python-frontmatter's own YAMLHandler would sort these; the handler puts the design's first.
    post.metadata = {"zeta": 1, "lastRecalledAt": None, "type": "user", "description": "d", "name": "x"}
    post["alpha"] = [2]
    assert frontmatter.dumps(post) == (
        "---\nname: x\ndescription: d\ntype: user\nlastRecalledAt: null\nzeta: 1\nalpha:\n- 2\n---\nBody\n"
    )


def test_the_frontmatter_route_keeps_the_body_byte_for_byte() -> None:
    text = "\ufeff---\r\nname: x\r\ndescription: d # c\r\ntype: user\r\n...\r\n\n  body\r\nend  \n\n"
    assert parse_record("x", text, fast=False).body == "\n  body\r\nend  \n\n"
    assert parse_record("x", text, fast=False) == parse_record("x", text)


@pytest.mark.process
def test_the_hot_path_reads_and_recalls_written_records_without_yaml_or_frontmatter() -> None:
    probe = (
        "import sys\n"
        "from aibuddy_cli.memory.header_edit import mark_recalled_text\n"
        "from aibuddy_cli.memory.records import parse_record\n"
        f"text = {render_record(sample())!r}\n"
        "record = parse_record('weekly-report-format', text).recalled('2026-11-30T08:00:00Z')\n"
        "assert 'recallCount: 1' in mark_recalled_text(text, record)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'frontmatter')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


TRICKY_VALUES = [
    "plain text",
    "yes",
    "No",
    "on",
    "null",
    "~",
    "",
    "42",
    "-7",
    "007",
    "0x1f",
    "1_000",
    "1:30",
    "3.14",
    ".inf",
    "1e3",
    "2026-11-29",
    "2026-11-29T18:00:00Z",
    "2026-11-29 18:00:00",
    "'single ''quoted'''",
    "'broken ' quote'",
    '"double"',
    '"with \\"escape\\""',
    '"tab\\there"',
    "a: b",
    "a #comment",
    "C# and F#",
    "http://example.com/x",
    "-dash",
    "- item",
    "[flow, list]",
    "{a: 1}",
    "&anchor",
    "*alias",
    "!tag x",
    "|",
    ">",
    "%percent",
    "@at",
    "`tick`",
    "周报格式：三段式",
    "trailing spaces   ",
    "ends with colon:",
    "=",
    "<< merge",
    "?question",
    "quote's inside",
    'say "hi"',
    "\u00a0nbsp",
    "zero\u200bwidth",
    "\x07bell",
]


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_flat_header_parser_agrees_with_frontmatter_and_yaml_or_declines(value: str) -> None:
    header = f"name: x\ndescription: {value}\ntype: user\n"
    flat = parse_flat_header(header)
    if flat is None:
        return  # declined: python-frontmatter decides
    assert flat == frontmatter_header(header) == yaml.safe_load(header)


def test_flat_header_parser_agrees_with_frontmatter_and_yaml_on_random_headers() -> None:
    rng = random.Random(7)
    alphabet = list("abc XYZ019:#'\"-_.,[]{}!&*|>%@`~?=<\t\\周报") + ["yes", "null", ": ", " #", "''"]
    for _ in range(3000):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        header = f"name: x\ndescription: {value}\nrecallCount: {rng.randint(0, 9)}\n"
        flat = parse_flat_header(header)
        if flat is None:
            continue
        assert flat == frontmatter_header(header) == yaml.safe_load(header), header


HEADER_LINES = [
    "name: x",
    "description: Drinks green tea",
    "description: 'quoted: yes'",
    'description: "double"',
    "description: yes",
    "description: 42",
    "type: user",
    "type: opinion",
    "provenance: auto",
    "created: 2026-11-29T18:00:00Z",
    "created: 2026-02-30T00:00:00Z",
    "created: 2026-11-29",
    "updated: null",
    "recallCount: 3",
    "recallCount: -1",
    "lastRecalledAt: ~",
    "tags: [a, b]",
    "tags:",
    "  - a",
    "note: |",
    "  two lines",
    "# a comment",
    "",
    "  ",
    "\t",
    "yes: no",
    "name: [",
    "- item",
]


def test_both_readers_give_the_same_answer_for_random_records() -> None:
    """Whole files, malformed ones included: the same record, or the same problem, either way."""
    rng = random.Random(11)
    bodies = ["", "Body.\n", "\n---\nname: x\ntype: user\n---\nsecond", "---\ntitle: T\n---\n", "x\r\n"]
    for _ in range(2000):
        # Mostly near-valid headers: the three required keys plus a few random lines, shuffled.
        lines = ["name: x", "description: d", "type: user"][: rng.choice([1, 2, 3, 3, 3, 3])]
        lines += [rng.choice(HEADER_LINES) for _ in range(rng.randint(0, 4))]
        rng.shuffle(lines)
        ending = rng.choice(["\n", "\r\n"])
        text = f"---{ending}{ending.join(lines)}{ending if lines else ''}---{ending}{rng.choice(bodies)}"
        answers = []
        for fast in (True, False):
            try:
                answers.append(parse_record("x", text, fast=fast))
            except MalformedRecord as exc:
                answers.append(exc.problem)
        assert answers[0] == answers[1], text


def test_a_recall_changes_only_the_telemetry_lines_of_a_hand_written_header() -> None:
    text = (
        '---\n# written by hand\nname: tea\ndescription: "Drinks green tea"\ntype: user\n'
        "recallCount: 2\nlastRecalledAt: null\ntags: [drinks]\n---\nBody stays.\n"
    )
    record = parse_record("tea", text).recalled("2026-11-30T08:00:00Z")
    updated = mark_recalled_text(text, record)
    assert updated == text.replace("recallCount: 2", "recallCount: 3").replace(
        "lastRecalledAt: null", "lastRecalledAt: 2026-11-30T08:00:00Z"
    )
    assert parse_record("tea", updated) == record
    without_telemetry = "---\nname: tea\ndescription: Drinks green tea\ntype: user\n---\nBody stays.\n"
    rendered = mark_recalled_text(
        without_telemetry, parse_record("tea", without_telemetry).recalled("2026-11-30T08:00:00Z")
    )
    assert "recallCount: 1" in rendered and rendered.endswith("---\nBody stays.\n")


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\u2028", "\x85"])
def test_the_flat_parser_declines_line_breaks_yaml_does_not_know(separator: str) -> None:
    assert parse_flat_header(f"name: x{separator}description: hello\ntype: user\n") is None
    assert parse_flat_header("name: x\n\u3000\ntype: user\n") is None
