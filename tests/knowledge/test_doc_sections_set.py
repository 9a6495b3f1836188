"""The documentation section sets (bench/sets/doc_sections.jsonl, qmd_sections.jsonl) are well
formed: ids unique, every language and category in both splits, questions only (no document text),
and every gold anchor a section of the document it names, read in place where the shared corpus
and dev sets exist. No hit rate is asserted here: the figures are bench/eval_retrieval.py's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from aibuddy_cli.knowledge.outline import parse_outline

REPO = Path(__file__).resolve().parents[2]
SETS = REPO / "bench" / "sets"
CORPUS = REPO.parent / "shared" / "corpus"
DEVSETS = REPO.parent / "shared" / "devsets"
CATEGORIES = {"plain", "negation", "anaphora", "table row", "list item", "rare words close"}


def _rows(name: str) -> list[dict[str, Any]]:
    with (SETS / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


QUESTIONS = _rows("doc_sections.jsonl")[1:]
QMD = _rows("qmd_sections.jsonl")[1:]


def _file(name: str) -> Path:
    if name.startswith("qmd-eval/"):
        return DEVSETS / "qmd-eval" / "eval-docs" / name.removeprefix("qmd-eval/")
    return CORPUS / name


def _anchors(path: Path) -> set[str]:
    return {section.anchor for section in parse_outline(path.read_text(encoding="utf-8"))}


def test_questions_are_labelled_and_split() -> None:
    ids = [row["id"] for row in QUESTIONS]
    assert len(ids) == len(set(ids)) >= 120
    for row in QUESTIONS:
        assert row["lang"] in ("en", "zh") and row["category"] in CATEGORIES, row["id"]
        assert row["split"] in ("dev", "heldout") and row["gold"] and row["question"].strip(), row["id"]
        assert ("previous" in row) == (row["category"] == "anaphora"), row["id"]
        assert set(row) <= {"id", "lang", "category", "previous", "question", "doc", "gold", "split", "also"}
    groups = Counter((row["lang"], row["category"], row["split"]) for row in QUESTIONS)
    for lang in ("en", "zh"):
        for category in CATEGORIES:
            assert groups[(lang, category, "dev")] and groups[(lang, category, "heldout")], (lang, category)


@pytest.mark.skipif(not (CORPUS.is_dir() and DEVSETS.is_dir()), reason="../shared is absent beside here")
def test_every_gold_anchor_is_a_section_of_its_document() -> None:
    outlines: dict[str, set[str]] = {}
    for row in QUESTIONS:
        for name, anchors in [(row["doc"], row["gold"])] + [
            (other.partition("#")[0], [other.partition("#")[2]]) for other in row.get("also", [])
        ]:
            if name not in outlines:
                outlines[name] = _anchors(_file(name))
            assert set(anchors) <= outlines[name], (row["id"], name, anchors)


@pytest.mark.skipif(not DEVSETS.is_dir(), reason="../shared/devsets is absent beside this checkout")
def test_qmd_section_gold_names_its_queries_and_their_sections() -> None:
    folder = DEVSETS / "qmd-eval"
    lines = (folder / "eval-deep-research.jsonl").read_text(encoding="utf-8").splitlines()
    deep = [json.loads(line) for line in lines if line.strip()]
    queries = json.loads((folder / "bench-fixture-example.json").read_text(encoding="utf-8"))["queries"]
    fixture = {item["id"]: item for item in queries}
    assert {row["line"] for row in QMD if "line" in row} == set(range(1, len(deep) + 1))
    assert {row["id"] for row in QMD if "id" in row} == set(fixture)
    docs = {path.stem: _anchors(path) for path in (folder / "eval-docs").glob("*.md")}
    for row in QMD:
        if "line" in row:
            names = [name for name in docs if deep[row["line"] - 1]["expected_doc"] in name]
        else:
            names = [name.removesuffix(".md") for name in fixture[row["id"]]["expected_files"]]
        assert set(row["gold"]) <= set().union(*(docs[name] for name in names)), row
