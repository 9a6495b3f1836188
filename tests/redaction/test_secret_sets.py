"""The measurement sets of the secret redactor (bench/sets/secrets/) are well formed, and the
bench's measure counts what it says. The redactor's own figures belong to `make bench`
(bench/secret_rates.py), not to a test: nothing here asserts a detection rate."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SETS = BENCH / "sets" / "secrets"
FORMATS = {"prose", "json", "env", "url", "header", "yaml", "cli", "code", "log"}


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rates_module() -> ModuleType:
    return _module("secret_rates", BENCH / "secret_rates.py")


def _rows(name: str) -> list[dict[str, object]]:
    lines = (SETS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _secrets(row: dict[str, object]) -> list[str]:
    secret = row["secret"]
    return [str(s) for s in secret] if isinstance(secret, list) else [str(secret)]


def test_every_credential_names_its_provider_format_language_and_secret() -> None:
    rows = _rows("credentials.jsonl")
    assert len(rows) >= 200
    for row in rows:
        assert set(row) == {"id", "provider", "format", "lang", "text", "secret"}, row["id"]
        assert row["format"] in FORMATS, row["id"]
        assert row["lang"] in {"en", "zh"}, row["id"]
        secrets = _secrets(row)
        assert secrets, row["id"]
        for secret in secrets:
            assert isinstance(secret, str) and len(secret) >= 8, row["id"]
            assert secret in str(row["text"]), f"{row['id']}: its secret is not in its text"
    assert len({row["provider"] for row in rows}) >= 40
    assert {row["lang"] for row in rows} == {"en", "zh"}
    assert {row["format"] for row in rows} == FORMATS


def test_every_look_alike_names_its_category_and_language() -> None:
    rows = _rows("lookalikes.jsonl")
    assert len(rows) >= 200
    for row in rows:
        assert set(row) == {"id", "category", "lang", "text"}, row["id"]
        assert row["lang"] in {"en", "zh"}, row["id"]
        assert str(row["text"]).strip(), row["id"]
    assert {row["lang"] for row in rows} == {"en", "zh"}


def test_ids_are_unique_across_both_sets() -> None:
    ids = [row["id"] for name in ("credentials.jsonl", "lookalikes.jsonl") for row in _rows(name)]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_no_look_alike_holds_a_credential_of_the_other_set() -> None:
    secrets = [s for row in _rows("credentials.jsonl") for s in _secrets(row)]
    for row in _rows("lookalikes.jsonl"):
        assert not [s for s in secrets if s in str(row["text"])], row["id"]


def test_the_committed_sets_are_what_the_seeded_script_makes() -> None:
    make = _module("make_secret_sets", SETS / "make_sets.py")
    make.build_credentials()
    make.build_lookalikes()
    assert make.CREDS == _rows("credentials.jsonl")
    assert make.LOOKS == _rows("lookalikes.jsonl")


def _credential(rates_module: ModuleType, text: str, *secrets: str) -> object:
    return rates_module.Credential("c-01", "test", "prose", "en", text, secrets)


def test_a_secret_is_whole_only_when_no_four_character_piece_of_it_is_left(rates_module: ModuleType) -> None:
    cred = _credential(rates_module, "the password is Qx7&mLp29Rz, thanks", "Qx7&mLp29Rz")
    assert rates_module.verdict(cred, "the password is [gone], thanks") == "whole"
    assert rates_module.verdict(cred, "the password is [gone]&mLp29Rz, thanks") == "partly"
    # two characters left are not a piece
    assert rates_module.verdict(cred, "the password is [gone]Rz, thanks") == "whole"
    assert rates_module.verdict(cred, "the password is [!] Qx7&mLp29Rz, thanks") == "missed"


def test_a_piece_the_text_holds_elsewhere_or_a_public_prefix_is_not_a_leak(rates_module: ModuleType) -> None:
    cred = _credential(rates_module, "release 2024: db password Winter2024", "Winter2024")
    assert rates_module.verdict(cred, "release 2024: db password [gone]") == "whole"
    token = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    cred = _credential(rates_module, f"GITHUB_TOKEN={token}", token)
    assert rates_module.verdict(cred, "GITHUB_TOKEN=ghp_[gone]") == "whole"
    assert rates_module.verdict(cred, "GITHUB_TOKEN=ghp_aB3d[gone]") == "partly"


def test_a_text_with_two_secrets_is_whole_only_when_both_are(rates_module: ModuleType) -> None:
    key_id, secret = "AKIAQWERTYUIOPASDFGH", "Zx9/Lm2+Qp7Rt4Vw1Yb6Nc3Hd8Jf5Kg0Pa2Ss4Tu"
    cred = _credential(rates_module, f"{key_id} {secret}", key_id, secret)
    assert rates_module.verdict(cred, "[id] [key]") == "whole"
    assert rates_module.verdict(cred, f"[id] {secret}") == "partly"
    assert rates_module.verdict(cred, f"{key_id} {secret}") == "missed"


def test_rates_counts_an_identity_detector_as_missing_everything_and_touching_nothing(
    rates_module: ModuleType,
) -> None:
    report = rates_module.rates(lambda text: text)
    creds, looks = report["credentials"], report["lookalikes"]
    assert creds["missed"] == creds["n"] >= 200
    assert looks["touched"] == 0
    assert sum(cell["n"] for cell in creds["by_provider"].values()) == creds["n"]


def test_rates_counts_a_detector_that_removes_exactly_the_secrets_as_whole(rates_module: ModuleType) -> None:
    known = {c.text: c.secrets for c in rates_module.load_credentials()}

    def perfect(text: str) -> tuple[str, dict[str, int]]:
        for secret in sorted(known.get(text, ()), key=len, reverse=True):
            text = text.replace(secret, "[x]")
        return text, {}

    report = rates_module.rates(perfect)
    assert report["credentials"]["whole"] == report["credentials"]["n"]
    assert report["not_whole"] == [] and report["touched"] == []
