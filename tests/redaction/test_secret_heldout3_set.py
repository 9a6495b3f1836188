"""The third blind held-out secret set (bench/sets/secrets_heldout3) is well formed: ids unique,
every secret an exact substring of its text, the files what the seeded generator writes, the values
in their documented shapes (checksums included), and each credential one a redactor can get whole
under bench/secret_heldout3.py's measure. No detection rate is asserted here: the figures are the
bench's to report."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SET = REPO / "bench" / "sets" / "secrets_heldout3"
# Codes that open a door, an alarm, a lockbox, a card or a phone: short by nature (4 to 6 digits).
SHORT_CODES = {
    "door-code",
    "alarm-code",
    "lockbox-code",
    "bank-pin",
    "payment-pin",
    "phone-passcode",
    "garage-keypad",
}


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _rows(name: str) -> list[dict[str, Any]]:
    with (SET / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


CREDENTIALS = _rows("credentials.jsonl")
LOOKALIKES = _rows("lookalikes.jsonl")


def _secrets(item: dict[str, Any]) -> list[str]:
    secret = item["secret"]
    return list(secret) if isinstance(secret, list) else [secret]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _module(SET / "make_heldout3.py")


def test_the_set_has_its_size_and_spread() -> None:
    assert len(CREDENTIALS) >= 150
    assert len(LOOKALIKES) >= 200
    for rows in (CREDENTIALS, LOOKALIKES):
        langs = [row["lang"] for row in rows]
        assert set(langs) == {"en", "zh"}
        assert langs.count("zh") >= 30
    assert len({row["provider"] for row in CREDENTIALS}) >= 60
    assert len({row["format"] for row in CREDENTIALS}) >= 25
    assert len({row["category"] for row in LOOKALIKES}) >= 20


def test_ids_are_unique_and_fields_complete() -> None:
    ids = [row["id"] for row in CREDENTIALS + LOOKALIKES]
    assert len(ids) == len(set(ids))
    for row in CREDENTIALS:
        assert set(row) - {"fixed_prefix"} == {"id", "provider", "format", "lang", "text", "secret"}
        assert all(isinstance(row[key], str) and row[key] for key in ("id", "provider", "format", "text"))
        assert isinstance(row["secret"], str | list) and _secrets(row)
        assert isinstance(row.get("fixed_prefix", []), list)
    for row in LOOKALIKES:
        assert set(row) == {"id", "category", "lang", "text"}
        assert all(isinstance(value, str) and value for value in row.values())
    assert len({row["text"] for row in LOOKALIKES}) == len(LOOKALIKES)


def test_every_secret_is_an_exact_substring_of_its_text() -> None:
    for row in CREDENTIALS:
        for secret in _secrets(row):
            shortest = 4 if row["provider"] in SHORT_CODES else 8
            assert isinstance(secret, str) and len(secret) >= shortest, row["id"]
            assert secret in row["text"], row["id"]
        for prefix in row.get("fixed_prefix", []):
            assert any(s.startswith(prefix) and len(s) > len(prefix) for s in _secrets(row)), row["id"]


def test_no_secret_is_a_stand_in(generator: ModuleType) -> None:
    """Past its documented constant start, no value holds EXAMPLE, test, xxxx, 1234 or the like."""
    for row in CREDENTIALS:
        for secret in _secrets(row):
            kept = max((len(p) for p in row.get("fixed_prefix", []) if secret.startswith(p)), default=0)
            assert generator.plausible(secret[kept:]), (row["id"], secret)


def test_checksummed_values_carry_valid_checksums(generator: ModuleType) -> None:
    """GitHub and npm tokens end in the CRC32 of their body; recovery phrases hold BIP-39's checksum."""
    tokens = [
        s for row in CREDENTIALS for s in _secrets(row) if re.fullmatch(r"(ghp|npm)_[A-Za-z0-9]{36}", s)
    ]
    phrases = [s for row in CREDENTIALS if row["provider"] == "recovery-phrase" for s in _secrets(row)]
    assert len(tokens) >= 6 and len(phrases) >= 2
    for token in tokens:
        body = token.split("_", 1)[1]
        assert generator.base62(zlib.crc32(body[:30].encode())).rjust(6, "0") == body[30:], token
    index = {word: i for i, word in generator.BIP39.items()}
    for phrase in phrases:
        bits = "".join(f"{index[word]:011b}" for word in phrase.split())
        assert len(bits) == 132
        entropy = int(bits[:128], 2).to_bytes(16, "big")
        assert int(bits[128:], 2) == hashlib.sha256(entropy).digest()[0] >> 4, phrase


def test_no_lookalike_holds_a_secret_of_the_credentials() -> None:
    every = {s for row in CREDENTIALS for s in _secrets(row) if len(s) >= 8}
    for row in LOOKALIKES:
        assert not [s for s in every if s in row["text"]], row["id"]


def test_the_generator_writes_the_committed_files(generator: ModuleType, tmp_path: Path) -> None:
    generator.main([str(tmp_path)])
    for name in ("credentials.jsonl", "lookalikes.jsonl"):
        assert (tmp_path / name).read_bytes() == (SET / name).read_bytes(), name


@pytest.fixture(scope="module")
def measure_module() -> ModuleType:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        return _module(REPO / "bench" / "secret_heldout.py")
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_every_credential_can_be_whole_and_nothing_is_missed_by_accident(measure_module: ModuleType) -> None:
    """A redactor that replaces exactly the listed secrets gets every credential whole; one that changes
    nothing misses every one. So no secret's fragment hides in the rest of its text."""
    marker = re.compile(measure_module.MARKER, re.IGNORECASE)
    for row in CREDENTIALS:
        output = row["text"]
        for secret in sorted(_secrets(row), key=len, reverse=True):
            output = output.replace(secret, "[redacted: secret]")
        assert measure_module.verdict(row, output, marker) == ("whole", []), row["id"]
        assert measure_module.verdict(row, row["text"], marker)[0] == "missed", row["id"]


def test_the_bench_script_measures_this_set(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _module(REPO / "bench" / "secret_heldout3.py")
    assert bench.SET == SET
    assert bench.main(["--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"credentials: {len(CREDENTIALS)}, whole " in out
    assert f"look-alikes: {len(LOOKALIKES)}, touched " in out
    assert "== credentials not redacted whole ==" not in out
