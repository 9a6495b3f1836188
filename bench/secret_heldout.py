#!/usr/bin/env python3
"""How the secret redactor does on the held-out set in bench/sets/secrets_heldout (written blind).

Run with the project's virtualenv:  .venv/bin/python bench/secret_heldout.py [--quiet] [--set DIR]
[--marker REGEX]

credentials  each text holds one or more secrets (exact substrings). After redaction a credential is
             whole   every secret gone and no fragment of 4 of its characters left (a documented
                     constant start such as `ghp_` may stay: the item's fixed_prefix),
             partly  some of it gone, some left (a cut key, a tail kept, one of two secrets),
             missed  every secret still there as often as before.
             Figures per provider, format and language.
look-alikes  texts with no secret at all: touched when the redacted text differs from the text.
             Figures per category.

A fragment counts as left only where the output holds it more often than the text around the
secrets does, once the redactor's markers (--marker, default `[redacted…]`) are taken out, so a
marker or a word of the sentence is not mistaken for a leak. Unless --quiet, every miss, partial
and touched look-alike is listed with its text and output.

The detector measured is aibuddy_cli.redaction.detect.redact(text) -> (redacted_text, counts).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SET = REPO / "bench" / "sets" / "secrets_heldout"
MARKER = r"\[redacted[^\]]*\]"
FRAGMENT = 4


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def secrets_of(item: dict[str, Any]) -> list[str]:
    secret = item["secret"]
    return list(secret) if isinstance(secret, list) else [secret]


def occurrences(text: str, part: str) -> int:
    """How many times `part` occurs in `text`, overlapping ones included."""
    return sum(1 for _ in re.finditer(f"(?={re.escape(part)})", text))


def leaked_fragments(item: dict[str, Any], output: str, marker: re.Pattern[str]) -> list[str]:
    """The fragments of the item's secrets the output holds more often than the text around them."""
    secrets = secrets_of(item)
    context = item["text"]
    for secret in sorted(secrets, key=len, reverse=True):
        context = context.replace(secret, "\0")
    visible = marker.sub("\0", output)
    prefixes = item.get("fixed_prefix", [])
    left: list[str] = []
    for secret in secrets:
        kept = max((len(p) for p in prefixes if secret.startswith(p)), default=0)
        for start in range(len(secret) - FRAGMENT + 1):
            if start + FRAGMENT <= kept:
                continue
            fragment = secret[start : start + FRAGMENT]
            if fragment not in left and occurrences(visible, fragment) > occurrences(context, fragment):
                left.append(fragment)
    return left


def verdict(item: dict[str, Any], output: str, marker: re.Pattern[str]) -> tuple[str, list[str]]:
    """("whole" | "partly" | "missed", the fragments left)."""
    text = item["text"]
    if all(occurrences(output, s) >= occurrences(text, s) for s in secrets_of(item)):
        return "missed", secrets_of(item)
    left = leaked_fragments(item, output, marker)
    return ("partly", left) if left else ("whole", [])


def table(title: str, keys: Iterable[str], rows: dict[str, dict[str, int]], columns: list[str]) -> None:
    print(
        f"\n{title:<18}"
        + "".join(f"{c:>9}" for c in columns)
        + f"{'n':>6}{'whole %' if 'whole' in columns else 'touched %':>11}"
    )
    for key in keys:
        counts = rows[key]
        total = sum(counts[c] for c in columns)
        rate = counts[columns[0]] / total if total else 0.0
        print(f"{key:<18}" + "".join(f"{counts[c]:>9}" for c in columns) + f"{total:>6}{rate:>10.1%}")


def measure(
    redact: Callable[[str], tuple[str, Any]], folder: Path, marker: re.Pattern[str], quiet: bool
) -> dict[str, float]:
    credentials = load(folder / "credentials.jsonl")
    lookalikes = load(folder / "lookalikes.jsonl")
    redact("warm up: nothing here")  # a catalogue loads on first use: not part of the per-text cost
    started = time.perf_counter()
    cred_out = [redact(item["text"])[0] for item in credentials]
    look_out = [redact(item["text"])[0] for item in lookalikes]
    elapsed = time.perf_counter() - started

    verdicts = [verdict(item, out, marker) for item, out in zip(credentials, cred_out, strict=True)]
    columns = ["whole", "partly", "missed"]
    for field in ("provider", "format", "lang"):
        rows: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(columns, 0))
        for item, (kind, _) in zip(credentials, verdicts, strict=True):
            rows[item[field]][kind] += 1
        keys = sorted(rows, key=lambda k: (rows[k]["whole"] / sum(rows[k].values()), k))
        perfect = [k for k in keys if rows[k]["whole"] == sum(rows[k].values())]
        if field == "provider" and perfect:  # a long list: the flawless ones on one line
            keys = [k for k in keys if k not in perfect]
        table(field, keys, rows, columns)
        if field == "provider" and perfect:
            print(f"all whole ({len(perfect)}): {', '.join(sorted(perfect))}")
    totals = {c: sum(1 for kind, _ in verdicts if kind == c) for c in columns}
    share = totals["whole"] / len(credentials)
    print(
        f"\ncredentials: {len(credentials)}, whole {totals['whole']} ({share:.1%}), "
        f"partly {totals['partly']}, missed {totals['missed']}"
    )

    touched = [item["text"] != out for item, out in zip(lookalikes, look_out, strict=True)]
    by_category: dict[str, dict[str, int]] = defaultdict(lambda: {"touched": 0, "kept": 0})
    for item, was in zip(lookalikes, touched, strict=True):
        by_category[item["category"]]["touched" if was else "kept"] += 1
    table("category", sorted(by_category), by_category, ["touched", "kept"])
    by_lang: dict[str, dict[str, int]] = defaultdict(lambda: {"touched": 0, "kept": 0})
    for item, was in zip(lookalikes, touched, strict=True):
        by_lang[item["lang"]]["touched" if was else "kept"] += 1
    table("lang", sorted(by_lang), by_lang, ["touched", "kept"])
    print(f"\nlook-alikes: {len(lookalikes)}, touched {sum(touched)} ({sum(touched) / len(lookalikes):.1%})")
    count = len(credentials) + len(lookalikes)
    print(f"{count} texts, {elapsed / count * 1e3:.2f} ms a text")

    if not quiet:
        print("\n== credentials not redacted whole ==")
        for item, out, (kind, left) in zip(credentials, cred_out, verdicts, strict=True):
            if kind == "whole":
                continue
            print(f"\n[{item['id']}] {kind} {item['provider']}/{item['format']}/{item['lang']}")
            print(f"  text:   {item['text']!r}")
            print(f"  output: {out!r}")
            print(f"  left:   {left!r}")
        print("\n== look-alikes touched ==")
        for item, out, was in zip(lookalikes, look_out, touched, strict=True):
            if was:
                print(f"\n[{item['id']}] {item['category']}/{item['lang']}")
                print(f"  text:   {item['text']!r}")
                print(f"  output: {out!r}")
    return {
        "whole": totals["whole"] / len(credentials),
        "touched": sum(touched) / len(lookalikes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=SET, help="the folder of the two JSONL files")
    parser.add_argument("--marker", default=MARKER, help="a regex matching the redactor's markers")
    parser.add_argument("--quiet", action="store_true", help="figures only, no list of misses")
    args = parser.parse_args(argv)
    from aibuddy_cli.redaction.detect import redact

    measure(redact, args.set, re.compile(args.marker, re.IGNORECASE), args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
