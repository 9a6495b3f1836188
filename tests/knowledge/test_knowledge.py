"""Knowledge documents: import, review, visibility, search, reading, edits behind the tool's back."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import BODY, SPEC, STRINGS, kb, published, write_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Conflict, InvalidInput, NotAllowed, NotFound
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.knowledge.service import KnowledgeService
from aibuddy_cli.vault import Vault


def imported(service: KnowledgeService, *paths: Path, scope: str = "system") -> list[str]:
    outcomes = service.import_paths([str(p) for p in paths], scope=scope)
    assert all(o.status == "imported" for o in outcomes), outcomes
    return [o.doc for o in outcomes]


def test_import_stores_the_body_byte_for_byte_with_a_sidecar(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    (doc,) = imported(alice, STRINGS)
    assert doc == "system/ch08-02-strings"
    body = kvault.root / "knowledge/system/pending/ch08-02-strings.md"
    assert body.read_bytes() == STRINGS.read_bytes()
    sidecar = json.loads((kvault.root / "knowledge/system/pending/ch08-02-strings.meta.json").read_text())
    assert sidecar["title"] == "使用字符串储存 UTF-8 编码的文本"
    assert sidecar["scope"] == "system" and sidecar["owner"] == "alice" and sidecar["summary"] is None
    assert len(sidecar["sha256"]) == 64 and sidecar["imported_at"] and sidecar["outline"]
    again = alice.import_paths([str(STRINGS)], scope="system")
    assert again[0].status == "duplicate" and again[0].doc == doc
    assert len(list((kvault.root / "knowledge/system/pending").glob("*.md"))) == 1


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "a PDF"),
        (b"PK\x03\x04\x14\x00\x06\x00word/document.xml", "ZIP container"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG image"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG image"),
        (b"some text\x00\x01\x02 binary", "binary file"),
        ("Übergrößenträger".encode("latin-1"), "not UTF-8"),
    ],
    ids=["pdf", "docx", "png", "jpeg", "binary", "latin1"],
)
def test_other_formats_are_refused_by_content_not_by_name(
    kvault: Vault, tmp_path: Path, content: bytes, problem: str
) -> None:
    disguised = tmp_path / "notes.md"
    disguised.write_bytes(content)
    (outcome,) = kb(kvault, "alice").import_paths([str(disguised)])
    assert outcome.status == "failed" and problem in outcome.message and "convert" in outcome.message
    assert not list((kvault.root / "knowledge").rglob("*.md"))


def test_a_bulk_import_goes_on_after_a_failure_and_skips_escaping_symlinks(
    kvault: Vault, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(BODY, folder / "body.md")
    shutil.copy(STRINGS, folder / "sub" / "strings.md")
    (folder / "broken.md").write_bytes(b"%PDF-1.4 not really markdown")
    (folder / "image.png").write_bytes(b"\x89PNG")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret outside the folder\n")
    os.symlink(secret, folder / "link.md")
    outcomes = {
        Path(o.source).name: o for o in kb(kvault, "alice").import_paths([str(folder)], recursive=True)
    }
    assert outcomes["body.md"].status == "imported" and outcomes["strings.md"].status == "imported"
    assert outcomes["broken.md"].status == "failed"
    assert outcomes["image.png"].status == "skipped"
    assert outcomes["link.md"].status == "failed" and "outside" in outcomes["link.md"].message
    assert not any("Secret" in p.read_text() for p in (kvault.root / "knowledge").rglob("*.md"))
    assert kb(kvault, "alice").import_paths([str(folder)])[0].status == "failed"  # a folder needs --recursive


def test_same_file_names_get_distinct_ids(kvault: Vault, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.md").write_text(f"# Notes {name}\n")
    docs = imported(kb(kvault, "alice"), tmp_path / "a" / "notes.md", tmp_path / "b" / "notes.md")
    assert docs == ["system/notes", "system/notes-2"]


@pytest.mark.parametrize("spec", ["../x", "system/../../etc", "a/b/c/d", "personal/../x", "UPPER", "system/"])
def test_document_references_with_path_characters_are_refused(kvault: Vault, spec: str) -> None:
    with pytest.raises(InvalidInput):
        kb(kvault, "alice").resolve(spec)


def test_review_permissions(kvault: Vault) -> None:
    alice, bob = kb(kvault, "alice"), kb(kvault, "bob")
    (system_doc,) = imported(bob, BODY)  # anyone may propose a system document
    (bob_doc,) = imported(bob, STRINGS, scope="personal")
    assert bob_doc == "personal/bob/ch08-02-strings"
    with pytest.raises(NotAllowed, match="admin"):
        bob.publish(system_doc)
    with pytest.raises(NotFound):  # another user's personal document is missing to alice
        alice.publish(bob_doc)
    with pytest.raises(NotFound):
        alice.reject(bob_doc)
    assert [r.status for r in alice.publish(system_doc)] == ["ready"]
    assert [r.status for r in bob.publish("ch08-02-strings")] == ["ready"]
    with pytest.raises(Conflict):
        alice.publish(system_doc)
    with pytest.raises(Conflict):
        alice.reject(system_doc)


def test_reject_removes_only_the_pending_copy(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    docs = imported(alice, BODY, STRINGS)
    assert [r.qualified for r in alice.reject(*docs)] == docs
    assert not list((kvault.root / "knowledge").rglob("*.md"))
    assert BODY.exists() and STRINGS.exists()


def test_a_refused_bulk_publish_publishes_nothing(kvault: Vault) -> None:
    alice, bob = kb(kvault, "alice"), kb(kvault, "bob")
    (mine,) = imported(bob, BODY, scope="personal")
    (system,) = imported(bob, STRINGS)
    with pytest.raises(NotAllowed):
        bob.publish(mine, system)
    assert {d.ref.status for d in bob.documents()} == {"pending"}
    assert [r.qualified for r in alice.publish(system)] == [system]


def publish_all(service: KnowledgeService, docs: list[str]) -> None:
    service.publish(*docs)


def test_visibility_needs_ready_allowed_and_attached(kvault: Vault) -> None:
    alice, bob = kb(kvault, "alice"), kb(kvault, "bob")
    (system_ready,) = imported(alice, STRINGS)
    alice.publish(system_ready)
    (system_pending,) = imported(alice, SPEC)
    (alice_personal,) = imported(alice, BODY, scope="personal")
    alice.publish(alice_personal)
    bob_task = Session(kvault.root and Vault.open(kvault.root), "bob").tasks.new("learn")
    alice_task = Session(Vault.open(kvault.root), "alice").tasks.new("learn")
    Session(Vault.open(kvault.root), "alice").tasks.set_attached(
        alice_task.id, {system_ready: True, system_pending: True, alice_personal: True}
    )
    assert {d.ref.qualified for d in alice.allowed(alice_task.id)} == {system_ready, alice_personal}
    # bob's task has nothing attached: nothing is visible through it
    assert bob.allowed(bob_task.id) == []
    assert bob.search("字符串", task=bob_task.id) == []
    Session(Vault.open(kvault.root), "bob").tasks.set_attached(
        bob_task.id, {system_ready: True, alice_personal: True}
    )
    # attaching alice's personal document by name does not make it visible to bob
    assert {d.ref.qualified for d in bob.allowed(bob_task.id)} == {system_ready}
    with pytest.raises(NotFound):
        bob.read(alice_personal, "request-body", task=bob_task.id)
    with pytest.raises(NotFound):
        bob.show(alice_personal)
    # management view without a task: ready documents the person may see
    assert {d.ref.qualified for d in bob.allowed()} == {system_ready}
    assert {d.ref.qualified for d in alice.allowed()} == {system_ready, alice_personal}
    assert {d.ref.qualified for d in alice.allowed(status="pending")} == {system_pending}
    assert bob.allowed(status="pending") == []
    with pytest.raises(NotAllowed, match="pending"):
        alice.read(system_pending, "introduction")
    assert alice.read(system_pending, "introduction", status="pending").section.title == "Introduction"
    with pytest.raises(NotAllowed, match="not attached"):
        alice.read(
            system_ready, "更新字符串", task=Session(Vault.open(kvault.root), "alice").tasks.new("other").id
        )
    entries, unavailable = alice.map(alice_task.id)
    assert {e.ref.qualified for e in entries} == {system_ready, alice_personal}
    assert unavailable == [
        {
            "doc": system_pending,
            "reason": f"{system_pending} is pending review; it is not served until published",
        }
    ]


def test_search_ranks_sections_across_languages_and_phrases(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    publish_all(alice, imported(alice, STRINGS, BODY, SPEC))
    hits = alice.search("字符串 push_str", limit=5)
    assert hits[0].hit.anchor == "使用-push_str-和-push-追加字符串"
    assert len({(h.hit.ref, h.hit.anchor) for h in hits}) == len(hits)  # one hit per section
    first = to_json(hits[0])
    assert set(first) == {
        "doc",
        "title",
        "anchor",
        "section",
        "path",
        "lines",
        "snippet_line",
        "snippet",
        "score",
    }
    lines = STRINGS.read_text().splitlines()
    assert lines[first["snippet_line"] - 1].strip() == first["snippet"]
    assert first["lines"][0] <= first["snippet_line"] <= first["lines"][1]
    bigram = alice.search("拼接", limit=3)
    assert bigram and all("拼接" in h.hit.text for h in bigram)
    phrase = alice.search('"Request body + path parameters"', limit=10)
    assert [h.hit.anchor for h in phrase] == ["request-body-path-parameters"]
    # the words occur in order elsewhere, but not as written: no hit
    assert alice.search('"path parameters request body"') == []
    # nor inside a longer word
    assert alice.search('"Request body + path parameter"') == []
    english = alice.search("setext heading underline", limit=3)
    assert english and english[0].hit.ref.doc_id == "spec"
    with pytest.raises(InvalidInput):
        alice.search("the of and")


def test_read_pages_a_section_with_children_and_checked_cursors(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    (doc,) = imported(alice, STRINGS)
    alice.publish(doc)
    first = alice.read(doc, "字符串-slice", max_chars=120)
    assert first.next_cursor and first.section.start == 218
    pages, cursor = [first.text], first.next_cursor
    while cursor:
        more = alice.read(doc, "字符串-slice", cursor=cursor, max_chars=120)
        pages.append(more.text)
        cursor = more.next_cursor
    lines = STRINGS.read_text().splitlines(keepends=True)
    assert "".join(pages) == "".join(lines[first.section.start - 1 : first.section.end])
    parent = alice.read(doc, "更新字符串")
    assert [c.anchor for c in parent.children] == [
        "使用-push_str-和-push-追加字符串",
        "使用--运算符或-format-宏拼接字符串",
    ]
    with pytest.raises(InvalidInput, match="another section"):
        alice.read(doc, "更新字符串", cursor=first.next_cursor)
    with pytest.raises(InvalidInput):
        alice.read(doc, "字符串-slice", cursor="garbage")
    with pytest.raises(NotFound, match="closest: 更新字符串"):
        alice.read(doc, "更新字符")
    # a new version of the document invalidates old cursors
    path = kvault.root / "knowledge/system/ready/ch08-02-strings.md"
    path.write_text(path.read_text() + "\n## 新的一节\n")
    alice.publish(doc)
    with pytest.raises(InvalidInput, match="another version"):
        alice.read(doc, "字符串-slice", cursor=first.next_cursor, max_chars=120)


def test_an_edit_behind_the_tools_back_returns_the_document_to_pending(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    (doc,) = imported(alice, BODY)
    alice.publish(doc)
    ready = kvault.root / "knowledge/system/ready/body.md"
    sidecar = kvault.root / "knowledge/system/ready/body.meta.json"
    data = json.loads(sidecar.read_text())
    data["summary"], data["summary_sha256"] = "A summary.", data["sha256"]
    sidecar.write_text(json.dumps(data))
    alice = kb(kvault, "alice")
    assert alice.allowed()[0].summary == "A summary."
    ready.write_text(ready.read_text().replace("# Request Body", "# Request Bodies"))
    fresh = kb(kvault, "alice")
    assert fresh.allowed() == []
    assert any("returned to pending" in w for w in fresh.warnings)
    pending = kvault.root / "knowledge/system/pending"
    meta = json.loads((pending / "body.meta.json").read_text())
    assert meta["title"] == "Request Bodies" and meta["summary"] is None and meta["reviewed_by"] is None
    assert not ready.exists() and (pending / "body.md").exists()


def test_a_markdown_file_dropped_into_pending_gets_a_sidecar(kvault: Vault) -> None:
    pending = kvault.root / "knowledge/personal/alice/pending"
    pending.mkdir(parents=True)
    shutil.copy(BODY, pending / "dropped.md")
    alice = kb(kvault, "alice")
    assert [d.ref.qualified for d in alice.documents("pending")] == ["personal/alice/dropped"]
    assert json.loads((pending / "dropped.meta.json").read_text())["title"] == "Request Body"


def test_reingest_and_replace_body(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    source = tmp_path / "guide.md"
    source.write_text("# Guide\n\nfirst version\n")
    (doc,) = imported(alice, source)
    alice.publish(doc)
    assert alice.reingest(doc) == (alice.resolve(doc), False)  # unchanged source: stays ready
    source.write_text("# Guide\n\n## New part\n\nsecond version\n")
    ref, changed = alice.reingest(doc)
    assert changed and ref.status == "pending"
    assert [s.anchor for s in alice.show(doc)[1].outline] == ["guide", "new-part"]
    # The published version stays published, as it was, until the new one is published.
    ready = alice.resolve(doc, prefer="ready")
    assert ready.status == "ready" and [s.anchor for s in alice.outline(doc)[1].outline] == ["guide"]
    assert "first version" in alice.read(doc, "guide").text
    with pytest.raises(NotAllowed):  # bob sees the published guide, and may not change it
        kb(kvault, "bob").reingest(doc)
    alice.publish(doc)
    assert "second version" in alice.read(doc, "new-part").text and alice.resolve(doc).status == "ready"


def test_the_index_is_a_disposable_cache(kvault: Vault) -> None:
    alice = kb(kvault, "alice")
    publish_all(alice, imported(alice, STRINGS))
    shutil.rmtree(kvault.cache_dir)
    assert kb(kvault, "alice").search("字符串")[0].hit.ref.doc_id == "ch08-02-strings"


def test_search_finds_visible_hits_behind_many_better_invisible_ones(kvault: Vault, tmp_path: Path) -> None:
    bob, alice = kb(kvault, "bob"), kb(kvault, "alice")
    folder = tmp_path / "bob-notes"
    folder.mkdir()
    for i in range(70):
        (folder / f"note-{i}.md").write_text(f"# Zephyr note {i}\n\nzephyr zephyr zephyr {i}\n")
    bob.publish(*[o.doc for o in bob.import_paths([str(folder)], recursive=True)])
    (shared,) = imported(alice, BODY)
    alice.publish(shared)
    path = kvault.root / "knowledge/system/ready/body.md"
    path.write_text(path.read_text() + "\n## Wind\n\nA gentle zephyr.\n")
    alice.publish(shared)
    hits = alice.search("zephyr", limit=2)
    assert [(h.hit.ref.qualified, h.hit.anchor) for h in hits] == [(shared, "wind")]
    assert len(bob.search("zephyr", limit=100)) == 71


def test_odd_documents_import_search_and_read_without_a_crash(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "plain.txt").write_text("No headings here, just a note about quokkas.\n")
    (tmp_path / "long-heading.md").write_text("# " + "quokka " * 300 + "\n\ntext\n")
    block = "## Part\n\n" + "filler words for a big document " * 30 + "\n"
    (tmp_path / "big.md").write_text(
        "# Big\n\n" + block * (5 * 1024 * 1024 // len(block)) + "## End\n\nquokka\n"
    )
    docs = imported(alice, *(tmp_path / n for n in ("empty.md", "plain.txt", "long-heading.md", "big.md")))
    alice.publish(*docs)
    assert alice.show("empty")[1].outline == []
    plain = alice.read("plain", "_preamble")
    assert plain.text == "No headings here, just a note about quokkas.\n" and plain.next_cursor is None
    found = {h.hit.ref.doc_id for h in alice.search("quokka", limit=10)}
    assert found == {"plain", "long-heading", "big"}
    big = alice.read("big", "end")
    assert big.text == "## End\n\nquokka\n"
    with pytest.raises(NotFound):
        alice.read("empty", "anything")


# --- odd bodies, odd versions, odd files ---------------------------------------------------


def test_a_published_body_made_unreadable_is_withdrawn(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = published(alice, write_file(tmp_path, "zebra.md", "# Zebra\n\nzebrafish is safe\n"))
    tasks = Session(Vault.open(kvault.root), "alice").tasks
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
    (ref,) = published(alice, write_file(tmp_path, "ls.md", text))
    alpha = alice.read(ref, "alpha")
    assert alpha.text == f"# Alpha\nalpha one{separator}alpha two{separator}alpha three\n"
    assert alice.read(ref, "beta").text == "## Beta\nbeta body\n"
    assert alice.search('"alpha three"')[0].hit.anchor == "alpha"


def test_a_byte_order_mark_does_not_hide_the_first_heading(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = imported(alice, write_file(tmp_path, "bom.md", "\ufeff# Deploy Policy\n\n## Rollback\n"))
    meta = alice.show(ref)[1]
    assert meta.title == "Deploy Policy" and [s.anchor for s in meta.outline] == ["deploy-policy", "rollback"]
    assert (kvault.root / "knowledge/system/pending/bom.md").read_bytes().startswith(b"\xef\xbb\xbf")


def test_phrase_search_looks_past_many_near_misses_and_across_line_wraps(
    kvault: Vault, tmp_path: Path
) -> None:
    body = "# Tests\n\n" + "".join(f"## Case {i}\n\nthis runs tests quickly\n\n" for i in range(300))
    body += "## Target\n\nthe suite keeps running\ntests all night\n"
    alice = kb(kvault, "alice")
    published(alice, write_file(tmp_path, "many.md", body))
    hits = alice.search('"running tests"')
    assert [h.hit.anchor for h in hits] == ["target"]


def test_a_document_with_published_and_pending_versions(kvault: Vault, tmp_path: Path) -> None:
    alice = kb(kvault, "alice")
    (ref,) = published(alice, write_file(tmp_path, "guide.md", "# Guide\n\nversion one\n"))
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
    (outcome,) = kb(kvault, "alice").import_paths([str(write_file(tmp_path, "x.md", content))])
    assert (outcome.status == "imported") == imported


def test_a_fifo_in_an_imported_folder_is_skipped(kvault: Vault, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_file(folder, "real.md", "# Real\n")
    os.mkfifo(folder / "pipe.md")
    outcomes = {
        Path(o.source).name: o.status for o in kb(kvault, "alice").import_paths([str(folder)], recursive=True)
    }
    assert outcomes == {"real.md": "imported", "pipe.md": "skipped"}
