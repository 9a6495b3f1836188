"""Outlines with markdown-it-py: which lines are headings, anchors, and the partition property."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import BODY, CORPUS, FIXTURE_DOCS, SPEC, STRINGS, needs_corpus

from aibuddy_cli.knowledge.outline import (
    PREAMBLE_ANCHOR,
    children,
    heading_path,
    parse_outline,
    slugify,
    split_lines,
)
from aibuddy_cli.knowledge.reader import page

FIXTURE_DOC_FILES = sorted(p for p in FIXTURE_DOCS.iterdir() if p.suffix in (".md", ".txt"))
# Read only where ../shared/corpus exists (beside the development checkout); else no documents.
CORPUS_DOCS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".md", ".txt")) if CORPUS.is_dir() else []


def read_exactly(path: Path) -> str:
    """The file's text with its line endings as stored (read_text would turn CRLF into LF)."""
    return path.read_bytes().decode("utf-8")


@needs_corpus
def test_the_corpus_is_there() -> None:
    assert len(CORPUS_DOCS) >= 20, f"expected the shared corpus at {CORPUS}"


def assert_partition(text: str) -> None:
    lines = split_lines(text)
    sections = parse_outline(text, "doc")
    if not lines:
        assert sections == []
        return
    assert sections[0].start == 1 and sections[-1].end == len(lines)
    for before, after in zip(sections, sections[1:], strict=False):
        assert before.end + 1 == after.start
    assert len({s.anchor for s in sections}) == len(sections)
    # Reading every section's pages in order gives back the file exactly.
    rebuilt = []
    for section in sections:
        own = "".join(lines[section.start - 1 : section.end])
        assert section.size == len(own)
        offset = 0
        while True:
            chunk = page(own, offset, 97)
            rebuilt.append(chunk.text)
            if chunk.next_offset is None:
                break
            offset = chunk.next_offset
    assert "".join(rebuilt) == text


@pytest.mark.parametrize("path", FIXTURE_DOC_FILES, ids=lambda p: p.name)
def test_sections_partition_every_fixture_document(path: Path) -> None:
    assert_partition(read_exactly(path))


def front_matter_close(text: str) -> str | None:
    """The line that closes the text's YAML front matter, if it opens with one."""
    lines = text.splitlines()
    if not lines or lines[0] != "---":
        return None
    return next((line for line in lines[1:] if line in ("---", "...")), None)


def test_the_fixture_documents_cover_the_edge_cases() -> None:
    """The partition test above runs over every kind of document the outline must handle."""
    texts = [read_exactly(path) for path in FIXTURE_DOC_FILES]
    sections = [(text, s) for text in texts for s in parse_outline(text, "doc")]
    headings = [split_lines(text)[s.start - 1] for text, s in sections if s.level]
    anchors = [s.anchor for _, s in sections]
    assert any(not line.startswith("#") for line in headings), "a setext heading"
    assert any("\n```" in text for text in texts), "a backtick fence"
    assert any("\n~~~" in text for text in texts), "a tilde fence"
    assert {front_matter_close(text) for text in texts} >= {"---", "..."}, "front matter closed both ways"
    assert any(re.search(r"\{ ?#\S+.*\}\s*$", line) for line in headings), "an explicit { #anchor }"
    assert any(re.search(r"[\u4e00-\u9fff]", line) for line in headings), "a CJK heading"
    assert any(a.endswith("-1") for a in anchors) and any(a.endswith("-2") for a in anchors), "repeats"
    assert any(s.level == 0 and not text.startswith("---") for text, s in sections), "text, then a heading"
    assert any("\r\n" in text for text in texts), "CRLF line endings, kept byte for byte"


@needs_corpus
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.name) for p in CORPUS_DOCS] or [pytest.param(None, id="corpus-absent")],
)
def test_sections_partition_every_corpus_document(path: Path) -> None:
    assert_partition(read_exactly(path))


def fixture_and_corpus(fixture: Path, *corpus_path: str) -> list:
    """The check over the fixture document always, and over the real corpus document when present."""
    return [
        pytest.param(fixture, id="fixture"),
        pytest.param(CORPUS.joinpath(*corpus_path), id="corpus", marks=needs_corpus),
    ]


@pytest.mark.parametrize("path", fixture_and_corpus(SPEC, "commonmark", "spec.txt"))
def test_commonmark_spec_headings_inside_code_fences_and_front_matter_are_not_headings(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    sections = parse_outline(text, "spec")
    titles = [s.title for s in sections]
    assert sections[0].anchor == PREAMBLE_ANCHOR and sections[0].end == 8  # YAML front matter closed by '...'
    assert titles[1:4] == ["Introduction", "What is Markdown?", "Why is a spec needed?"]
    assert "Foo" not in titles and "foo" not in titles  # examples are full of "# foo" in fences
    lines = split_lines(text)
    for section in sections[1:]:
        assert lines[section.start - 1].startswith("#"), section


@pytest.mark.parametrize("path", fixture_and_corpus(BODY, "fastapi-en", "body.md"))
def test_fastapi_explicit_anchors_are_used_and_stripped_from_titles(path: Path) -> None:
    sections = parse_outline(path.read_text(encoding="utf-8"), "body")
    assert (sections[0].title, sections[0].anchor) == ("Request Body", "request-body")
    assert ("Import Pydantic's BaseModel", "import-pydantics-basemodel") in [
        (s.title, s.anchor) for s in sections
    ]
    assert all("{" not in s.title for s in sections)


@pytest.mark.parametrize("path", fixture_and_corpus(STRINGS, "rust-book-zh", "ch08-02-strings.md"))
def test_chinese_headings_keep_their_characters_in_anchors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    anchors = [s.anchor for s in parse_outline(text, "x")]
    assert "使用字符串储存-utf-8-编码的文本" in anchors and "更新字符串" in anchors
    assert "使用-push_str-和-push-追加字符串" in anchors


SAMPLE = """Intro text before any heading.

# Guide

```
# not a heading
```

    # indented code, not a heading

<div>
# inside an HTML block
</div>

Setext Title
============

## Setup
### Step
## Setup
## Setup
Sub title
---------
"""


def test_heading_kinds_slugs_and_repeats() -> None:
    sections = parse_outline(SAMPLE, "sample")
    assert [(s.level, s.title, s.anchor) for s in sections] == [
        (0, "sample", PREAMBLE_ANCHOR),
        (1, "Guide", "guide"),
        (1, "Setext Title", "setext-title"),
        (2, "Setup", "setup"),
        (3, "Step", "step"),
        (2, "Setup", "setup-1"),
        (2, "Setup", "setup-2"),
        (2, "Sub title", "sub-title"),
    ]
    assert_partition(SAMPLE)
    assert [c.anchor for c in children(sections, 2)] == ["setup", "setup-1", "setup-2", "sub-title"]
    assert heading_path(sections, 4) == ["Setext Title", "Setup", "Step"]


def test_anchors_are_stable_when_the_document_is_parsed_again() -> None:
    assert parse_outline(SAMPLE, "x") == parse_outline(SAMPLE, "x")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no headings at all\njust text\n",
        "# " + "x" * 2000 + "\nbody\n",
        "---\ntitle: t\n---\n# After front matter\n",
        "---\nnot closed front matter\n# Heading\n",
        "# a\r\n\r\ntext\r\n## b\r\n",
        "# last line without newline",
    ],
    ids=[
        "empty",
        "no-headings",
        "long-heading",
        "front-matter",
        "unclosed-front-matter",
        "crlf",
        "no-final-newline",
    ],
)
def test_edge_documents_are_handled(text: str) -> None:
    assert_partition(text)


def test_a_five_megabyte_document(tmp_path: Path) -> None:
    block = "## Part\n\n" + ("Some words of text that fill the document. " * 20 + "\n") * 40
    text = "# Big\n\n" + block * (5 * 1024 * 1024 // len(block))
    assert len(text) > 4_900_000
    sections = parse_outline(text, "big")
    assert sections[-1].end == len(split_lines(text))
    assert sections[-1].anchor == f"part-{len(sections) - 2}"


def test_slugify_follows_github() -> None:
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Request body + path parameters") == "request-body--path-parameters"
    assert slugify("使用 + 运算符或 format! 宏拼接字符串") == "使用--运算符或-format-宏拼接字符串"
    assert slugify("snake_case and-dash") == "snake_case-and-dash"


def test_html_tags_and_images_in_headings_become_plain_titles() -> None:
    sections = parse_outline("# Hello <span>x</span>\n\n## ![Logo](logo.png) Setup\n", "x")
    assert [(s.title, s.anchor) for s in sections] == [("Hello x", "hello-x"), ("Logo Setup", "logo-setup")]


def test_the_heading_paths_of_a_whole_outline_are_each_sections_own() -> None:
    """heading_paths (one pass, for indexing) gives every section the path heading_path gives it,
    for any order of levels, skipped levels and level-0 sections included."""
    import random

    from aibuddy_cli.knowledge.outline import Section, heading_path, heading_paths

    rng = random.Random(19)
    for _ in range(200):
        sections = [
            Section(rng.choice([0, 1, 2, 3, 4, 6]), f"s{n}", f"s{n}", n + 1, n + 1, 1)
            for n in range(rng.randint(1, 30))
        ]
        assert heading_paths(sections) == [heading_path(sections, i) for i in range(len(sections))]
