"""The held-out secret-redaction set (bench/sets/secrets_heldout) is well formed, and its measure
(bench/secret_heldout.py) tells a whole redaction from a partial one and a miss.

The set is written blind and is the honest figure of the redactor: nothing here asserts how well
the redactor does on it (tuning on it would spend it), only that the set says what it claims.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "bench" / "sets" / "secrets_heldout"
FORMATS = {"prose", "json", "env", "url", "header", "yaml", "cli", "code", "log", "chat"}


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _rows(name: str) -> list[dict[str, Any]]:
    with (SET / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


CREDENTIALS = _rows("credentials.jsonl")
LOOKALIKES = _rows("lookalikes.jsonl")


def _secrets(item: dict[str, Any]) -> list[str]:
    return item["secret"] if isinstance(item["secret"], list) else [item["secret"]]


def test_the_set_has_its_size_and_spread() -> None:
    assert len(CREDENTIALS) >= 150 and len(LOOKALIKES) >= 150
    assert len({item["provider"] for item in CREDENTIALS}) >= 30
    assert {item["format"] for item in CREDENTIALS} == FORMATS
    for rows in (CREDENTIALS, LOOKALIKES):
        langs = [item["lang"] for item in rows]
        assert set(langs) == {"en", "zh"} and langs.count("zh") >= 30


def test_ids_are_unique_and_fields_complete() -> None:
    ids = [item["id"] for item in CREDENTIALS + LOOKALIKES]
    assert len(ids) == len(set(ids))
    for item in CREDENTIALS:
        assert set(item) - {"fixed_prefix"} == {"id", "provider", "format", "lang", "text", "secret"}, item[
            "id"
        ]
        assert item["format"] in FORMATS and item["lang"] in {"en", "zh"}, item["id"]
    for item in LOOKALIKES:
        assert set(item) == {"id", "category", "lang", "text"}, item["id"]


def test_every_secret_is_an_exact_substring_of_its_text() -> None:
    for item in CREDENTIALS:
        secrets = _secrets(item)
        assert secrets and all(isinstance(s, str) and len(s) >= 8 for s in secrets), item["id"]
        for secret in secrets:
            assert secret in item["text"], (item["id"], secret)
        for prefix in item.get("fixed_prefix", []):
            assert any(s.startswith(prefix) and len(s) > len(prefix) for s in secrets), (item["id"], prefix)


def test_no_secret_is_a_textbook_value() -> None:
    for item in CREDENTIALS:
        for secret in _secrets(item):
            assert not re.search(r"example|test|xxxx|1234|abcd", secret, re.IGNORECASE), (item["id"], secret)


def test_no_lookalike_holds_a_secret_of_the_credentials() -> None:
    secrets = {s for item in CREDENTIALS for s in _secrets(item)}
    for item in LOOKALIKES:
        assert not any(s in item["text"] for s in secrets), item["id"]


def test_the_generator_writes_the_committed_files(tmp_path: Path) -> None:
    _module(SET / "make_heldout.py").main(["--out", str(tmp_path)])
    for name in ("credentials.jsonl", "lookalikes.jsonl"):
        assert (tmp_path / name).read_bytes() == (SET / name).read_bytes(), name


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _module(REPO / "bench" / "secret_heldout.py")


def test_the_measure_tells_whole_from_partly_from_missed(bench: ModuleType) -> None:
    marker = re.compile(bench.MARKER, re.IGNORECASE)
    item = next(i for i in CREDENTIALS if i.get("fixed_prefix") == ["ghp_"])
    secret = _secrets(item)[0]
    text = item["text"]
    assert bench.verdict(item, text, marker)[0] == "missed"
    assert bench.verdict(item, text.replace(secret, "[redacted: api key]"), marker) == ("whole", [])
    assert (
        bench.verdict(item, text.replace(secret, "ghp_[redacted]"), marker)[0] == "whole"
    )  # the documented prefix
    kept_tail = text.replace(secret, "[redacted]" + secret[-4:])
    assert bench.verdict(item, kept_tail, marker) == ("partly", [secret[-4:]])
    pair = next(i for i in CREDENTIALS if i["provider"] == "aws" and len(_secrets(i)) == 2)
    one_left = pair["text"].replace(_secrets(pair)[1], "[redacted]")
    assert bench.verdict(pair, one_left, marker)[0] == "partly"
