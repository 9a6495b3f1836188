"""Knowledge documents at their edges: a BOM before front matter, `{#id}` inside a code span, a
heading holding " > ", importing the vault's own folder, a ready body edited beside a pending
version (each case a bug a review found)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kb, write_file

from aibuddy_cli.errors import AibuddyError, Conflict
from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.knowledge.outline import parse_outline
from aibuddy_cli.vault import Vault


def test_bom_does_not_hide_front_matter_from_the_outline() -> None:
    """A file saved with a BOM and YAML front matter: the front matter is no heading."""
    text = "\ufeff---\ntitle: x\n---\n# Real\ntext\n"
    without_bom = [(s.level, s.title) for s in parse_outline(text[1:], "doc")]
    with_bom = [(s.level, s.title) for s in parse_outline(text, "doc")]
    assert with_bom == without_bom == [(0, "doc"), (1, "Real")]


def test_explicit_anchor_syntax_inside_inline_code_is_heading_text() -> None:
    """`{#x}` written as inline code is part of the title, not an explicit anchor."""
    (section,) = parse_outline("# Use `{#id}`\n", "doc")
    assert section.title == "Use {#id}"
    assert section.anchor == "use-id"


def test_importing_the_vault_folder_does_not_import_the_vaults_own_files(
    kvault: Vault, tmp_path: Path
) -> None:
    bob = kb(kvault, "bob")
    private = write_file(tmp_path / "src", "bob-private.md", "# Bob's private notes\nsecret\n")
    assert bob.import_paths([str(private)], scope="personal")[0].status == "imported"
    write_file(kvault.root / "memory" / "alice", "pref.md", "---\nname: pref\n---\nlikes tea\n")
    outcomes = kb(kvault, "alice").import_paths([str(kvault.root)], scope="personal", recursive=True)
    imported = [o.source for o in outcomes if o.status == "imported"]
    assert imported == [], imported


def test_search_hit_path_is_the_read_path_for_a_heading_holding_a_greater_than_sign(
    kvault: Vault, tmp_path: Path
) -> None:
    alice = kb(kvault, "alice")
    doc = write_file(tmp_path, "cmp.md", "# Compare a > b\n\n## Rules\n\nzebraword here\n")
    (ref,) = [o.doc for o in alice.import_paths([str(doc)], scope="system")]
    alice.publish(ref)
    (hit,) = alice.search("zebraword")
    page = alice.read(ref, hit.hit.anchor)
    assert to_json(hit)["path"] == to_json(page)["path"] == ["Compare a > b", "Rules"]


def test_a_ready_body_edited_by_hand_beside_a_pending_version_is_not_served(
    kvault: Vault, tmp_path: Path
) -> None:
    """A ready body edited behind the tool's back beside a pending version is not served (outline
    and read refuse it, exit 5, saying why), never read as "changed, try again"."""
    alice = kb(kvault, "alice")
    src = write_file(tmp_path / "src", "guide.md", "# Guide\n\n## Install\n\nold text\n")
    (ref,) = [o.doc for o in alice.import_paths([str(src)], scope="system")]
    alice.publish(ref)
    write_file(kvault.root / "knowledge/system/pending", "guide.md", "# Guide\n\n## Install\n\nproposal\n")
    kb(kvault, "alice").refresh()  # the dropped proposal gets its sidecar
    edited = "# Guide\n\n## Install\n\nedited\n\n## New\n"
    (kvault.root / "knowledge/system/ready/guide.md").write_text(edited)
    alice = kb(kvault, "alice")
    with pytest.raises(AibuddyError):
        alice.outline(ref)  # served: ['guide', 'install'], the outline of the reviewed body
    with pytest.raises(AibuddyError) as read_error:
        alice.read(ref, "install")
    assert not isinstance(read_error.value, Conflict) or "try again" not in read_error.value.message
