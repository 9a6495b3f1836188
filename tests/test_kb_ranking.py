"""How `kb search` ranks sections: by what a section says (its front matter and link targets count
for little), with the headings above it, and with its document's evidence as a whole."""

from __future__ import annotations

from pathlib import Path

from aibuddy_cli.session import Session
from aibuddy_cli.vault import Vault

HANDBOOK = Path(__file__).resolve().parent.parent / "bench" / "sets" / "handbook.md"


def anchors(vault: Vault, query: str) -> list[str]:
    with Session(vault, "demo", environ={}) as session:
        return [found.hit.anchor for found in session.knowledge.search(query, limit=5)]


def publish(vault: Vault, *paths: Path) -> None:
    with Session(vault, "demo", environ={}) as session:
        knowledge = session.knowledge
        knowledge.publish(
            *(o.doc for o in knowledge.import_paths([str(p) for p in paths], scope="system") if o.doc)
        )


def test_front_matter_and_link_lists_count_for_little(vault: Vault) -> None:
    publish(vault, HANDBOOK)
    assert anchors(vault, "security laptops encryption")[0] == "laptops"
    assert "_preamble" not in anchors(vault, "on-call releases")[:2]
    # Still found, below the prose: a search for a link finds the list that holds it.
    assert anchors(vault, "runbooks.northwind.example")[0] == "resources"


def test_a_section_is_found_by_the_headings_above_it(vault: Vault, tmp_path: Path) -> None:
    doc = tmp_path / "payments.md"
    doc.write_text("# Payments\n\n## Failures\n\n### Retries\n\nWait a minute, then try twice more.\n\n"
                   "## Refunds\n\n### Retries\n\nRefunds are never retried automatically.\n\n"
                   "## Links\n\n- [Latency board](https://grafana.internal/d/latency)\n")  # fmt: skip
    publish(vault, doc)
    assert anchors(vault, "retries after failures")[0] == "retries"
    assert anchors(vault, "refunds retries")[0] == "retries-1"
    assert anchors(vault, "grafana") == ["links"]  # a word only a link target holds
