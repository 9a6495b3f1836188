#!/usr/bin/env python3
"""Recall and open rate of the extraction cue gate on the labelled turns in tests/fixtures/cue_turns.tsv.

Run with the project's virtualenv:  .venv/bin/python bench/cue_gate_rates.py [--misses] [--tsv PATH]

recall     share of "lasting" turns (a durable preference, fact about the user, feedback or project
           fact) on which the gate opens; "kind ok" is the share where the expected kind is among
           the cues found.
open rate  share of "chatter" turns (task requests, questions, pasted material) on which it opens.

The patterns were written with this table in view, so its figures are in-sample. The table grew in
rounds, each batch of new rows measured blind before it was folded in and the misses generalised;
blind figures, recall / open rate (en, zh): 64 %/3 %, 67 %/3 % (153 rows); 60 %/0 %, 59 %/4 % (117);
53 %/28 %, 57 %/12 % (110, adversarial chatter, before a sentence-splitting fix); 54 %/5 %,
54 %/5 % (96); with the English first-person rule: 72 %/0 %, 34 %/0 % (118); last, the
phenomena of issue 22 (polite closings, "I would like / need / want …" requests, first-person plans,
relative clauses, 我周末/养了/打算…): 67 %/33 %, 80 %/0 % (60); the confirmations of issue 24 ("perfect,
keep doing it that way", 就这样写，很好, beside "perfect, thanks" and 就这样吧): 44 %/0 %, 31 %/0 % (68),
after the rules 94 %/0 %, 100 %/0 %. Expect new phrasings to be missed at about those rates; a
held-out batch is the only honest measure.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import NamedTuple

from aibuddy_cli.memory.cues import find_cues

TSV = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cue_turns.tsv"


class Turn(NamedTuple):
    lang: str
    label: str
    kind: str
    text: str


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t")


def load_turns(path: Path = TSV) -> list[Turn]:
    """The table's rows; `\\n` and `\\t` in the text column stand for a newline and a tab."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [Turn(row["lang"], row["label"], row["kind"], _unescape(row["text"])) for row in reader]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsv", type=Path, default=TSV)
    parser.add_argument("--misses", action="store_true", help="list missed lasting and opened chatter turns")
    args = parser.parse_args(argv)
    turns = load_turns(args.tsv)
    find_cues(["warm up"])  # patterns compile on first use: not part of the per-turn cost
    started = time.perf_counter()
    cues = [find_cues([turn.text]) for turn in turns]
    elapsed = time.perf_counter() - started

    print(f"{'lang':<5} {'lasting':>8} {'recall':>7} {'kind ok':>8} {'chatter':>8} {'open rate':>10}")
    for lang in sorted({turn.lang for turn in turns}):
        mine = [(t, c) for t, c in zip(turns, cues, strict=True) if t.lang == lang]
        lasting = [(t, c) for t, c in mine if t.label == "lasting"]
        chatter = [(t, c) for t, c in mine if t.label == "chatter"]
        recall = sum(bool(c) for _, c in lasting) / max(len(lasting), 1)
        kind_ok = sum(t.kind in c for t, c in lasting) / max(len(lasting), 1)
        open_rate = sum(bool(c) for _, c in chatter) / max(len(chatter), 1)
        print(
            f"{lang:<5} {len(lasting):>8} {recall:>7.0%} {kind_ok:>8.0%} {len(chatter):>8} {open_rate:>10.0%}"
        )
    print(f"{len(turns)} turns, {elapsed / max(len(turns), 1) * 1e6:.0f} µs a turn")
    if args.misses:
        for turn, found in zip(turns, cues, strict=True):
            if (turn.label == "lasting") != bool(found):
                what = "missed" if turn.label == "lasting" else f"opened {','.join(found)}"
                print(f"{turn.lang} {what:<24} {turn.text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
