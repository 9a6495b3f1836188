#!/usr/bin/env python3
"""Offline evaluation of aibuddy's lexical memory recall and knowledge search on the dev sets.

Run with the project's virtualenv:  .venv/bin/python bench/eval_retrieval.py [--json OUT] [--devsets DIR]
DIR defaults to ../shared/devsets beside the repository; when it is absent the script says so in
one line and exits 0 (a user's clone has no ../shared/). The data is read in place, never copied:
the vaults are built in a temporary folder that is removed at the end. No model is configured
(environ={}), so everything measured is lexical (BM25 over SQLite FTS5). It measures the package
installed in the virtualenv: run `make install` first to measure the working tree's code.

1. MADial-Bench memory recall (madial-bench/), English and Chinese separately, one vault each.
   - Archive: each memory line {"<id>": {time, scene, emotion, event}} is one record named
     m-<id>, type user, description = the event, body = the event, then "Scene: …. Emotion: ….",
     created = updated = the memory's date at 00:00:00Z. All memories of both users are in the
     one vault (ids are global within a language).
   - Queries: for each dialogue and each index t in `test-turn`, two variants:
     `last` = the last user turn before t; `context` = the turns before t, joined by newlines and
     cut to their last 1,000 characters. Speaker prefixes (`<Bart>:`) and quotes are stripped;
     a turn without a prefix is a user turn at odd positions (after <BOD>), as the turns alternate.
   - Gold: the dialogue's `relevant-id` (memory ids, 1 to 5), the same for each of its test turns.
   - Figures: of `memory.index().rank(query, 10)`: Recall@5 (share of the gold ids in the top 5),
     Hit@5 (any gold id in the top 5) and MRR@10 (1 / rank of the first gold id, 0 past 10);
     of `memory.recall(query)`, what a user gets (at most 5 records, after the floor that drops
     matches scoring under a share of the best): Hit@5, how many records it returns, and how
     often the floor cut it below what rank() offered.
     Hit@5 is also split by the `scene` (the category field) of the dialogue's first gold id.
2. qmd-eval knowledge search (qmd-eval/): the 6 files of eval-docs/ are imported as system
   documents and published; each query runs `knowledge.search(query, limit=5)` (what `aibuddy kb
   search QUERY --limit 5` returns: ranked sections). A hit's document is its doc id. Gold:
   eval-deep-research.jsonl's `expected_doc` is a substring of the gold doc id (25 queries, group
   `deep-research`); bench-fixture-example.json's `expected_files`, without `.md`, are the gold doc
   ids (10 queries, grouped by `type`). Figures: document-level Hit@1 (the first section is from a
   gold document) and Hit@5 (a gold document among the 5 sections' documents), and how many
   distinct documents those 5 sections come from (with 6 documents, Hit@5 is easy when it is 5).

   Section level (bench/sets/qmd_sections.jsonl, the anchors that answer each query, written by
   hand): Hit@1 (the first section is a gold section of the gold document) and Hit@5.
3. Documentation sections (bench/sets/doc_sections.jsonl over ../shared/corpus and qmd-eval's
   documents, all imported into one vault and published): English and Chinese questions by
   category (plain, negation, anaphora, table row, list item, rare words close together); a hit is
   a section of the question's document whose anchor is gold. Hit@1 and Hit@5 per language and
   category, on the questions tuned on (dev); the held-out third only with --heldout.
   --distractors DIR imports every Markdown file under DIR as well. The figures in the README used
   the rest of the two books the corpus comes from, at the corpus's commits: `docs/en/docs` of
   fastapi/fastapi at c3f316b7 (without release-notes.md) and `src` of KaiserY/trpl-zh-cn at
   49df9805, less the files the corpus already holds (244 files).
4. The own labelled sets of bench/sets/: dated_recall.jsonl (questions naming a time, ranked with
   and without it), handbook_questions.jsonl (section search), common_terms.jsonl (questions of
   words that 5 to 90 % of a payments team's notes hold, over vaults of 8 to 2,000 records, EN and
   ZH) and dated_days.jsonl (dated questions whose day holds several records sharing names): for
   the last two, rank()'s Recall@5 / Hit@1 / Hit@5 / MRR@10 and what recall() returns, by vault
   size, language and category.

Output: Markdown tables with the count n beside every figure, and the elapsed time; --json OUT also
writes every figure, and each query's outcome, as JSON so that two runs can be compared.
--only PARTS (a comma-separated list of madial, qmd, sections, dated, handbook, paraphrase,
common_terms, dated_days) runs only those parts.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault, init_vault

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DEVSETS = REPO.parent / "shared" / "devsets"
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
USER = "eval"  # init_vault makes it the vault's admin, who may publish system documents
NO_MODEL: dict[str, str] = {}  # the environment the sessions see: no model, so lexical only
TOP_K = 5
MRR_K = 10
CONTEXT_CHARS = 1000
SEARCH_LIMIT = 5

MADIAL_FILES = {  # language -> (memory archive, dialogues), under madial-bench/data/
    "en": ("en/MADial-Bench-en-memory.json", "en/MADial-Bench-en-dialogue.json"),
    "zh": ("ch/MADial-Bench-zh-memory.json", "ch/MADial-Bench-zh-dialogue.json"),
}
VARIANTS = ("last", "context")

SPEAKER = re.compile(r"^\s*<([^<>:]{1,40})>\s*:\s*")
MARKER = re.compile(r"^\s*<(BOD|EOD)>\s*$")
QUOTES = '"“”「」'


# --- shared helpers ------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[Any]:
    """The JSON value of each non-blank line (the MADial files are JSON Lines despite `.json`)."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def new_vault(root: Path) -> Vault:
    return init_vault(root, USER, environ=NO_MODEL)


def ratio(part: float, whole: int) -> float:
    return part / whole if whole else 0.0


def fraction(hits: int, n: int) -> str:
    """A share with its counts, e.g. `0.512 (134/262)`."""
    return f"{ratio(hits, n):.3f} ({hits}/{n})"


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# --- MADial-Bench: memory recall -------------------------------------------------------------


class Turn(NamedTuple):
    speaker: str | None  # None: no `<Name>:` prefix
    text: str


class MemoryQuery(NamedTuple):
    dialogue: int  # line number in the dialogue file, from 0
    turn: int  # the test-turn index
    variant: str  # "last" or "context"
    text: str
    gold: list[str]  # memory ids, in the dialogue's order


class MemoryOutcome(NamedTuple):
    query: MemoryQuery
    ranked: list[str]  # memory ids, rank() top MRR_K
    recalled: list[str]  # memory ids recall() returned

    @property
    def hit(self) -> bool:
        return any(name in self.gold for name in self.ranked[:TOP_K])

    @property
    def recall_at_k(self) -> float:
        return ratio(sum(name in self.gold for name in self.ranked[:TOP_K]), len(self.gold))

    @property
    def reciprocal_rank(self) -> float:
        rank = self.first_gold_rank
        return 0.0 if rank is None else 1.0 / rank

    @property
    def first_gold_rank(self) -> int | None:
        return next((i for i, name in enumerate(self.ranked, 1) if name in self.gold), None)

    @property
    def recall_hit(self) -> bool:
        return any(name in self.gold for name in self.recalled)

    @property
    def cut_by_floor(self) -> bool:
        """recall() returned fewer records than rank() had to offer."""
        return len(self.recalled) < min(TOP_K, len(self.ranked))

    @property
    def gold(self) -> set[str]:
        return set(self.query.gold)


def parse_turn(raw: str) -> Turn | None:
    """A dialogue line as (speaker, text), None for the <BOD>/<EOD> markers."""
    if MARKER.match(raw):
        return None
    found = SPEAKER.match(raw)
    speaker, text = (found.group(1), raw[found.end() :]) if found else (None, raw)
    return Turn(speaker, text.strip().strip(QUOTES).strip())


def is_user(turn: Turn, index: int) -> bool:
    """A user's turn: any named speaker but the assistant; unnamed, by position (users speak at
    odd indices, after <BOD> at 0)."""
    if turn.speaker is None:
        return index % 2 == 1
    return turn.speaker.strip().lower() != "assistant"


def dialogue_queries(number: int, dialogue: dict[str, Any]) -> Iterator[MemoryQuery]:
    gold = [str(memory_id) for memory_id in dialogue["relevant-id"]]
    for t in dialogue["test-turn"]:
        before = [(i, parse_turn(raw)) for i, raw in enumerate(dialogue["dialogue"][:t])]
        turns = [(i, turn) for i, turn in before if turn is not None and turn.text]
        users = [turn.text for i, turn in turns if is_user(turn, i)]
        last = users[-1] if users else ""
        context = "\n".join(turn.text for _, turn in turns)[-CONTEXT_CHARS:]
        yield MemoryQuery(number, t, "last", last, gold)
        yield MemoryQuery(number, t, "context", context, gold)


def memory_record(memory_id: str, memory: dict[str, Any]) -> MemoryRecord:
    event = " ".join(str(memory["event"]).split())
    stamp = f"{memory['time']}T00:00:00Z"
    body = f"{event}\n\nScene: {memory['scene']}. Emotion: {memory['emotion']}.\n"
    return MemoryRecord(
        name=f"m-{memory_id}", description=event, type="user", body=body, created=stamp, updated=stamp
    )


def memory_id(name: str) -> str:
    return name.removeprefix("m-")


def run_madial(folder: Path, scratch: Path) -> dict[str, Any]:
    """Every figure of part 1, by language."""
    results: dict[str, Any] = {}
    for language, (archive_file, dialogue_file) in MADIAL_FILES.items():
        archive: dict[str, dict[str, Any]] = {}
        for line in read_jsonl(folder / "data" / archive_file):
            archive.update(line)
        dialogues = read_jsonl(folder / "data" / dialogue_file)
        vault = new_vault(scratch / f"madial-{language}")
        records = vault.root / "memory" / USER
        records.mkdir(parents=True, exist_ok=True)
        for key, memory in archive.items():
            record = memory_record(key, memory)
            (records / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
        queries = [query for number, d in enumerate(dialogues) for query in dialogue_queries(number, d)]
        scenes = {key: str(memory["scene"]) for key, memory in archive.items()}
        outcomes: list[MemoryOutcome] = []
        meaning: list[MemoryOutcome] = []
        embedder = meaning_model()
        with Session(vault, USER, environ=NO_MODEL) as session:
            memory = session.memory
            for query in queries:
                if embedder is not None:  # [recall] semantic: words and meaning fused
                    fused = memory.index().rank(query.text, MRR_K, None, embedder)
                    meaning.append(MemoryOutcome(query, [memory_id(name) for name, _ in fused], []))
                ranked = [memory_id(name) for name, _ in memory.index().rank(query.text, MRR_K)]
                recalled = (
                    [memory_id(record.name) for record in memory.recall(query.text).records]
                    if query.text.strip()
                    else []
                )
                outcomes.append(MemoryOutcome(query, ranked, recalled))
        results[language] = summarise_madial(outcomes, scenes, len(archive), len(dialogues))
        if meaning:
            results[language]["semantic"] = {
                variant: {
                    "n": len(chosen),
                    "recall_at_5": ratio(sum(o.recall_at_k for o in chosen), len(chosen)),
                    "hit_at_5": sum(o.hit for o in chosen),
                    "mrr_at_10": ratio(sum(o.reciprocal_rank for o in chosen), len(chosen)),
                }
                for variant in VARIANTS
                for chosen in [[o for o in meaning if o.query.variant == variant]]
            }
            by_scene: dict[str, dict[str, Any]] = defaultdict(dict)
            for variant in VARIANTS:
                for outcome in (o for o in meaning if o.query.variant == variant):
                    scene = by_scene[scenes.get(outcome.query.gold[0], "?")].setdefault(variant, [0, 0])
                    scene[0] += outcome.hit
                    scene[1] += 1
            results[language]["semantic_by_scene"] = by_scene
    return results


def meaning_model() -> Any:
    """aibuddy's static model of meaning (memory/semantic.py), loaded; None when it cannot be."""
    from aibuddy_cli.memory.semantic import SemanticUnavailable, shared

    try:
        shared().embed(["warm up"])
    except SemanticUnavailable:
        return None
    return shared()


def summarise_madial(
    outcomes: list[MemoryOutcome], scenes: dict[str, str], memories: int, dialogues: int
) -> dict[str, Any]:
    by_variant: dict[str, Any] = {}
    by_scene: dict[str, dict[str, Any]] = defaultdict(dict)
    for variant in VARIANTS:
        chosen = [o for o in outcomes if o.query.variant == variant]
        n = len(chosen)
        by_variant[variant] = {
            "n": n,
            "recall_at_5": ratio(sum(o.recall_at_k for o in chosen), n),
            "hit_at_5": sum(o.hit for o in chosen),
            "mrr_at_10": ratio(sum(o.reciprocal_rank for o in chosen), n),
            "recall_hit_at_5": sum(o.recall_hit for o in chosen),
            "recall_returned_mean": ratio(sum(len(o.recalled) for o in chosen), n),
            "recall_returned_none": sum(not o.recalled for o in chosen),
            "recall_cut_by_floor": sum(o.cut_by_floor for o in chosen),
            "rank_returned_none": sum(not o.ranked for o in chosen),
            "empty_query": sum(not o.query.text.strip() for o in chosen),
        }
        grouped: dict[str, list[MemoryOutcome]] = defaultdict(list)
        for outcome in chosen:
            grouped[scenes.get(outcome.query.gold[0], "?")].append(outcome)
        for scene, group in grouped.items():
            by_scene[scene][variant] = {
                "n": len(group),
                "hit_at_5": sum(o.hit for o in group),
                "recall_hit_at_5": sum(o.recall_hit for o in group),
            }
    return {
        "memories": memories,
        "dialogues": dialogues,
        "variants": by_variant,
        "by_scene": dict(sorted(by_scene.items(), key=lambda item: -item[1][VARIANTS[0]]["n"])),
        "queries": [
            {
                "dialogue": o.query.dialogue,
                "turn": o.query.turn,
                "variant": o.query.variant,
                "first_gold_rank": o.first_gold_rank,
                "recall_hit": o.recall_hit,
                "recalled": len(o.recalled),
            }
            for o in outcomes
        ],
    }


def semantic_report(results: dict[str, Any]) -> list[str]:
    rows = []
    for language, found in results.items():
        for variant, fused in found.get("semantic", {}).items():
            words = found["variants"][variant]
            n = words["n"]
            rows.append([
                language, variant, str(n),
                f"{words['recall_at_5']:.3f}", f"{fused['recall_at_5']:.3f}",
                fraction(words["hit_at_5"], n), fraction(fused["hit_at_5"], n),
                f"{words['mrr_at_10']:.3f}", f"{fused['mrr_at_10']:.3f}",
            ])  # fmt: skip
    if not rows:
        return ["", "(the meaning model could not be loaded: words and meaning not measured)"]
    header = ["lang", "query", "n", "R@5 words", "R@5 +meaning", "Hit@5 words", "Hit@5 +meaning",
              "MRR words", "MRR +meaning"]  # fmt: skip
    lines = ["", "### MADial, words alone and words and meaning (the default; fused by reciprocal rank)", "",
             *table(header, rows)]  # fmt: skip
    for language, found in results.items():
        if "semantic_by_scene" not in found:
            continue
        lines += ["", f"### {language}: Hit@5 by scene, words → words and meaning", ""]
        scene_rows = []
        for scene, figures in found["by_scene"].items():
            cells = [scene, str(figures[VARIANTS[0]]["n"])]
            for variant in VARIANTS:
                hits, n = found["semantic_by_scene"].get(scene, {}).get(variant, [0, 0])
                before = fraction(figures[variant]["hit_at_5"], figures[variant]["n"])
                cells.append(f"{before} → {fraction(hits, n)}")
            scene_rows.append(cells)
        lines += table(["scene", "n", *VARIANTS], scene_rows)
    return lines


def madial_report(results: dict[str, Any]) -> list[str]:
    lines = [
        "## MADial-Bench memory recall (lexical)",
        "",
        "rank() = `memory.index().rank(query, 10)`; recall() = `memory.recall(query)` (at most 5, after"
        " the floor). Hit@5 and Recall@5 over the top 5 of rank(); n = queries (dialogue × test turn).",
        "",
    ]
    rows = []
    for language, result in results.items():
        for variant, f in result["variants"].items():
            n = f["n"]
            rows.append(
                [
                    language,
                    variant,
                    str(n),
                    f"{f['recall_at_5']:.3f}",
                    fraction(f["hit_at_5"], n),
                    f"{f['mrr_at_10']:.3f}",
                    fraction(f["recall_hit_at_5"], n),
                    f"{f['recall_returned_mean']:.2f}",
                    f"{f['recall_cut_by_floor']}/{n}",
                    f"{f['recall_returned_none']}/{n}",
                    f"{f['rank_returned_none']}/{n}",
                ]
            )
    header = [
        "lang",
        "query",
        "n",
        "Recall@5",
        "Hit@5",
        "MRR@10",
        "recall() Hit@5",
        "recall() returned (mean)",
        "recall() cut by floor",
        "recall() empty",
        "rank() empty",
    ]
    lines += table(header, rows)
    for language, result in results.items():
        lines += [
            "",
            f"### {language}: Hit@5 by scene of the first gold memory"
            f" ({result['memories']} memories, {result['dialogues']} dialogues)",
            "",
        ]
        header = ["scene", "n"]
        header += [f"{what} {variant}" for variant in VARIANTS for what in ("rank()", "recall()")]
        rows = []
        for scene, figures in result["by_scene"].items():
            n = figures[VARIANTS[0]]["n"]
            cells = [scene, str(n)]
            for variant in VARIANTS:
                f = figures[variant]
                cells += [fraction(f["hit_at_5"], f["n"]), fraction(f["recall_hit_at_5"], f["n"])]
            rows.append(cells)
        lines += table(header, rows)
    return lines


# --- qmd-eval: knowledge search --------------------------------------------------------------


class DocQuery(NamedTuple):
    group: str
    name: str  # the fixture's id, else the query itself
    text: str
    gold: list[str]  # substrings (deep-research) or exact doc ids (fixture)
    exact: bool


def qmd_queries(folder: Path) -> list[DocQuery]:
    queries = [
        DocQuery("deep-research", item["query"], item["query"], [item["expected_doc"]], exact=False)
        for item in read_jsonl(folder / "eval-deep-research.jsonl")
    ]
    fixture = json.loads((folder / "bench-fixture-example.json").read_text(encoding="utf-8"))
    queries += [
        DocQuery(
            f"fixture/{item['type']}",
            item["id"],
            item["query"],
            [name.removesuffix(".md") for name in item["expected_files"]],
            exact=True,
        )
        for item in fixture["queries"]
    ]
    return queries


def is_gold(doc_id: str, query: DocQuery) -> bool:
    return any(doc_id == gold if query.exact else gold in doc_id for gold in query.gold)


def qmd_section_gold(queries: list[DocQuery]) -> list[list[str]]:
    """The gold anchors of each query (bench/sets/qmd_sections.jsonl), in the order of qmd_queries:
    the deep-research queries by line, then the fixture's by id."""
    rows = read_jsonl(OWN_SETS / "qmd_sections.jsonl")[1:]
    by_line = {row["line"]: row["gold"] for row in rows if "line" in row}
    by_id = {row["id"]: row["gold"] for row in rows if "id" in row}
    gold = []
    for number, query in enumerate(queries, 1):
        gold.append(by_line.get(number, []) if query.group == "deep-research" else by_id.get(query.name, []))
    return gold


def run_qmd(folder: Path, scratch: Path) -> dict[str, Any]:
    """Every figure of part 2, overall and by group."""
    vault = new_vault(scratch / "qmd")
    queries = qmd_queries(folder)
    section_gold = qmd_section_gold(queries)
    outcomes: list[dict[str, Any]] = []
    with Session(vault, USER, environ=NO_MODEL) as session:
        knowledge = session.knowledge
        paths = sorted(str(path) for path in (folder / "eval-docs").glob("*.md"))
        imported = knowledge.import_paths(paths, scope="system")
        failed = [outcome for outcome in imported if outcome.doc is None]
        if failed:
            raise SystemExit(f"import failed: {[to_json(outcome) for outcome in failed]}")
        knowledge.publish(*(outcome.doc for outcome in imported if outcome.doc))
        for query, anchors_gold in zip(queries, section_gold, strict=True):
            error = None
            try:
                hits = knowledge.search(query.text, limit=SEARCH_LIMIT)
            except InvalidInput as exc:
                hits, error = [], exc.message
            docs = [hit.hit.ref.doc_id for hit in hits]
            right = [is_gold(hit.hit.ref.doc_id, query) and hit.hit.anchor in anchors_gold for hit in hits]
            outcomes.append(
                {
                    "group": query.group,
                    "query": query.name,
                    "text": query.text,
                    "gold": query.gold,
                    "docs": docs,
                    "anchors": [hit.hit.anchor for hit in hits],
                    "hit_at_1": bool(docs) and is_gold(docs[0], query),
                    "hit_at_5": any(is_gold(doc, query) for doc in docs[:SEARCH_LIMIT]),
                    "section_gold": anchors_gold,
                    "section_hit_at_1": bool(right) and right[0],
                    "section_hit_at_5": any(right[:SEARCH_LIMIT]),
                    "error": error,
                }
            )
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for outcome in outcomes:
        groups["all"].append(outcome)
        if outcome["group"].startswith("fixture/"):
            groups["fixture (all)"].append(outcome)
        groups[outcome["group"]].append(outcome)
    figures = {
        group: {
            "n": len(members),
            "hit_at_1": sum(o["hit_at_1"] for o in members),
            "hit_at_5": sum(o["hit_at_5"] for o in members),
            "section_hit_at_1": sum(o["section_hit_at_1"] for o in members),
            "section_hit_at_5": sum(o["section_hit_at_5"] for o in members),
            "no_hits": sum(not o["docs"] for o in members),
            "docs_in_top_5_mean": ratio(sum(len(set(o["docs"])) for o in members), len(members)),
        }
        for group, members in groups.items()
    }
    return {"documents": len(imported), "groups": figures, "queries": outcomes}


def qmd_report(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## qmd-eval knowledge search (lexical)",
        "",
        f"`knowledge.search(query, limit={SEARCH_LIMIT})` over {results['documents']} published system"
        " documents; document level: Hit@1 = first section's document is gold, Hit@5 = a gold document"
        " among the 5 sections'.",
        "",
    ]
    rows = [
        [
            group,
            str(f["n"]),
            fraction(f["hit_at_1"], f["n"]),
            fraction(f["hit_at_5"], f["n"]),
            fraction(f["section_hit_at_1"], f["n"]),
            fraction(f["section_hit_at_5"], f["n"]),
            f"{f['docs_in_top_5_mean']:.2f}",
            f"{f['no_hits']}/{f['n']}",
        ]
        for group, f in results["groups"].items()
    ]
    header = ["group", "n", "Hit@1", "Hit@5", "section Hit@1", "section Hit@5",
              "distinct docs in top 5 (mean)", "no hits"]  # fmt: skip
    lines += table(header, rows)
    misses = [o for o in results["queries"] if not o["hit_at_1"]]
    if misses:
        lines += ["", f"Misses at 1 ({len(misses)}; the documents of the top 5 sections, in order):", ""]
        for o in misses:
            found = ", ".join(dict.fromkeys(o["docs"])) or o["error"] or "no hits"
            at_5 = "found at 5" if o["hit_at_5"] else "MISSED at 5"
            lines.append(f'- [{o["group"]}] "{o["text"]}" (gold {", ".join(o["gold"])}, {at_5}): {found}')
    return lines


# --- documentation sections: own questions over the shared corpus ---------------------------------


def corpus_files(corpus: Path, devsets: Path) -> dict[str, Path]:
    """The documents the questions name, by their name in the set: `<folder>/<file>` of the corpus,
    `qmd-eval/<file>` of the qmd-eval dev set's documents."""
    files = {
        f"{path.parent.name}/{path.name}": path
        for path in sorted(corpus.glob("*/*"))
        if path.suffix in (".md", ".txt") and path.name != "README.md"
    }
    qmd = sorted((devsets / "qmd-eval" / "eval-docs").glob("*.md"))
    files.update({f"qmd-eval/{path.name}": path for path in qmd})
    return files


def run_sections(corpus: Path, devsets: Path, scratch: Path, distractors: Path | None) -> dict[str, Any]:
    """bench/sets/doc_sections.jsonl: each question's top 5 sections (document, anchor) from
    `knowledge.search` over every corpus document, and every Markdown file under `distractors` if
    given (the rest of the books the corpus documents come from: more sections that share the
    questions' words); an anaphoric question is sent after the one before it."""
    lines = read_jsonl(OWN_SETS / "doc_sections.jsonl")
    files = corpus_files(corpus, devsets)
    extra = sorted(distractors.rglob("*.md")) if distractors else []
    vault = new_vault(scratch / "sections")
    outcomes = []
    with Session(vault, USER, environ=NO_MODEL) as session:
        knowledge = session.knowledge
        names = list(files)
        imported = knowledge.import_paths([str(files[name]) for name in names], scope="system")
        failed = [to_json(outcome) for outcome in imported if outcome.doc is None]
        if failed:
            raise SystemExit(f"import failed: {failed}")
        doc_of = {name: outcome.doc for name, outcome in zip(names, imported, strict=True)}
        more = knowledge.import_paths([str(path) for path in extra], scope="system")
        imported += [outcome for outcome in more if outcome.doc]
        knowledge.publish(*(outcome.doc for outcome in imported if outcome.doc))
        started = time.perf_counter()
        for item in lines[1:]:
            if item["doc"] not in doc_of:  # (qmd-eval's documents without ../shared/devsets)
                continue
            query = f"{item['previous']} {item['question']}" if "previous" in item else item["question"]
            hits = knowledge.search(query, limit=SEARCH_LIMIT)
            found = [f"{hit.hit.ref.qualified}#{hit.hit.anchor}" for hit in hits]
            gold = {f"{doc_of[item['doc']]}#{anchor}" for anchor in item["gold"]}
            for other in item.get("also", []):
                name, _, anchor = other.partition("#")
                gold.add(f"{doc_of[name]}#{anchor}")
            right = [name in gold for name in found]
            first = bool(right) and right[0]
            outcomes.append({**item, "found": found, "hit_at_1": first, "hit_at_5": any(right)})
        per_query_ms = (time.perf_counter() - started) * 1000 / max(1, len(lines) - 1)
    return {
        "documents": len(imported),
        "distractors": str(distractors) if distractors else None,
        "outcomes": outcomes,
        "search_ms_mean": round(per_query_ms, 2),
    }


def sections_report(results: dict[str, Any], heldout: bool) -> list[str]:
    splits = ("dev", "heldout") if heldout else ("dev",)
    lines = [
        "",
        "## Own set: documentation sections (bench/sets/doc_sections.jsonl)",
        "",
        f"`knowledge.search(query, limit={SEARCH_LIMIT})` over {results['documents']} published documents"
        " (../shared/corpus and qmd-eval's"
        + (f", and those under {results['distractors']}" if results["distractors"] else "")
        + "); Hit@1 = the first section answers, Hit@5 = one of the 5 does."
        f" Mean search time in process: {results['search_ms_mean']:.1f} ms.",
    ]
    for split in splits:
        chosen = [o for o in results["outcomes"] if o["split"] == split]
        groups: dict[str, list[dict[str, Any]]] = {}
        for o in chosen:
            for group in ("all", o["lang"], f"{o['lang']}: {o['category']}"):
                groups.setdefault(group, []).append(o)
        rows = [
            [group, str(len(items)), fraction(sum(o["hit_at_1"] for o in items), len(items)),
             fraction(sum(o["hit_at_5"] for o in items), len(items))]
            for group, items in sorted(groups.items(), key=lambda kv: (kv[0] != "all", ":" in kv[0], kv[0]))
        ]  # fmt: skip
        lines += ["", f"{split} questions:", ""] + table(["group", "n", "Hit@1", "Hit@5"], rows)
    if not heldout:
        kept = sum(o["split"] == "heldout" for o in results["outcomes"])
        lines += ["", f"({kept} held-out questions not shown: --heldout reports them.)"]
    misses = [o for o in results["outcomes"] if o["split"] in splits and not o["hit_at_1"]]
    if misses:
        lines += ["", f"Misses at 1 ({len(misses)}; the top 3 found):", ""]
        for o in misses:
            at_5 = "found at 5" if o["hit_at_5"] else "MISSED at 5"
            asked = f"{o['previous']} | {o['question']}" if "previous" in o else o["question"]
            found = o["found"][:3]
            lines.append(f'- {o["id"]} [{o["category"]}] "{asked}" (gold {o["gold"]}, {at_5}): {found}')
    return lines


# --- the run -------------------------------------------------------------------------------


# --- own labelled sets (bench/sets/), for what the dev sets lack -----------------------------------

OWN_SETS = Path(__file__).resolve().parent / "sets"


def run_dated(scratch: Path) -> dict[str, Any]:
    """bench/sets/dated_recall.jsonl: questions that name a day, a month or a time relative to
    the set's `today`, over a year of notes each written the day it happened. Ranked three times:
    with the question's time read (`rank(query, k, today)`), as words alone (`today=None`, the
    ranking before dates were read), and with its time read by words and meaning (the default)."""
    import datetime as dt

    lines = read_jsonl(OWN_SETS / "dated_recall.jsonl")
    today = dt.date.fromisoformat(lines[0]["today"])
    vault = new_vault(scratch / "dated")
    folder = vault.root / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    for item in (line for line in lines[1:] if "record" in line):
        record = MemoryRecord(
            name=item["record"], description=item["description"], type="user", body=item["body"],
            created=item["created"], updated=item["created"],
        )  # fmt: skip
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
    outcomes = []
    embedder = meaning_model()
    with Session(vault, USER, environ=NO_MODEL) as session:
        index = session.memory.index()
        for item in (line for line in lines[1:] if "question" in line):
            with_dates = [name for name, _ in index.rank(item["question"], 5, today)]
            words_only = [name for name, _ in index.rank(item["question"], 5)]
            meaning = [name for name, _ in index.rank(item["question"], 5, today, embedder)]
            outcomes.append({**item, "dates": with_dates, "words": words_only, "meaning": meaning})
    return {"today": today.isoformat(), "outcomes": outcomes, "measured_meaning": embedder is not None}


def dated_report(results: dict[str, Any]) -> list[str]:
    def hit(ranked: list[str], gold: list[str], k: int) -> bool:
        return any(name in gold for name in ranked[:k])

    groups: dict[str, list[dict[str, Any]]] = {}
    for outcome in results["outcomes"]:
        if outcome["gold"]:
            language = "zh" if outcome["category"].startswith("zh ") else "en"
            named = "no date" if outcome["category"] == "no date" else "names a time"
            for group in {f"{language}: {named}", f"{language}: {outcome['category'].removeprefix('zh ')}"}:
                groups.setdefault(group, []).append(outcome)

    keys = ("words", "dates", "meaning") if results.get("measured_meaning") else ("words", "dates")
    rows = []
    for group, items in sorted(groups.items()):
        n = len(items)
        cells = [group, str(n)]
        for key in keys:
            cells += [fraction(sum(hit(o[key], o["gold"], 1) for o in items), n),
                      fraction(sum(hit(o[key], o["gold"], 5) for o in items), n)]  # fmt: skip
        rows.append(cells)
    empty = [o for o in results["outcomes"] if not o["gold"]]
    lines = ["", f"## Own set: dated recall (bench/sets/dated_recall.jsonl, today = {results['today']})", ""]
    header = ["group", "n", "words Hit@1", "words Hit@5", "dates Hit@1", "dates Hit@5"]
    header += ["dates and meaning Hit@1", "dates and meaning Hit@5"] if len(keys) == 3 else []
    lines += table(header, rows)
    if empty:
        said = ", ".join(f'"{o["question"]}" -> {o["dates"] or "nothing"}' for o in empty)
        lines += ["", f"Questions with no gold (nothing fits their time): {said}"]
    return lines


def run_handbook(scratch: Path) -> dict[str, Any]:
    """bench/sets/handbook_questions.jsonl: section-level gold over one handbook (table rows, a
    negation, questions that span two sections, an Overview, Resources and front matter sharing
    the questions' words): the anchors of the top 5 sections of `knowledge.search`."""
    lines = read_jsonl(OWN_SETS / "handbook_questions.jsonl")
    vault = new_vault(scratch / "handbook")
    outcomes = []
    with Session(vault, USER, environ=NO_MODEL) as session:
        knowledge = session.knowledge
        imported = knowledge.import_paths([str(OWN_SETS / lines[0]["doc"])], scope="system")
        knowledge.publish(*(outcome.doc for outcome in imported if outcome.doc))
        for item in lines[1:]:
            hits = knowledge.search(item["question"], limit=SEARCH_LIMIT)
            outcomes.append({**item, "anchors": [hit.hit.anchor for hit in hits]})
    return {"outcomes": outcomes}


def handbook_report(results: dict[str, Any]) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for outcome in results["outcomes"]:
        groups.setdefault("all", []).append(outcome)
        groups.setdefault(outcome["category"], []).append(outcome)
    rows = []
    for group, items in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        n = len(items)
        first = sum(bool(o["anchors"]) and o["anchors"][0] in o["gold"] for o in items)
        top = sum(any(anchor in o["gold"] for anchor in o["anchors"][:5]) for o in items)
        every = sum(all(anchor in o["anchors"][:5] for anchor in o["gold"]) for o in items)
        rows.append([group, str(n), fraction(first, n), fraction(top, n), fraction(every, n)])
    lines = ["", "## Own set: section search (bench/sets/handbook_questions.jsonl)", ""]
    lines += table(["group", "n", "gold section at 1", "in top 5", "all gold sections in top 5"], rows)
    misses = [o for o in results["outcomes"] if not o["anchors"] or o["anchors"][0] not in o["gold"]]
    lines += ["", "Misses at 1:"] + [
        f'- "{o["question"]}" (gold {o["gold"]}): {o["anchors"]}' for o in misses
    ]
    return lines


def run_paraphrase(scratch: Path) -> dict[str, Any]:
    """bench/sets/paraphrase_recall.jsonl: questions that ask for a record in other words (EN and
    ZH records in one vault). Ranked by the words alone and by words and meaning (the default)."""
    lines = read_jsonl(OWN_SETS / "paraphrase_recall.jsonl")
    vault = new_vault(scratch / "paraphrase")
    folder = vault.root / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    for item in (line for line in lines[1:] if "record" in line):
        record = MemoryRecord(
            name=item["record"], description=item["description"], type="user", body=item["body"],
            created="2024-05-01T00:00:00Z", updated="2024-05-01T00:00:00Z",
        )  # fmt: skip
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
    embedder = meaning_model()
    outcomes = []
    with Session(vault, USER, environ=NO_MODEL) as session:
        index = session.memory.index()
        for item in (line for line in lines[1:] if "question" in line):
            words = [name for name, _ in index.rank(item["question"], MRR_K)]
            meaning = (
                [name for name, _ in index.rank(item["question"], MRR_K, None, embedder)] if embedder else []
            )
            outcomes.append({**item, "words": words, "meaning": meaning})
    return {"outcomes": outcomes, "measured_meaning": embedder is not None}


def paraphrase_report(results: dict[str, Any]) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for o in results["outcomes"]:
        for group in (o["lang"], f"{o['lang']}: {o['category']}"):
            groups.setdefault(group, []).append(o)

    def figures(items: list[dict[str, Any]], key: str) -> list[str]:
        n = len(items)
        recall = sum(len(set(o[key][:TOP_K]) & set(o["gold"])) / len(o["gold"]) for o in items) / n
        hits = sum(bool(set(o[key][:TOP_K]) & set(o["gold"])) for o in items)
        firsts = [next((i for i, name in enumerate(o[key], 1) if name in o["gold"]), 0) for o in items]
        mrr = sum(1 / i for i in firsts if i) / n
        return [f"{recall:.3f}", fraction(hits, n), f"{mrr:.3f}"]

    rows = [[group, str(len(items)), *figures(items, "words"), *figures(items, "meaning")]
            for group, items in sorted(groups.items())]  # fmt: skip
    header = ["group", "n", "R@5 words", "Hit@5 words", "MRR words", "R@5 +meaning", "Hit@5 +meaning",
              "MRR +meaning"]  # fmt: skip
    lines = ["", "## Own set: paraphrased questions (bench/sets/paraphrase_recall.jsonl)", ""]
    if not results["measured_meaning"]:
        lines.append("(the meaning model could not be loaded: +meaning not measured)")
    return lines + table(header, rows)


# --- own sets for issue 34: common words, and dated days whose records share words -------------


class Ranked(NamedTuple):
    """One question's outcome: rank()'s top MRR_K by the words alone, what recall() returned
    (record names), and rank()'s top MRR_K by words and meaning (the default; [] when the model
    could not be loaded)."""

    item: dict[str, Any]
    ranked: list[str]
    recalled: list[str]
    meaning: list[str] = []

    def by_meaning(self) -> Ranked:
        """The outcome with the ranking by words and meaning in place of the words'."""
        return self._replace(ranked=self.meaning)


def gold_share(names: list[str], gold: list[str]) -> float:
    """The share of the gold records among names (at most TOP_K of them), of those it could hold."""
    return ratio(sum(name in gold for name in names[:TOP_K]), min(TOP_K, len(gold)))


def write_records(vault: Vault, items: Iterable[dict[str, Any]], created: str | None = None) -> None:
    folder = vault.root / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        stamp = item.get("created", created)
        record = MemoryRecord(
            name=item["record"], description=item["description"], type="project", body=item["body"],
            created=stamp, updated=stamp,
        )  # fmt: skip
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")


def ask(vault: Vault, questions: list[dict[str, Any]], today: Any) -> list[Ranked]:
    """rank() with the questions' time read against today, and recall() as a user gets it on that day."""
    from aibuddy_cli.memory import service

    outcomes = []
    embedder = meaning_model()
    with Session(vault, USER, environ=NO_MODEL) as session, on_day(service, today):
        memory = session.memory
        for item in questions:
            ranked = [name for name, _ in memory.index().rank(item["question"], MRR_K, today)]
            recalled = [record.name for record in memory.recall(item["question"]).records]
            meaning = (
                [name for name, _ in memory.index().rank(item["question"], MRR_K, today, embedder)]
                if embedder is not None
                else []
            )
            outcomes.append(Ranked(item, ranked, recalled, meaning))
    return outcomes


def on_day(service: Any, today: Any) -> Any:
    """recall()'s today, while the block runs."""
    from unittest import mock

    return mock.patch.object(service, "today", lambda: today)


def reciprocal(outcome: Ranked) -> float:
    return next((1 / i for i, name in enumerate(outcome.ranked, 1) if name in outcome.item["gold"]), 0.0)


def ranked_figures(outcomes: list[Ranked]) -> dict[str, Any]:
    n = len(outcomes)

    def first(o: Ranked) -> bool:
        wanted = [o.item["best"]] if "best" in o.item else o.item["gold"]
        return bool(o.ranked) and o.ranked[0] in wanted

    return {
        "n": n,
        "recall_at_5": ratio(sum(gold_share(o.ranked, o.item["gold"]) for o in outcomes), n),
        "hit_at_1": sum(map(first, outcomes)),
        "hit_at_5": sum(any(name in o.item["gold"] for name in o.ranked[:TOP_K]) for o in outcomes),
        "mrr_at_10": ratio(sum(reciprocal(o) for o in outcomes), n),
        "recall_gold_share": ratio(sum(gold_share(o.recalled, o.item["gold"]) for o in outcomes), n),
        "recall_returned_mean": ratio(sum(len(o.recalled) for o in outcomes), n),
    }


def ranked_rows(groups: dict[str, list[Ranked]]) -> list[list[str]]:
    rows = []
    for group, members in groups.items():
        f = ranked_figures(members)
        n = f["n"]
        rows.append([
            group, str(n), f"{f['recall_at_5']:.3f}", fraction(f["hit_at_1"], n), fraction(f["hit_at_5"], n),
            f"{f['mrr_at_10']:.3f}", f"{f['recall_gold_share']:.3f}", f"{f['recall_returned_mean']:.2f}",
        ])  # fmt: skip
    return rows


def meaning_rows(groups: dict[str, list[Ranked]]) -> list[list[str]]:
    """rank()'s figures by the words alone → by words and meaning, per group."""
    rows = []
    for group, members in groups.items():
        words, fused = ranked_figures(members), ranked_figures([o.by_meaning() for o in members])
        n = words["n"]
        rows.append([
            group, str(n),
            f"{words['recall_at_5']:.3f} → {fused['recall_at_5']:.3f}",
            f"{fraction(words['hit_at_1'], n)} → {fraction(fused['hit_at_1'], n)}",
            f"{fraction(words['hit_at_5'], n)} → {fraction(fused['hit_at_5'], n)}",
            f"{words['mrr_at_10']:.3f} → {fused['mrr_at_10']:.3f}",
        ])  # fmt: skip
    return rows


MEANING_HEADER = ["group", "n", "Recall@5", "Hit@1", "Hit@5", "MRR@10"]
RANKED_HEADER = ["group", "n", "Recall@5", "Hit@1", "Hit@5", "MRR@10", "recall() gold share",
                 "recall() returned"]  # fmt: skip
COMMON_WORDS = {"en": ["payments", "release", "incident", "api", "notes", "checklist"],
                "zh": ["支付", "发布", "事故", "接口", "说明", "清单"]}  # fmt: skip


def common_filler(language: str, count: int, seed: int) -> list[dict[str, Any]]:
    """count filler records of common_terms_filler.json, the same first ones for any count."""
    import random

    pools = json.loads((OWN_SETS / "common_terms_filler.json").read_text(encoding="utf-8"))[language]
    rng = random.Random(f"{seed}-{language}")
    kinds = pools["kinds"]
    records = []
    for number in range(count):
        kind = rng.choices(kinds, weights=[k["weight"] for k in kinds])[0]
        values = {slot: rng.choice(choices) for slot, choices in pools["slots"].items()}
        day = 1 + rng.randrange(28)
        records.append({
            "record": f"{language}-filler-{number:04d}",
            "description": kind["description"].format(**values),
            "body": kind["body"].format(**values),
            "created": f"2024-{1 + number % 12:02d}-{day:02d}T09:00:00Z",
        })  # fmt: skip
    return records


def run_common_terms(scratch: Path) -> dict[str, Any]:
    """bench/sets/common_terms.jsonl: questions of common words over vaults of 8 to 2,000 records
    (nested; filled from common_terms_filler.json), in English and Chinese."""
    import datetime as dt

    lines = read_jsonl(OWN_SETS / "common_terms.jsonl")
    header = lines[0]
    today = dt.date(2025, 6, 1)
    results: dict[str, Any] = {"sizes": header["sizes"], "outcomes": [], "shares": {}}
    for language in ("en", "zh"):
        core = [line for line in lines[1:] if "record" in line and line["language"] == language]
        questions = [line for line in lines[1:] if "question" in line and line["language"] == language]
        for size in header["sizes"]:
            chosen = [item for item in core if item["from"] <= size]
            chosen += common_filler(language, max(0, size - len(chosen)), header["seed"])
            vault = new_vault(scratch / f"common-{language}-{size}")
            write_records(vault, chosen, header["created"])
            texts = [f"{item['description']} {item['body']}".lower() for item in chosen]
            results["shares"][f"{language} {size}"] = {
                word: ratio(sum(word in text for text in texts), len(texts))
                for word in COMMON_WORDS[language]
            }
            asked = [dict(item, size=size) for item in questions if item["from"] <= size]
            results["outcomes"] += [o._asdict() for o in ask(vault, asked, today)]
    return results


def common_terms_report(results: dict[str, Any]) -> list[str]:
    outcomes = [Ranked(**o) for o in results["outcomes"]]
    by_size: dict[str, list[Ranked]] = {}
    by_category: dict[str, list[Ranked]] = {}
    for o in outcomes:
        by_size.setdefault(f"{o.item['language']}, {o.item['size']:,} records", []).append(o)
        by_category.setdefault(f"{o.item['language']}: {o.item['category']}", []).append(o)
    shares = "; ".join(
        f"{vault}: " + ", ".join(f"{word} {share:.0%}" for word, share in found.items())
        for vault, found in results["shares"].items()
    )
    lines = [
        "",
        "## Own set: common words (bench/sets/common_terms.jsonl)",
        "",
        "rank() = `index.rank(question, 10)`, by the words alone; recall() = `memory.recall(question)`"
        " (at most 5, words and meaning: the default); gold share = gold records among the 5 of those there"
        " could be; Hit@1 = the record holding the question's rarer word first, where one does, else any gold"
        " record first.",
        "",
        *table(RANKED_HEADER, ranked_rows(by_size)),
        "",
        *table(RANKED_HEADER, ranked_rows(dict(sorted(by_category.items())))),
        "",
        f"Share of the records holding each word: {shares}.",
    ]
    if any(o.meaning for o in outcomes):
        lines += ["", "### rank(), words alone → words and meaning (the default)", ""]
        lines += table(MEANING_HEADER, meaning_rows(by_size))
        lines += ["", *table(MEANING_HEADER, meaning_rows(dict(sorted(by_category.items()))))]
    return lines


def run_dated_days(scratch: Path) -> dict[str, Any]:
    """bench/sets/dated_days.jsonl: dated questions whose day holds several records sharing words."""
    import datetime as dt

    lines = read_jsonl(OWN_SETS / "dated_days.jsonl")
    today = dt.date.fromisoformat(lines[0]["today"])
    outcomes: list[dict[str, Any]] = []
    for language in ("en", "zh"):
        vault = new_vault(scratch / f"days-{language}")
        mine = [line for line in lines[1:] if line.get("language") == language]
        write_records(vault, [line for line in mine if "record" in line])
        questions = [line for line in mine if "question" in line]
        outcomes += [o._asdict() for o in ask(vault, questions, today)]
    return {"today": today.isoformat(), "outcomes": outcomes}


def dated_days_report(results: dict[str, Any]) -> list[str]:
    groups: dict[str, list[Ranked]] = {}
    for o in (Ranked(**o) for o in results["outcomes"]):
        language = o.item["language"]
        named = "no date" if o.item["category"] == "no date" else "names a time"
        groups.setdefault(f"{language}: {named}", []).append(o)
        if named != "no date":
            groups.setdefault(f"{language}: {o.item['category']}", []).append(o)
    lines = ["", f"## Own set: dated days (bench/sets/dated_days.jsonl, today = {results['today']})", ""]
    lines += table(RANKED_HEADER, ranked_rows(dict(sorted(groups.items()))))
    outcomes = [Ranked(**o) for o in results["outcomes"]]
    if any(o.meaning for o in outcomes):
        lines += ["", "### rank(), words alone → words and meaning (the default)", ""]
        lines += table(MEANING_HEADER, meaning_rows(dict(sorted(groups.items()))))
    misses = [o for o in outcomes if not o.ranked or o.ranked[0] not in o.item["gold"]]
    lines += ["", "Misses at 1 (the top 3):"]
    lines += [f'- "{o.item["question"]}" (gold {", ".join(o.item["gold"])}): {o.ranked[:3]}' for o in misses]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every figure to OUT as JSON")
    parser.add_argument("--devsets", type=Path, default=DEFAULT_DEVSETS, help="the dev sets folder")
    parser.add_argument("--only", metavar="PARTS", help="the parts to run, e.g. madial,dated_days")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus folder")
    parser.add_argument("--heldout", action="store_true", help="also report the held-out questions")
    parser.add_argument("--distractors", type=Path, help="more Markdown documents for the sections part")
    args = parser.parse_args()
    devsets: Path = args.devsets
    corpus: Path = args.corpus
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="aibuddy-eval-"))
    results: dict[str, Any] = {"devsets": str(devsets)}
    timings: dict[str, float] = {}
    lines: list[str] = []
    try:
        if not devsets.is_dir():
            lines += ["", f"(no dev sets at {devsets}: only the own sets are measured)"]
        for part, folder, run, report in (
            ("madial", devsets / "madial-bench", run_madial, lambda r: madial_report(r) + semantic_report(r)),
            ("qmd", devsets / "qmd-eval", run_qmd, qmd_report),
            ("sections", corpus, lambda _, scratch: run_sections(corpus, devsets, scratch, args.distractors),
             lambda r: sections_report(r, args.heldout)),
            ("dated", OWN_SETS, lambda _, scratch: run_dated(scratch), dated_report),
            ("handbook", OWN_SETS, lambda _, scratch: run_handbook(scratch), handbook_report),
            ("paraphrase", OWN_SETS, lambda _, s: run_paraphrase(s), paraphrase_report),
            ("common_terms", OWN_SETS, lambda _, scratch: run_common_terms(scratch), common_terms_report),
            ("dated_days", OWN_SETS, lambda _, scratch: run_dated_days(scratch), dated_days_report),
        ):
            if args.only and part not in args.only.split(","):
                continue
            if not folder.is_dir():
                if devsets.is_dir():
                    lines += ["", f"({folder} is absent: {part} skipped)"]
                continue
            begun = time.perf_counter()
            results[part] = run(folder, scratch)
            timings[part] = round(time.perf_counter() - begun, 2)
            lines += report(results[part])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    timings["total"] = round(time.perf_counter() - started, 2)
    results["seconds"] = timings
    parts = ", ".join(f"{part} {seconds:.1f} s" for part, seconds in timings.items() if part != "total")
    lines += ["", f"Elapsed: {timings['total']:.1f} s ({parts})."]
    print("\n".join(lines).lstrip("\n"))
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"figures written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
