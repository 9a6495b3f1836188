"""Names of documents and sections in any script, and clear import messages: ids keep the letters
of non-ASCII file names (the same under NFC and NFD), anchors match after Unicode normalisation,
and a FIFO or a device given to import is refused as "not a regular file" without blocking."""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from pathlib import Path

import pytest
from helpers import child_env, ok, run_aibuddy
from helpers import write_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.knowledge.documents import doc_id_from_name, validate_doc_id
from aibuddy_cli.vault import Vault


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def imported(cli, *paths: Path, scope: str = "system", user: str = "demo") -> list[str]:
    report = ok(cli("--user", user, "kb", "import", *map(str, paths), "--scope", scope, "--json"))
    assert [f["status"] for f in report["files"]] == ["imported"] * len(paths), report
    return [f["doc"] for f in report["files"]]


# --- document ids from file names ---------------------------------------------------------


def test_non_ascii_file_names_keep_their_letters(cli, tmp_path: Path) -> None:
    docs = imported(
        cli,
        write(tmp_path, nfc("café.md"), "# Café\n\ncoffee\n"),
        write(tmp_path, nfc("Résumé-2024.md"), "# CV\n\njobs\n"),
        write(tmp_path, "周报模板.md", "# 周报\n\n本周\n"),
        write(tmp_path, "हिन्दी नोट्स.md", "# नोट्स\n\nहिन्दी\n"),
    )
    assert docs == [nfc("system/café"), nfc("system/résumé-2024"), "system/周报模板", "system/हिन्दी-नोट्स"]


def test_nfc_and_nfd_file_names_give_the_same_id(cli, vault: Vault, tmp_path: Path) -> None:
    (alice,) = imported(
        cli, write(tmp_path / "a", nfc("Café.md"), "# A\n\none\n"), scope="personal", user="alice"
    )
    (bob,) = imported(
        cli, write(tmp_path / "b", nfd("Café.md"), "# B\n\ntwo\n"), scope="personal", user="bob"
    )
    assert alice == nfc("personal/alice/café") and bob == nfc("personal/bob/café")
    stored = [p.name for p in (vault.root / "knowledge/personal/bob/pending").iterdir()]
    assert sorted(stored) == sorted([nfc("café.md"), nfc("café.meta.json")])
    # The same file name in both forms in one folder is one id, then its numbered sibling.
    both = imported(
        cli, write(tmp_path / "c", nfc("é.md"), "# C\n\nc\n"), write(tmp_path / "d", nfd("é.md"), "# D\n")
    )
    assert both == [nfc("system/é"), nfc("system/é-2")]


def test_long_names_fit_in_characters_and_in_bytes(cli, vault: Vault, tmp_path: Path) -> None:
    cjk, wide = "周" * 84, "\U00020000" * 62  # 255 and 251 bytes with ".md"
    docs = imported(
        cli,
        write(tmp_path / "a", f"{cjk}.md", "# one\n"),
        write(tmp_path / "b", f"{cjk}.md", "# two\n"),
        write(tmp_path / "c", f"{wide}.md", "# three\n"),
    )
    assert docs == [f"system/{'周' * 80}", f"system/{'周' * 78}-2", f"system/{chr(0x20000) * 60}"]
    for path in (vault.root / "knowledge/system/pending").iterdir():
        assert len(path.name.encode("utf-8")) <= 255


@pytest.mark.parametrize(
    "stem, expected",
    [
        ("ch08-02-strings", "ch08-02-strings"),
        ("My_Notes v2", "my-notes-v2"),  # ASCII names keep the ids they always had
        (".hidden", "hidden"),
        ("ภาษาไทย", "ภาษาไทย"),
        ("a\u202eb", "a-b"),  # a bidi override is not a letter
    ],
)
def test_ids_from_names(stem: str, expected: str) -> None:
    assert doc_id_from_name(stem, b"x") == expected
    assert doc_id_from_name(nfd(stem), b"x") == expected


@pytest.mark.parametrize("stem", ["🎉", "..", "---", "\u0301"])
def test_a_name_without_letters_or_digits_gets_an_id_from_the_content(stem: str) -> None:
    assert doc_id_from_name(stem, b"x").startswith("doc-")


@pytest.mark.parametrize(
    "doc_id",
    [
        "..",
        ".café",
        "-café",
        "café/x",
        "caf\x1bé",
        "caf\x07é",
        "café\n",
        "caf é",
        "Café",
        nfd("café"),
        "é" * 81,
        "\U00020000" * 61,
        "",
    ],
)
def test_the_validator_refuses_what_could_not_be_a_safe_name(doc_id: str) -> None:
    with pytest.raises(InvalidInput):
        validate_doc_id(doc_id)


@pytest.mark.parametrize("doc_id", ["café", "résumé-2024", "周报模板", "हिन्दी-नोट्स", "é" * 80, "x_1"])
def test_the_validator_accepts_ids_in_any_script(doc_id: str) -> None:
    assert validate_doc_id(nfc(doc_id)) == nfc(doc_id)


@pytest.mark.process
def test_a_unicode_document_works_everywhere_a_document_is_named(
    cli, vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    (doc,) = imported(
        cli, write(tmp_path, "周报模板.md", "# 周报模板\n\n## 格式\n\n本周完成的工作，最多五条。\n")
    )
    ok(cli("kb", "publish", doc, "--json"))
    task = ok(cli("task", "new", "写周报", "--json"))["id"]
    assert ok(cli("task", "attach", task, "周报模板", "--json"))["attached"] == [doc]
    assert ok(cli("kb", "show", doc, "--json"))["title"] == "周报模板"
    assert ok(cli("kb", "map", "--task", task, "--json"))["documents"][0]["doc"] == doc
    hit = ok(cli("kb", "search", "本周", "--task", task, "--json"))["hits"][0]
    assert (hit["doc"], hit["anchor"]) == (doc, "格式")
    citation = f"{hit['doc']}#{hit['anchor']}"
    assert "最多五条" in ok(cli("kb", "read", citation, "--task", task, "--json"))["text"]
    # The same through real processes: the fast path (search, read) and the Typer app (show).
    env = child_env(vault.root)
    for args in (("kb", "read", citation, "--json"), ("kb", "read", "周报模板", "格式", "--json")):
        result = run_aibuddy(aibuddy_exe, *args, env=env)
        assert result.returncode == 0, result.stderr
        assert "最多五条" in json.loads(result.stdout)["text"]
    result = run_aibuddy(aibuddy_exe, "kb", "search", "本周", "--json", env=env)
    assert json.loads(result.stdout)["hits"][0]["doc"] == doc
    accented = imported(cli, write(tmp_path, nfc("café.md"), "# Café\n\ncoffee\n"))[0]
    ok(cli("kb", "publish", accented, "--json"))
    for typed in (nfc("café"), nfd("café"), nfd("system/café")):  # typed, or pasted from a file name
        assert ok(cli("kb", "show", typed, "--json"))["doc"] == nfc("system/café")
    result = run_aibuddy(aibuddy_exe, "kb", "read", nfd("café#café"), "--json", env=env)
    assert result.returncode == 0, result.stderr
    sidecar = json.loads((vault.root / "knowledge/system/ready" / nfc("café.meta.json")).read_text("utf-8"))
    assert sidecar["title"] == "Café"


# --- anchors ------------------------------------------------------------------------------


GUIDE = (
    "# Café\n\nabout coffee\n\n## Install\n\n" + "step\n" * 40 + "\n## " + nfd("Résumé") + "\n\nCV\n\n"
    "## A { #Setup }\n\nfirst\n\n## B { #setup }\n\nsecond\n"
)


@pytest.fixture
def guide(cli, tmp_path: Path) -> str:
    (doc,) = imported(cli, write(tmp_path, "guide.md", GUIDE))
    ok(cli("kb", "publish", doc, "--json"))
    return doc


@pytest.mark.parametrize(
    "typed, anchor",
    [
        ("CAFÉ", "café"),
        (nfd("café"), "café"),
        (nfd("CAFÉ"), "café"),
        ("Install", "install"),
        (nfc("résumé"), nfd("résumé")),  # the heading was typed decomposed
        ("setup", "setup"),  # an exact match wins over the normalised one
        ("Setup", "Setup"),
    ],
)
def test_kb_read_matches_anchors_after_unicode_normalisation(
    cli, guide: str, typed: str, anchor: str
) -> None:
    page = ok(cli("kb", "read", guide, typed, "--json"))
    assert page["anchor"] == anchor
    assert ok(cli("kb", "read", f"{guide}#{typed}", "--json"))["anchor"] == anchor


def test_a_cursor_continues_whatever_spelling_named_the_section(cli, guide: str) -> None:
    first = ok(cli("kb", "read", guide, "Install", "--max-chars", "50", "--json"))
    assert first["next_cursor"]
    for typed in ("install", "INSTALL"):
        more = ok(
            cli("kb", "read", guide, typed, "--cursor", first["next_cursor"], "--max-chars", "50", "--json")
        )
        assert more["offset"] == len(first["text"])


def test_anchors_equal_once_normalised_are_a_conflict_to_choose_from(cli, guide: str) -> None:
    result = cli("kb", "read", guide, "SETUP", "--json")
    assert result.exit_code == 4
    message = json.loads(result.stdout)["error"]["message"]
    assert "Setup" in message and "setup" in message


@pytest.mark.process
def test_the_fast_path_matches_normalised_anchors_too(
    vault: Vault, guide: str, aibuddy_exe: list[str]
) -> None:
    env = child_env(vault.root)
    for args in (("kb", "read", guide, "CAFÉ", "--json"), ("kb", "read", nfd(f"{guide}#Café"))):
        result = run_aibuddy(aibuddy_exe, *args, env=env)
        assert result.returncode == 0, result.stderr
        assert b"about coffee" in result.stdout
    assert run_aibuddy(aibuddy_exe, "kb", "read", guide, "SETUP", "--json", env=env).returncode == 4


def test_an_unknown_anchor_still_suggests_the_closest(cli, guide: str) -> None:
    result = cli("kb", "read", guide, "instal", "--json")
    assert result.exit_code == 3 and "install" in json.loads(result.stdout)["error"]["message"]


# --- what import is given -----------------------------------------------------------------


def run(exe: list[str], vault: Vault, *args: str) -> subprocess.CompletedProcess[bytes]:
    # A short timeout: reading a FIFO nobody writes to would wait forever.
    return subprocess.run(
        [*exe, *args], env=child_env(vault.root), capture_output=True, timeout=120, stdin=subprocess.DEVNULL
    )


@pytest.mark.process
def test_a_fifo_given_to_import_is_not_a_regular_file_and_never_blocks(
    vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    fifo = tmp_path / "p.md"
    os.mkfifo(fifo)
    result = run(aibuddy_exe, vault, "kb", "import", str(fifo))
    assert result.returncode == 6
    assert b"not a regular file" in result.stdout + result.stderr and b"no such file" not in result.stdout
    report = json.loads(run(aibuddy_exe, vault, "kb", "import", str(fifo), "--json").stdout)
    assert "not a regular file" in report["files"][0]["message"]


@pytest.mark.process
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_given_to_import_is_not_a_regular_file(vault: Vault, aibuddy_exe: list[str]) -> None:
    result = run(aibuddy_exe, vault, "kb", "import", "/dev/zero", "--json")
    assert result.returncode == 6
    assert "not a regular file" in json.loads(result.stdout)["files"][0]["message"]


@pytest.mark.process
def test_reingest_from_a_fifo_is_refused_without_blocking(
    cli, vault: Vault, tmp_path: Path, aibuddy_exe: list[str]
) -> None:
    (doc,) = imported(cli, write(tmp_path, "guide.md", "# Guide\n\nv1\n"))
    fifo = tmp_path / "p.md"
    os.mkfifo(fifo)
    result = run(aibuddy_exe, vault, "kb", "reingest", doc, str(fifo), "--json")
    assert result.returncode == 6
    assert "not a regular file" in json.loads(result.stdout)["error"]["message"]
    service = Session(vault, "demo", environ={}).knowledge
    assert service.show(doc)[1].title == "Guide"
