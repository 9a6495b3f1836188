"""The conflict markers git leaves in a file it could not merge (`<<<<<<<`, `=======`,
`>>>>>>>`, and `|||||||` with merge.conflictStyle=diff3): found so that a record or a table that
still holds them is reported, with where they are, instead of read as content."""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class ConflictRegion(NamedTuple):
    """One `<<<<<<<` … `=======` … `>>>>>>>` region git left in a file; lines are 1-based."""

    start: int
    separator: int
    end: int | None  # None when the closing marker is missing (a half-resolved file)
    ours_label: str
    theirs_label: str
    ours: str
    theirs: str
    base: str | None  # the `|||||||` section of merge.conflictStyle=diff3, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": [self.start, self.end],
            "separator": self.separator,
            "ours": {"label": self.ours_label, "text": self.ours},
            "base": self.base,
            "theirs": {"label": self.theirs_label, "text": self.theirs},
        }


_CONFLICT_MARK = re.compile(r"(<{7}|\|{7}|={7}|>{7})(?:[ \t](.*))?")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def merge_conflicts(text: str) -> list[ConflictRegion]:
    """The merge-conflict regions git left in text, header or body (none for a clean file).

    A region opens with a `<<<<<<<` line and needs a `=======` line after it, which keeps a
    Markdown heading underlined with `=======` from counting; markers shown inside a fenced
    code block (a note about resolving conflicts) do not count either.
    """
    if "<<<<<<<" not in text:
        return []
    regions: list[ConflictRegion] = []
    fence = ""
    region: dict[str, Any] | None = None
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        mark = _CONFLICT_MARK.fullmatch(line)
        kind, label = (mark.group(1)[0], mark.group(2) or "") if mark else ("", "")
        if region is not None:
            if kind == "|" and region["part"] == "ours":
                region.update(part="base", base=[])
            elif kind == "=" and region["part"] in ("ours", "base"):
                region.update(part="theirs", separator=number, theirs_label="")
            elif kind == ">" and region["part"] == "theirs":
                region.update(end=number, theirs_label=label)
                regions.append(_region(region))
                region = None
            else:
                region[region["part"]].append(raw)
            continue
        if fence:
            stripped = line.strip(" ")
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            continue
        if kind == "<":
            region = {"start": number, "label": label, "part": "ours"}
            region.update(ours=[], theirs=[], base=None, separator=None, end=None)
        elif opening := _FENCE.match(line):
            fence = opening.group(1)
    if region is not None and region["separator"] is not None:
        regions.append(_region(region))  # the closing marker was deleted, the others were not
    return regions


def _region(found: dict[str, Any]) -> ConflictRegion:
    def joined(lines: list[str] | None) -> str | None:
        return None if lines is None else "".join(f"{line}\n" for line in lines)

    return ConflictRegion(
        start=found["start"],
        separator=found["separator"],
        end=found["end"],
        ours_label=found["label"],
        theirs_label=found.get("theirs_label", ""),
        ours=joined(found["ours"]) or "",
        theirs=joined(found["theirs"]) or "",
        base=joined(found["base"]),
    )


RESOLVE_CONFLICT = (
    "keep the lines you want, delete the <<<<<<<, ======= and >>>>>>> lines, then save the file "
    "(and `git add` it)"
)


def conflict_lines(conflicts: list[ConflictRegion]) -> str:
    """Where the conflicts are: "lines 3-7, 12-16" (an open end when a closing marker is gone)."""
    return "lines " + ", ".join(f"{c.start}-{c.end or ''}" for c in conflicts)
