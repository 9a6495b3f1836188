#!/usr/bin/env python3
"""How many labelled description pairs of tests/fixtures/fact_pairs.tsv the fact similarity gets right.

Run with the project's virtualenv:  .venv/bin/python bench/fact_pair_rates.py [--misses] [--threshold X]

same       the fact reworded: right when the score reaches the threshold (the record is updated)
changed    the candidate says it replaces the value ("now", "moved to", 改为…): right when it reaches it
different  similar wording, another fact: right when it stays below (a new record; nothing overwritten)

The rewording tables of aibuddy_cli/memory/facts.py were completed with the first 137 pairs in
view, so their figures are in-sample (same 45/52, changed 26/31, different 54/54). The next 37
were written afterwards and measured blind before they were added: same 10/13, changed 10/11,
different 13/13; the last 3 are different facts a review found (longer / shorter answers, "small
changes", "New York"), which led to fewer replacement words.

A miss on `same` or `changed` leaves two records; a miss on `different` would
overwrite a fact.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from aibuddy_cli.memory.facts import compare

TSV = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "fact_pairs.tsv"
LABELS = ("same", "changed", "different")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsv", type=Path, default=TSV)
    parser.add_argument("--threshold", type=float, default=0.6, help="[extraction] similarity (0.6)")
    parser.add_argument("--misses", action="store_true", help="list the pairs that land wrong")
    args = parser.parse_args(argv)
    with args.tsv.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    results = []
    for row in rows:
        found = compare(row["existing"], row["candidate"])
        merged = found.score >= args.threshold
        results.append((row, found, merged == (row["label"] != "different")))
    print(f"{'label':<10} {'pairs':>6} {'right':>6} {'share':>6}   en / zh")
    for label in LABELS:
        mine = [(row, right) for row, _, right in results if row["label"] == label]
        by_lang = []
        for lang in ("en", "zh"):
            of_lang = [right for row, right in mine if row["lang"] == lang]
            by_lang.append(f"{sum(of_lang)}/{len(of_lang)}")
        right = sum(r for _, r in mine)
        print(
            f"{label:<10} {len(mine):>6} {right:>6} {right / max(len(mine), 1):>6.0%}   {' / '.join(by_lang)}"
        )
    if args.misses:
        for row, found, right in results:
            if not right:
                print(f"{row['label']:<10} {found.score:.2f}  {row['existing']!r} -> {row['candidate']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
