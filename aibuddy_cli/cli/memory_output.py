"""Plain-text renderings of memory results (standard library only, like `output`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from ..memory.index import Problem
from ..memory.records import MemoryRecord, MergeConflict
from ..memory.service import Manifest, RecallResult, RecordList
from . import output
from .output import one_line, warn
from .rendering import Render

if TYPE_CHECKING:
    from ..errors import AibuddyError
    from ..memory.extraction import Decision, ExtractionResult
    from ..memory.pending import Accepted, PendingList, Rejected
    from ..memory.review import Review
    from ..memory.service import Cleared, MemoryService, RecordDeleted, RecordWrite, Reverted
    from ..memory.transfer import Exported
    from ..memory.versions import RecordVersions
    from ..operations.memory import RecordShown


def report_problems(problems: Iterable[Problem], prefix: str, err: TextIO | None = None) -> None:
    for problem in problems:
        path = f"{prefix}/{problem.name}.md"
        if path in problem.message:  # it names the file itself: a merge conflict, a folder
            warn(f"{problem.message}; skipped", err)
        else:
            warn(f"skipped malformed record {prefix}/{one_line(problem.name)}.md: {problem.message}", err)


def show_conflict(conflict: MergeConflict, json_mode: bool) -> int:
    """`memory show` of a record git left with conflict markers: what resolving it needs, and the
    exit code. stdout gets the file's raw text (numbered at a terminal, so that the lines the
    message names are easy to find), or with --json one document: the error, the file, each
    conflict's lines and two sides (and the common base of a diff3 conflict), and the raw text.
    stderr gets the message."""
    if json_mode:
        output.emit_json({"error": conflict.to_json()})
    elif sys.stdout.isatty():
        lines = conflict.text.split("\n")
        if lines[-1] == "":
            lines.pop()
        width = len(str(len(lines)))
        numbered = (f"{n:>{width}} | {line.removesuffix(chr(13))}" for n, line in enumerate(lines, 1))
        output.emit_text("\n".join(numbered))
    else:
        output.emit_text(conflict.text)
    return output.report_error(conflict, False)


# --- plain text (stdout is not a terminal) ---------------------------------------------
# Fields that stand on one line go through `one_line`: a control character, newline or tab in a
# name or description is shown escaped and cannot forge a row or a column. Bodies keep their
# lines; `output.emit_text` escapes their other control characters.


TERMINAL_PAGE = 50  # `memory list` on a terminal: the newest 50 records (--all: every one)


def list_text(result: RecordList) -> str:
    """One tab-separated line a record: name, type, provenance, updated (with --expired: the
    expiry date), recalls, description."""

    def date(r: MemoryRecord) -> str:
        return (r.expires if result.only_expired else r.updated) or "-"

    rows = [
        "\t".join(
            one_line(field)
            for field in (r.name, r.type, r.provenance, date(r), r.recall_count, r.description)
        )
        for r in (item.record for item in result.records)
    ]
    return "\n".join(rows)


def _list_notes(result: RecordList, memory: MemoryService, err: TextIO | None) -> None:
    report_problems(result.problems, memory.prefix, err)
    if result.more:
        (err or sys.stderr).write(
            f"… {result.more:,} more record(s) not listed: --all lists every one, --limit N the newest N\n"
        )
    if result.expired_left_out:
        (err or sys.stderr).write(
            f"{result.expired_left_out} expired record(s) not listed (out of recall, kept): "
            "aibuddy memory list --expired\n"
        )


def manifest_text(manifest: Manifest) -> str:
    return "\n".join(one_line(line.render()) for line in manifest.lines)


def record_text(record: MemoryRecord, previous: int = 0) -> str:
    """previous: how many earlier versions the record's history keeps (a line when there are)."""

    def shown(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return "null" if value is None else one_line(value)

    header = "\n".join(f"{key}: {shown(value)}" for key, value in record.to_json(body=False).items())
    if previous:
        header += f"\nhistory: {previous} previous version(s): aibuddy memory history {one_line(record.name)}"
    return f"{header}\n\n{record.body}"


def recall_text(result: RecallResult) -> str:
    parts = [f"# recall ({result.method}): {len(result.records)} record(s)"]
    for record in result.records:
        heading = f"{one_line(record.name)} [{one_line(record.type)}] {one_line(record.description)}"
        parts.append(f"\n## {heading}\n\n{record.body.rstrip()}")
    return "\n".join(parts)


def decisions_text(decisions: Iterable[Decision]) -> str:
    """Extraction decisions, one tab-separated line each: step, outcome, record, detail."""
    rows = ((d.step, d.outcome, d.name or "-", d.detail) for d in decisions)
    return "\n".join("\t".join(one_line(field) for field in row) for row in rows)


def exported_text(exported: Exported) -> str:
    """`memory export`: the export itself on stdout, or where it went."""
    if exported.output == "-":
        return str(exported.text)
    return f"exported {len(exported.lines)} record(s) of {exported.user} to {exported.output}"


def _indented(body: str) -> list[str]:
    return [f"    {line}" for line in body.rstrip("\n").split("\n")]


def history_text(versions: RecordVersions) -> str:
    """`memory history`: one line a commit (date, commit, description) with the body the record
    had then indented (or a line saying it is the older version's, when only the header changed),
    then the versions automatic memory (or a revert) replaced, numbered as `memory revert --to N`
    takes them, each with its dates and its body indented."""
    if not versions.git:
        lines = [f"{versions.path}: not in a git repository"]
    else:
        lines = []
        commits = versions.commits
        for number, c in enumerate(commits):
            fields = (c["date"], c["commit"][:12], c["description"] or "(unreadable)")
            lines.append("\t".join(one_line(v) for v in fields))
            body = c.get("body")
            older = commits[number + 1] if number + 1 < len(commits) else None
            if not isinstance(body, str):
                continue
            if older is not None and older.get("body") == body:
                lines.append(f"    (the body of {older['commit'][:12]})")
            elif body.strip():
                lines += _indented(body)
        lines = lines or [f"{versions.path}: no commits yet"]
    for number, entry in enumerate(versions.replaced, 1):
        by = {"auto": "by automatic memory", "revert": "by a revert"}.get(str(entry.get("by")), "")
        written = entry.get("updated") or entry.get("created") or "-"
        lines.append(
            "\t".join(
                (
                    f"#{number}",
                    f"replaced {one_line(entry.get('replaced', '-'))}{' ' + by if by else ''}",
                    f"written {one_line(written)}",
                    one_line(entry.get("description", "")),
                )
            )
        )
        body = entry.get("body")
        if isinstance(body, str) and body.strip():
            lines += _indented(body)
    if versions.replaced:
        lines.append(f"(put one back: aibuddy memory revert {versions.path.rsplit('/', 1)[-1][:-3]} --to N)")
    return "\n".join(lines)


def review_text(review: Review) -> str:
    """`memory review`: what was applied (outcome, id, detail), then one line a proposal: id,
    kind, action, records (the one kept first), reason."""
    lines = ["\t".join(one_line(v) for v in (a.outcome, a.id, a.detail)) for a in review.applied]
    lines += [
        "\t".join(one_line(v) for v in (p.id, p.kind, p.action, ",".join(p.records), p.reason))
        for p in review.proposals
    ]
    return "\n".join(lines)


def _review_notes(review: Review, memory: MemoryService, err: TextIO | None) -> None:
    report_problems(review.problems, memory.prefix, err)
    if review.proposals and not review.applied:
        (err or sys.stderr).write(
            f"{len(review.proposals)} proposal(s), none applied; apply one with "
            "aibuddy memory review --apply ID (asks first; --yes without a terminal)\n"
        )


def reverted_text(result: Reverted) -> str:
    if not result.changed:
        return f"{result.path} unchanged: version {result.version} says what it says now"
    return (
        f"reverted {result.path} to version {result.version} (now manual: automatic memory leaves it alone)"
    )


def accepted_text(done: Accepted) -> str:
    if done.record is None:  # a contact
        return f"contact {(done.contact or {}).get('name', '')} written"
    verb = "created" if done.action == "create" else "updated"
    return f"{verb} {done.record.name} ({'yours: manual' if done.edited else 'automatic'})"


def pending_text(listed: PendingList) -> str:
    """One line a proposal: id, action, record, proposed, why; then its description and body."""
    if not listed.proposals:
        return "no change waits for you"
    lines = []
    for proposal in listed.proposals:
        fields = (proposal.id, proposal.action, proposal.name, proposal.proposed, proposal.reason)
        lines.append("\t".join(one_line(field) for field in fields))
        if proposal.values is not None:  # a contact: each column it sets
            lines += [f"    {column}: {one_line(str(value))}" for column, value in proposal.values.items()]
        else:
            lines += [f"    {one_line(proposal.description)}", *_indented(proposal.body)]
    return "\n".join(lines)


# --- one Render per memory operation (cli/commands.py and the fast path use them) ---------------


def _problems(result: Manifest | RecallResult, memory: MemoryService, err: TextIO | None) -> None:
    report_problems(result.problems, memory.prefix, err)


# Rich is imported only when a person at a terminal reads the answer.


def _show_record(shown: RecordShown) -> None:
    from . import memory_rich

    memory_rich.show_record(shown.record)


def _show_list(result: RecordList) -> None:
    from . import memory_rich

    memory_rich.show_list(result)


def _show_review(review: Review) -> None:
    from . import memory_rich

    memory_rich.show_review(review)


def _show_manifest(manifest: Manifest) -> None:
    from . import rich_output

    rich_output.show_manifest(manifest)


def _show_recall(result: RecallResult) -> None:
    from . import rich_output

    rich_output.show_recall(result)


def _show_conflict(error: AibuddyError, json_mode: bool) -> int | None:
    return show_conflict(error, json_mode) if isinstance(error, MergeConflict) else None


RENDERS: dict[str, Render[Any]] = {
    "memory save": Render["RecordWrite"](lambda r: f"saved {r.path}"),
    "memory update": Render["RecordWrite"](
        lambda r: f"updated {r.path}" if r.changed else f"{r.path} unchanged"
    ),
    "memory delete": Render["RecordDeleted"](lambda r: f"deleted {r.path}"),
    "memory show": Render["RecordShown"](
        lambda r: record_text(r.record, len(r.history)), rich=_show_record, failed=_show_conflict
    ),
    "memory history": Render["RecordVersions"](history_text),
    "memory list": Render["RecordList"](
        list_text, rich=_show_list, notes=_list_notes, terminal={"page": TERMINAL_PAGE}
    ),
    "memory revert": Render["Reverted"](reverted_text),
    "memory review": Render["Review"](review_text, rich=_show_review, notes=_review_notes),
    "memory manifest": Render["Manifest"](manifest_text, rich=_show_manifest, notes=_problems),
    "memory recall": Render["RecallResult"](recall_text, rich=_show_recall, notes=_problems),
    "memory export": Render["Exported"](exported_text),
    "memory clear": Render["Cleared"](lambda r: f"removed {len(r.removed)} record(s) of user {r.user}"),
    "memory extract": Render["ExtractionResult"](
        lambda r: decisions_text(r.decisions) + ("\n(dry run: nothing written)" if r.dry_run else "")
    ),
    "memory pending": Render["PendingList"](pending_text),
    "memory accept": Render["Accepted"](accepted_text),
    "memory reject": Render["Rejected"](lambda r: f"rejected {r.id} ({r.name} unchanged)"),
}
