#!/usr/bin/env python3
"""How much of each credential a secret redactor removes, and how many look-alikes it touches.

Run with the project's virtualenv:

    .venv/bin/python bench/secret_rates.py [--show-misses] [--json] [--detector MODULE:FUNCTION]

The sets are bench/sets/secrets/ (made by make_sets.py there; its docstring says what each field
holds and what was decided for placeholders and publishable keys):

credentials.jsonl  texts as a conversation, transcript or note has them, each with the exact
                   secret substring (or several) that must disappear.
lookalikes.jsonl   texts that are not credentials but sit near them: commit hashes, UUIDs,
                   checksums, placeholders, "I forgot my password", 令牌桶算法...

A detector is a function from a text to the text with its secrets replaced (it may return a tuple
whose first item is that text, as `aibuddy_cli.redaction.detect.redact` does). For each credential:

whole   the secret is gone from the output, and no piece of it of 4 or more characters is left:
        no 4-character substring of the secret appears in the output, other than one the text
        also holds outside its secrets (a year, a host name) and one inside the provider's fixed
        public prefix (`ghp_`, `sk-ant-api03-`, `AKIA`: keeping a prefix as a hint leaks
        nothing). Comparisons are case-sensitive. A text with several secrets is whole when
        each is.
missed  every secret of the text is still in the output, intact.
partly  anything between: a secret cut short ("[redacted: password]&3kLq"), one of two secrets
        left, a value whose tail survived.

A look-alike is touched when the output differs from the input in any way.

The target of the issue: every credential whole, at most 2 % of look-alikes touched.
To compare candidates from Python: sys.path.insert(0, "bench"); from secret_rates import rates;
rates(my_detect) returns the figures as a dict (the same document as --json).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

SETS = Path(__file__).resolve().parent / "sets" / "secrets"
DEFAULT_DETECTOR = "aibuddy_cli.redaction.detect:redact"
PIECE = 4  # a piece of a secret this long left in the output is a leak

# Fixed prefixes that say which provider issued a value, not what it opens. Longest first.
PUBLIC_PREFIXES = tuple(
    sorted(
        (
            "sk-ant-api03- sk-ant-admin01- sk-proj- sk-svcacct- sk_live_ sk_test_ rk_live_ rk_test_ whsec_ "
            "github_pat_ ghp_ gho_ ghu_ ghs_ ghr_ glpat- glrt- xoxb- xoxp- xapp-1- hf_ gsk_ r8_ pplx- xai- "
            "npm_ pypi-AgEIcHlwaS5vcmc rubygems_ dckr_pat_ dop_v1_ HRKU-AA AKIA ASIA LTAI AKID ATBB "
            "ATATT3xFfGF0 SG. key- shpat_ shpss_ lin_api_ ntn_ secret_ sntryu_ NRAK- PMAK- dp.st.prd. dp.pt. "
            "ops_eyJ AGE-SECRET-KEY-1 hvs.CAESI hvs. dapi pul- glsa_ GOCSPX- sbp_ pscale_pw_ EAAA sq0csp- "
            "access_token$production$ nfp_ AIza sk.eyJ1 1//0"
        ).split(),
        key=len,
        reverse=True,
    )
)


class Credential(NamedTuple):
    id: str
    provider: str
    format: str
    lang: str
    text: str
    secrets: tuple[str, ...]


class LookAlike(NamedTuple):
    id: str
    category: str
    lang: str
    text: str


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_credentials(path: Path = SETS / "credentials.jsonl") -> list[Credential]:
    out = []
    for row in _rows(path):
        secret = row["secret"]
        secrets = tuple(secret) if isinstance(secret, list) else (secret,)
        out.append(Credential(row["id"], row["provider"], row["format"], row["lang"], row["text"], secrets))
    return out


def load_lookalikes(path: Path = SETS / "lookalikes.jsonl") -> list[LookAlike]:
    return [LookAlike(row["id"], row["category"], row["lang"], row["text"]) for row in _rows(path)]


def counted_pieces(secret: str) -> set[str]:
    """The 4-character pieces of secret whose presence in an output is a leak (those wholly
    inside its public prefix are not)."""
    prefix = next((p for p in PUBLIC_PREFIXES if secret.startswith(p)), "")
    first = max(0, len(prefix) - PIECE + 1)
    return {secret[i : i + PIECE] for i in range(first, len(secret) - PIECE + 1)}


def leaked(secret: str, text: str, secrets: Iterable[str], output: str) -> list[str]:
    """The pieces of secret left in output that the text does not hold outside its secrets."""
    around = text
    for value in sorted(secrets, key=len, reverse=True):
        around = around.replace(value, "\0")
    return sorted(p for p in counted_pieces(secret) if p in output and p not in around)


def verdict(credential: Credential, output: str) -> str:
    """whole, partly or missed (see the module's docstring)."""
    each = []
    for secret in credential.secrets:
        if secret in output:
            each.append("missed")
        elif leaked(secret, credential.text, credential.secrets, output):
            each.append("partly")
        else:
            each.append("whole")
    if all(v == "whole" for v in each):
        return "whole"
    if all(v == "missed" for v in each):
        return "missed"
    return "partly"


def output_of(detect: Callable[[str], Any], text: str) -> str:
    result = detect(text)
    if isinstance(result, tuple | list):
        result = result[0]
    if not isinstance(result, str):
        raise TypeError(f"the detector returned {type(result).__name__}, not the text")
    return result


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _table(rows: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """(group, verdict) pairs → {group: {"n": .., verdict: ..}} in group order."""
    out: dict[str, dict[str, int]] = {}
    for group, value in rows:
        cell = out.setdefault(group, {"n": 0, "whole": 0, "partly": 0, "missed": 0})
        cell["n"] += 1
        cell[value] += 1
    return dict(sorted(out.items()))


def rates(
    detect: Callable[[str], Any] | None = None,
    credentials: list[Credential] | None = None,
    lookalikes: list[LookAlike] | None = None,
) -> dict[str, Any]:
    """The figures for detect (by default aibuddy's redactor) on the two sets."""
    if detect is None:
        detect = load_detector(DEFAULT_DETECTOR)
    credentials = load_credentials() if credentials is None else credentials
    lookalikes = load_lookalikes() if lookalikes is None else lookalikes
    started = time.perf_counter()
    verdicts, not_whole = [], []
    for cred in credentials:
        output = output_of(detect, cred.text)
        value = verdict(cred, output)
        verdicts.append(value)
        if value != "whole":
            pieces = sorted({p for s in cred.secrets for p in leaked(s, cred.text, cred.secrets, output)})
            not_whole.append(
                {
                    "id": cred.id,
                    "provider": cred.provider,
                    "verdict": value,
                    "output": output,
                    "left": pieces[:8],
                }
            )
    touched = []
    for look in lookalikes:
        output = output_of(detect, look.text)
        if output != look.text:
            touched.append({"id": look.id, "category": look.category, "output": output})
    elapsed = time.perf_counter() - started
    touched_ids = {t["id"] for t in touched}
    counts = Counter(verdicts)
    return {
        "credentials": {
            "n": len(credentials),
            "whole": counts["whole"],
            "partly": counts["partly"],
            "missed": counts["missed"],
            "by_provider": _table((c.provider, v) for c, v in zip(credentials, verdicts, strict=True)),
            "by_format": _table((c.format, v) for c, v in zip(credentials, verdicts, strict=True)),
            "by_lang": _table((c.lang, v) for c, v in zip(credentials, verdicts, strict=True)),
        },
        "lookalikes": {
            "n": len(lookalikes),
            "touched": len(touched),
            "by_category": _touch_table((la.category, la.id in touched_ids) for la in lookalikes),
            "by_lang": _touch_table((la.lang, la.id in touched_ids) for la in lookalikes),
        },
        "not_whole": not_whole,
        "touched": touched,
        "us_per_text": round(elapsed / max(len(credentials) + len(lookalikes), 1) * 1e6),
    }


def _touch_table(rows: Iterable[tuple[str, bool]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for group, hit in rows:
        cell = out.setdefault(group, {"n": 0, "touched": 0})
        cell["n"] += 1
        cell["touched"] += hit
    return dict(sorted(out.items()))


def load_detector(spec: str) -> Callable[[str], Any]:
    """ "module:function" → the function."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"error: --detector wants MODULE:FUNCTION, got {spec!r}")
    detect: Callable[[str], Any] = getattr(importlib.import_module(module), name)
    return detect


def _cut(text: str, limit: int = 300) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def print_report(report: dict[str, Any], detector: str, show_misses: bool) -> None:
    creds, looks = report["credentials"], report["lookalikes"]
    print(f"secret redaction: {detector}")
    for title, key in (("kind", "by_provider"), ("format", "by_format"), ("lang", "by_lang")):
        print(f"\n{title:<22} {'n':>4} {'whole':>6} {'partly':>7} {'missed':>7}")
        for group, cell in creds[key].items():
            print(f"{group:<22} {cell['n']:>4} {cell['whole']:>6} {cell['partly']:>7} {cell['missed']:>7}")
    n = creds["n"]
    print(f"{'all':<22} {n:>4} {creds['whole']:>6} {creds['partly']:>7} {creds['missed']:>7}")
    for title, key in (("look-alike category", "by_category"), ("lang", "by_lang")):
        print(f"\n{title:<22} {'n':>4} {'touched':>8}")
        for group, cell in looks[key].items():
            print(f"{group:<22} {cell['n']:>4} {cell['touched']:>8}")
    print(f"{'all':<22} {looks['n']:>4} {looks['touched']:>8}")
    print(
        f"\ncredentials {n}: whole {creds['whole']} ({_share(creds['whole'], n):.0%}), "
        f"partly {creds['partly']}, "
        f"missed {creds['missed']} · look-alikes {looks['n']}: touched {looks['touched']} "
        f"({_share(looks['touched'], looks['n']):.1%}) · target: all whole, at most 2 % touched · "
        f"{report['us_per_text']} µs a text"
    )
    if show_misses:
        print("\nnot redacted whole (id, verdict, pieces left, output):")
        for miss in report["not_whole"]:
            left = ",".join(miss["left"])
            print(f"{miss['verdict']:<7} {miss['id']:<24} [{left}] {_cut(miss['output'])}")
        print("\nlook-alikes touched (id, output):")
        for hit in report["touched"]:
            print(f"touched {hit['id']:<24} {_cut(hit['output'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--detector", default=DEFAULT_DETECTOR, help="MODULE:FUNCTION (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="list the credentials not redacted whole and the look-alikes touched, with outputs",
    )
    args = parser.parse_args(argv)
    report = rates(load_detector(args.detector))
    if args.json:
        print(json.dumps({"detector": args.detector, **report}, ensure_ascii=False, indent=2))
    else:
        print_report(report, args.detector, args.show_misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
