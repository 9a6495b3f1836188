#!/usr/bin/env python3
"""How the secret redactor does on the third blind held-out set (bench/sets/secrets_heldout3).

Run with the project's virtualenv:  .venv/bin/python bench/secret_heldout3.py [--quiet] [--set DIR]
[--marker REGEX]

The set was written after the redactor had been tuned on bench/sets/secrets, bench/sets/secrets_heldout
and bench/sets/secrets_heldout2, without their texts, the redactor's code or its tests in view: messy
human conversation and the memory an assistant writes about a person (credentials typed in chats,
e-mails, tickets and dictated notes with typos, split messages, quoted replies, lists, Markdown around
the value, keys in address bars, OAuth redirects, magic and reset links, Wi-Fi cards, WeChat/DingTalk/
Feishu logs, mixed and traditional Chinese, full-width punctuation, emoji; "The user's staging DB
password is …"), and the same talk with nothing secret in it. bench/sets/secrets_heldout3/make_heldout3.py
says what it counts as a credential (door and alarm codes and reset links do; invite links, coupon
codes, booking references and resident ID numbers do not).

The measure is bench/secret_heldout.py's: a credential is redacted whole when every secret is gone and
no 4 characters of it are left beyond what the rest of the text holds (a documented constant start,
the item's fixed_prefix, may stay), partly when some is left, missed when all of it is; a look-alike
is touched when the output differs from the text. Figures per provider, format and language, and per
look-alike category; unless --quiet, every miss, partial and touched look-alike with its output.

The detector measured is aibuddy_cli.redaction.detect.redact(text) -> (redacted_text, counts).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from secret_heldout import MARKER, measure  # noqa: E402  (the sibling script, found via HERE)

SET = HERE / "sets" / "secrets_heldout3"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", type=Path, default=SET, help="the folder of the two JSONL files")
    parser.add_argument("--marker", default=MARKER, help="a regex matching the redactor's markers")
    parser.add_argument("--quiet", action="store_true", help="figures only, no list of misses")
    args = parser.parse_args(argv)
    from aibuddy_cli.redaction.detect import redact

    measure(redact, args.set, re.compile(args.marker, re.IGNORECASE), args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
