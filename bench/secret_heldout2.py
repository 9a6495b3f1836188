#!/usr/bin/env python3
"""How the secret redactor does on the second blind held-out set (bench/sets/secrets_heldout2).

Run with the project's virtualenv:  .venv/bin/python bench/secret_heldout2.py [--quiet] [--set DIR]
[--marker REGEX]

The set was written after the redactor had been tuned on bench/sets/secrets and
bench/sets/secrets_heldout, without their texts, the redactor's code or its tests in view: what passes
through an AI coding agent's transcript and a person's notes over a month (env dumps, `cat .env`,
`docker inspect`, `kubectl get secret -o yaml`, CI logs, git/pip/npm/maven/docker configs, HAR and
Postman exports, SQL, Ansible/Helm, systemd, PowerShell, app settings, VPN/Wi-Fi configs, 2FA codes,
seed phrases, Chinese work notes and chats), and the same outputs with nothing secret in them.
bench/sets/secrets_heldout2/make_heldout2.py says what it counts as a credential (base64 of a password
does, backup codes and recovery phrases do, ciphertext and public page tokens do not).

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

SET = HERE / "sets" / "secrets_heldout2"


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
