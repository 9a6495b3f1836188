"""Regressions found by review: odd files, odd arguments and damaged caches never crash or corrupt."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from aibuddy_cli import fastpath
from aibuddy_cli.errors import InvalidInput, MalformedRecord
from aibuddy_cli.memory.records import _parse_flat_header, parse_record
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


def write(vault: Vault, name: str, text: str) -> Path:
    path = vault.root / "memory" / "demo" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize(
    "stamp", ["2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "٢٠٢٦-01-01T00:00:00Z"]
)
def test_impossible_dates_make_a_record_malformed_not_a_crash(
    memory: MemoryService, vault: Vault, stamp: str
) -> None:
    write(vault, "odd", f"---\nname: odd\ndescription: d\ntype: user\ncreated: {stamp}\n---\nbody\n")
    memory.save("fine", type="user", description="fine", body="")
    listed = memory.list()
    assert [r.record.name for r in listed.records] == ["fine"] and [p.name for p in listed.problems] == [
        "odd"
    ]
    with pytest.raises(MalformedRecord):
        memory.show("odd")


@pytest.mark.parametrize(
    "header",
    [
        "recallCount:\n  3\nlastRecalledAt: null\n",  # value on a continuation line
        "recallCount: 3\rowner: alice\nlastRecalledAt: null\n",  # an old Mac line break inside
        # a telemetry key inside a quoted value
        'description2: "two\nrecallCount: 9"\nrecallCount: 1\nlastRecalledAt: null\n',
    ],
)
def test_a_recall_never_corrupts_or_drops_part_of_a_header(
    memory: MemoryService, vault: Vault, header: str
) -> None:
    path = write(
        vault, "tea", f"---\nname: tea\ndescription: Drinks green tea\ntype: user\n{header}---\ntea body\n"
    )
    before = parse_record("tea", path.read_bytes().decode())
    assert [r.name for r in memory.recall("green tea").records] == ["tea"]
    after = parse_record("tea", path.read_bytes().decode())
    assert after.recall_count == before.recall_count + 1
    assert after.extra == before.extra and after.body == before.body


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\u2028", "\x85"])
def test_the_flat_parser_declines_line_breaks_yaml_does_not_know(separator: str) -> None:
    assert _parse_flat_header(f"name: x{separator}description: hello\ntype: user\n") is None
    assert _parse_flat_header("name: x\n\u3000\ntype: user\n") is None


def test_a_body_that_starts_with_its_own_frontmatter_is_refused(memory: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="frontmatter"):
        memory.save(
            "post", type="project", description="x", body="---\ntitle: T\ndescription: Q3\n---\n# Notes\n"
        )
    memory.save("post", type="project", description="x", body="Intro\n---\ntitle: T\n---\n")


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "recall", "x", "--limit", "²", "--json"],
        ["memory", "recall", "x", "-n=1", "--json"],
        ["kb", "read", "a", "b", "--max-chars", "٣"],
        ["kb", "search", "x", "--limit", "99999999999999999999"],
    ],
)
def test_the_fast_path_leaves_odd_numbers_to_typer(args: list[str]) -> None:
    assert fastpath.run(args, io.StringIO(), io.StringIO()) is None


def test_clear_goes_on_past_a_file_it_cannot_remove(
    memory: MemoryService, vault: Vault, tmp_path: Path
) -> None:
    for name in ("a", "b"):
        memory.save(name, type="user", description=name, body="")
    outside = tmp_path / "outside.md"
    outside.write_text("keep me")
    os.symlink(outside, vault.root / "memory" / "demo" / "link.md")
    removed, problems = memory.clear()
    assert removed == ["a", "b"] and len(problems) == 1 and "symlink" in problems[0]
    assert outside.read_text() == "keep me"


def test_os_errors_get_clean_exit_codes(cli, vault: Vault, tmp_path: Path) -> None:
    (vault.root / "memory" / "demo" / "x.md").mkdir(parents=True)
    shown = cli("memory", "show", "x", "--json")
    assert shown.exit_code == 6 and json.loads(shown.stdout)["error"]["code"] == "invalid_input"
    not_a_vault = tmp_path / "file"
    not_a_vault.write_text("")
    result = cli("--vault", str(not_a_vault), "memory", "list", "--json")
    assert result.exit_code == 3
    folder = cli("memory", "extract", "--transcript", str(tmp_path), "--json")
    assert folder.exit_code == 6


def test_a_damaged_index_is_rebuilt_wherever_the_damage_is(memory: MemoryService, vault: Vault) -> None:
    for i in range(60):
        memory.save(
            f"note-{i}", type="project", description=f"Note {i} about kubernetes", body="kubernetes " * 50
        )
    memory.recall("kubernetes")
    index = vault.memory_index_path("demo")
    fresh = MemoryService(vault, "demo", environ={})
    fresh.list()
    fresh._index.close()
    for page in (3, 5, 7, 8):
        with open(index, "r+b") as handle:
            handle.seek(page * 4096)
            handle.write(b"\xde\xad" * 1000)
    again = MemoryService(vault, "demo", environ={})
    assert len(again.recall("kubernetes").records) == 5
    assert len(again.list().records) == 60


def test_a_timestamp_far_in_the_future_does_not_break_the_index(memory: MemoryService, vault: Vault) -> None:
    memory.save("far", type="user", description="far", body="")
    os.utime(vault.root / "memory" / "demo" / "far.md", (300000000000, 300000000000))
    assert [r.record.name for r in memory.list().records] == ["far"]
    assert [r.record.name for r in MemoryService(vault, "demo", environ={}).list().records] == ["far"]


def test_a_folder_swapped_for_a_symlink_is_refused_even_in_a_long_running_process(
    memory: MemoryService, vault: Vault, tmp_path: Path
) -> None:
    memory.save("first", type="user", description="first", body="")
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = vault.root / "memory" / "demo"
    folder.rename(tmp_path / "moved")
    os.symlink(outside, folder)
    with pytest.raises(InvalidInput, match="symlink"):
        memory.save("second", type="user", description="second", body="")
    assert list(outside.iterdir()) == []


def test_init_ignores_the_cache_and_interrupted_writes(vault: Vault) -> None:
    lines = (vault.root / ".gitignore").read_text().split()
    assert ".aibuddy/" in lines and ".aibuddy-tmp-*" in lines
