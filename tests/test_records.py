from __future__ import annotations

import pytest

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
    ],
)
def test_malformed_records_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(MalformedRecord) as raised:
        parse_record("x", text)
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


# --- the YAML-free header parser must agree with the safe YAML loader ------------------

import random  # noqa: E402

import yaml  # noqa: E402

from aibuddy_cli.memory.records import _parse_flat_header, mark_recalled_text  # noqa: E402

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
def test_flat_header_parser_agrees_with_yaml_or_declines(value: str) -> None:
    header = f"name: x\ndescription: {value}\ntype: user\n"
    flat = _parse_flat_header(header)
    if flat is None:
        return  # declined: the YAML loader decides
    assert flat == yaml.safe_load(header)


def test_flat_header_parser_agrees_with_yaml_on_random_headers() -> None:
    rng = random.Random(7)
    alphabet = list("abc XYZ019:#'\"-_.,[]{}!&*|>%@`~?=<\t\\周报") + ["yes", "null", ": ", " #", "''"]
    for _ in range(3000):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        header = f"name: x\ndescription: {value}\nrecallCount: {rng.randint(0, 9)}\n"
        flat = _parse_flat_header(header)
        if flat is None:
            continue
        assert flat == yaml.safe_load(header), header


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
