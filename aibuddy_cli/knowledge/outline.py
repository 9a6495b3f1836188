"""The outline of a Markdown document, derived with markdown-it-py, and its sections.

Each heading (ATX or setext, not inside code, HTML blocks or front matter) starts a section that
runs to the line before the next heading, so the sections' line ranges partition the document:
text before the first heading is a section of its own. Anchors are GitHub-style slugs (CJK kept,
`-1`, `-2` for repeats); an explicit `{ #anchor }` at the end of a heading is the anchor.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, NamedTuple

PREAMBLE_ANCHOR = "_preamble"
_EXPLICIT_ANCHOR = re.compile(r"\s*\{\s*#([^\s{}]+)(?:\s+[^{}]*)?\s*\}\s*$")
_FRONT_MATTER_CLOSE = ("---", "...")


class Section(NamedTuple):
    level: int  # 1-6; 0 for the text before the first heading
    title: str
    anchor: str
    start: int  # 1-based first line (the heading line)
    end: int  # 1-based last line, inclusive
    size: int  # characters, heading included


_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, so that joining them gives the text back exactly.

    Only "\n", "\r\n" and "\r" end a line, as in CommonMark (str.splitlines would also break at
    form feeds and Unicode separators, and line numbers would drift from markdown-it's).
    """
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def slugify(title: str) -> str:
    """GitHub's anchor rule: lower-case, drop punctuation, spaces become '-'; letters of any
    script (CJK included) and digits, '-' and '_' are kept."""
    slug = []
    for char in title.strip().lower():
        if char == " ":
            slug.append("-")
        elif char in "-_" or unicodedata.category(char)[0] in "LNM":
            slug.append(char)
    return "".join(slug)


def _front_matter_lines(lines: list[str]) -> int:
    """How many leading lines are YAML front matter ('---' … '---' or '...'), else 0."""
    if not lines or lines[0].lstrip("\ufeff").rstrip("\r\n") != "---":  # (a byte-order mark first too)
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() in _FRONT_MATTER_CLOSE:
            return index + 1
    return 0


def _plain_title(inline: Any) -> str:
    """The heading's text without Markdown markup or HTML tags (code spans keep their text)."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline", "image"):  # an image stands for its alt text
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts) if parts else inline.content


def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def parse_outline(text: str, fallback_title: str = "") -> list[Section]:
    """All sections of text in order: the preamble (if any text precedes the first heading),
    then one per heading."""
    lines = split_lines(text)
    skipped = _front_matter_lines(lines)
    # Blank out front matter instead of cutting it, so token line numbers stay those of the file.
    source = "\n" * skipped + "".join(lines[skipped:])
    if source.startswith("\ufeff"):
        source = source[1:]  # a byte-order mark is not text (the body keeps it)
    tokens = _parser().parse(source)
    headings: list[tuple[int, int, str, str | None]] = []  # (line0, level, title, explicit anchor)
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        title = _plain_title(tokens[index + 1])
        # `{#id}` names the anchor only as the heading's own last text, never inside a code span.
        last = (tokens[index + 1].children or [None])[-1]
        explicit = _EXPLICIT_ANCHOR.search(title) if last is not None and last.type == "text" else None
        anchor = None
        if explicit:
            anchor = explicit.group(1)
            title = title[: explicit.start()].rstrip()
        headings.append((token.map[0], int(token.tag[1]), title.strip(), anchor))

    sections: list[Section] = []
    used: dict[str, int] = {}

    def unique(anchor: str) -> str:
        base = anchor or "section"
        if base not in used:
            used[base] = 0
            return base
        while True:
            used[base] += 1
            candidate = f"{base}-{used[base]}"
            if candidate not in used:
                used[candidate] = 0
                return candidate

    def size(start: int, end: int) -> int:
        return sum(len(line) for line in lines[start:end])

    first_heading = headings[0][0] if headings else len(lines)
    if first_heading > 0:
        sections.append(
            Section(0, fallback_title, unique(PREAMBLE_ANCHOR), 1, first_heading, size(0, first_heading))
        )
    for position, (line0, level, title, explicit_anchor) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(lines)
        anchor = unique(explicit_anchor if explicit_anchor else slugify(title))
        sections.append(Section(level, title, anchor, line0 + 1, end, size(line0, end)))
    return sections


def document_title(sections: list[Section], fallback: str) -> str:
    """The first level-1 heading, else the first heading, else the fallback (file name)."""
    for section in sections:
        if section.level == 1 and section.title:
            return section.title
    for section in sections:
        if section.level > 0 and section.title:
            return section.title
    return fallback


def children(sections: list[Section], index: int) -> list[Section]:
    """The direct subsections of sections[index]."""
    parent = sections[index]
    found: list[Section] = []
    child_level: int | None = None
    for section in sections[index + 1 :]:
        if parent.level and section.level <= parent.level:
            break
        if child_level is None or section.level < child_level:
            child_level = section.level
        if section.level == child_level:
            found.append(section)
    return found if parent.level else []


def heading_path(sections: list[Section], index: int) -> list[str]:
    """Titles from the top-level ancestor down to sections[index]."""
    path: list[str] = []
    level = sections[index].level + 1 if sections[index].level else 1
    for at in range(index, -1, -1):
        section = sections[at]
        if 0 < section.level < level:
            path.append(section.title)
            level = section.level
            if level == 1:  # nothing is above a top-level heading: the walk ends here
                break
    return list(reversed(path))


def heading_paths(sections: list[Section]) -> list[list[str]]:
    """heading_path of every section, in one pass (the open headings kept as a stack), so that
    indexing a document with thousands of sections is not quadratic."""
    paths: list[list[str]] = []
    open_headings: list[Section] = []
    for section in sections:
        if section.level:
            while open_headings and open_headings[-1].level >= section.level:
                open_headings.pop()
            open_headings.append(section)
        paths.append([heading.title for heading in open_headings] if section.level else [])
    return paths
