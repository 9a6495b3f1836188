"""Knowledge regressions found by review: visibility leaks, odd bodies, odd versions, odd input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aibuddy_cli.errors import InvalidInput, NotFound
from aibuddy_cli.knowledge.service import KnowledgeService
from aibuddy_cli.tasks.service import TaskService
from aibuddy_cli.vault import Vault, init_vault


@pytest.fixture
def kvault(tmp_path: Path) -> Vault:
    return init_vault(tmp_path / "kvault", "alice")


def kb(vault: Vault, user: str) -> KnowledgeService:
    return KnowledgeService(Vault.open(vault.root), user, environ={})


def doc(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_refresh_warnings_never_name_other_users_documents(kvault: Vault) -> None:
    secret = kvault.root / "knowledge/personal/alice/pending/acme-merger-plan.md"
    secret.parent.mkdir(parents=True)
    secret.write_text("# Merger\n")
    bob = kb(kvault, "bob")
    bob.documents()
    assert not any("acme" in w for w in bob.warnings)
    alice = kb(kvault, "alice")
    alice.documents()  # already reconciled by bob's refresh: nothing new to say, and no leak
    assert [d.ref.qualified for d in alice.documents("pending")] == ["personal/alice/acme-merger-plan"]


def test_pending_system_documents_are_seen_by_reviewers_and_their_proposer_only(
    kvault: Vault, tmp_path: Path
) -> None:
    carol = kb(kvault, "carol")
    (proposal,) = [
        o.doc
        for o in carol.import_paths([str(doc(tmp_path, "plan.md", "# Plan\n\nsecret\n"))], scope="system")
    ]
    assert carol.show(proposal)[1].title == "Plan"
    assert kb(kvault, "alice").body(proposal)[1] == b"# Plan\n\nsecret\n"
    bob = kb(kvault, "bob")
    for action in (lambda: bob.show(proposal), lambda: bob.body(proposal)):
        with pytest.raises(NotFound, match="no document"):
            action()


def test_a_published_body_made_unreadable_is_withdrawn(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = [
        o.doc
        for o in alice.import_paths(
            [str(doc(tmp_path, "zebra.md", "# Zebra\n\nzebrafish is safe\n"))], scope="system"
        )
    ]
    alice.publish(ref)
    tasks = TaskService(Vault.open(kvault.root), "alice")
    task = tasks.new("t")
    tasks.set_attached(task.id, {ref: True})
    assert alice.search("zebrafish", task=task.id)
    (kvault.root / "knowledge/system/ready/zebra.md").write_bytes(b"# Zebra\n\nzebrafish is caf\xe9\n")
    fresh = kb(kvault, "alice")
    assert fresh.search("zebrafish", task=task.id) == []
    assert any("not UTF-8" in w for w in fresh.warnings) and any(
        "returned to pending" in w for w in fresh.warnings
    )
    assert (kvault.root / "knowledge/system/pending/zebra.md").exists()
    assert fresh.map(task.id)[0] == []


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x85", "\x0b"])
def test_unusual_line_separators_do_not_shift_sections(kvault: Vault, tmp_path: Path, separator: str) -> None:
    text = f"# Alpha\nalpha one{separator}alpha two{separator}alpha three\n## Beta\nbeta body\n"
    alice = kb(kvault, "alice")
    (ref,) = [o.doc for o in alice.import_paths([str(doc(tmp_path, "ls.md", text))], scope="system")]
    alice.publish(ref)
    alpha = alice.read(ref, "alpha")
    assert alpha.text == f"# Alpha\nalpha one{separator}alpha two{separator}alpha three\n"
    assert alice.read(ref, "beta").text == "## Beta\nbeta body\n"
    assert alice.search('"alpha three"')[0].hit.anchor == "alpha"


def test_a_byte_order_mark_does_not_hide_the_first_heading(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = [
        o.doc
        for o in alice.import_paths(
            [str(doc(tmp_path, "bom.md", "\ufeff# Deploy Policy\n\n## Rollback\n"))], scope="system"
        )
    ]
    meta = alice.show(ref)[1]
    assert meta.title == "Deploy Policy" and [s.anchor for s in meta.outline] == ["deploy-policy", "rollback"]
    assert (kvault.root / "knowledge/system/pending/bom.md").read_bytes().startswith(b"\xef\xbb\xbf")


def test_phrase_search_looks_past_many_near_misses_and_across_line_wraps(
    kvault: Vault, tmp_path: Path
) -> None:
    body = "# Tests\n\n" + "".join(f"## Case {i}\n\nthis runs tests quickly\n\n" for i in range(300))
    body += "## Target\n\nthe suite keeps running\ntests all night\n"
    alice = kb(kvault, "alice")
    (ref,) = [o.doc for o in alice.import_paths([str(doc(tmp_path, "many.md", body))], scope="system")]
    alice.publish(ref)
    hits = alice.search('"running tests"')
    assert [h.hit.anchor for h in hits] == ["target"]


def test_a_document_with_published_and_pending_versions(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = [
        o.doc
        for o in alice.import_paths(
            [str(doc(tmp_path, "guide.md", "# Guide\n\nversion one\n"))], scope="system"
        )
    ]
    alice.publish(ref)
    (kvault.root / "knowledge/system/pending/guide.md").write_text("# Guide\n\nversion two\n")
    assert alice.read(ref, "guide").text == "# Guide\n\nversion one\n"
    assert {(d.ref.status, d.ref.qualified) for d in alice.documents()} == {("ready", ref), ("pending", ref)}
    assert [r.status for r in alice.publish(ref, ref)] == ["ready"]
    assert alice.read(ref, "guide").text == "# Guide\n\nversion two\n"
    assert [d.ref.status for d in alice.documents()] == ["ready"]


@pytest.mark.parametrize(
    "content, imported",
    [
        (b"# About PDF\n\nA PDF starts with %PDF-1.7 and a binary comment.\n", True),
        (b"# GIF\n\nGIF89a is the animated format.\n", True),
        (b"# Text\n\n" + b"x" * 9000 + b"\x00tail\n", False),
    ],
)
def test_the_content_check_judges_the_whole_file(
    kvault: Vault, tmp_path: Path, content: bytes, imported: bool
) -> None:
    (outcome,) = kb(kvault, "alice").import_paths([str(doc(tmp_path, "x.md", content))])
    assert (outcome.status == "imported") == imported


def test_a_fifo_in_an_imported_folder_is_skipped(kvault: Vault, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    doc(folder, "real.md", "# Real\n")
    os.mkfifo(folder / "pipe.md")
    outcomes = {
        Path(o.source).name: o.status for o in kb(kvault, "alice").import_paths([str(folder)], recursive=True)
    }
    assert outcomes == {"real.md": "imported", "pipe.md": "skipped"}


def test_odd_numbers_are_refused_cleanly(cli, vault: Vault, tmp_path: Path) -> None:
    service = KnowledgeService(vault, "demo", environ={})
    service.publish(
        *[
            o.doc
            for o in service.import_paths(
                [str(doc(tmp_path, "box.md", "# Box\n\nbox text\n"))], scope="system"
            )
        ]
    )
    assert cli("kb", "read", "box", "box", "--cursor", "abcdef123456.00000000.²", "--json").exit_code == 6
    assert cli("kb", "read", "box", "box", "--cursor", "a.b." + "9" * 5000, "--json").exit_code == 6
    assert cli("kb", "search", "box", "--limit", "99999999999999999999", "--json").exit_code == 2
    with pytest.raises(InvalidInput):
        service.search("box", limit=10**9)
    assert cli("kb", "reingest", "box", str(tmp_path), "--json").exit_code == 6


def test_what_a_failing_command_noticed_is_still_reported(vault: Vault, tmp_path: Path) -> None:
    import io

    from typer.testing import CliRunner

    from aibuddy_cli import fastpath
    from aibuddy_cli.cli.app import app

    service = KnowledgeService(vault, "demo", environ={})
    for name in ("fast", "slow"):
        (ref,) = [
            o.doc
            for o in service.import_paths([str(doc(tmp_path, f"{name}.md", f"# {name}\n"))], scope="system")
        ]
        service.publish(ref)

    def tamper(name: str) -> None:
        (vault.root / f"knowledge/system/ready/{name}.md").write_text(
            f"# {name}\n\nchanged behind the tool's back\n"
        )

    tamper("fast")
    out, err = io.StringIO(), io.StringIO()
    assert fastpath.run(["--vault", str(vault.root), "kb", "read", "fast", "fast", "--json"], out, err) == 5
    tamper("slow")
    typer_run = CliRunner().invoke(app, ["--vault", str(vault.root), "kb", "read", "slow", "slow", "--json"])
    assert typer_run.exit_code == 5
    for stderr in (err.getvalue(), typer_run.stderr):
        assert "returned to pending" in stderr and "pending review" in stderr
