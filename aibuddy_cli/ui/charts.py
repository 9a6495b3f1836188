"""A small picture of memory's use, drawn on the server as SVG (no script): records added and
records last recalled per week, for the latest weeks, and how many were never recalled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from html import escape
from typing import NamedTuple

from ..memory.records import MemoryRecord

WEEKS = 12


class Use(NamedTuple):
    weeks: list[date]  # each week's Monday, oldest first
    added: list[int]
    recalled: list[int]  # records whose last recall fell in that week
    never_recalled: int
    total: int


def use_by_week(records: Iterable[MemoryRecord], today: date, weeks: int = WEEKS) -> Use:
    monday = today - timedelta(days=today.weekday())
    starts = [monday - timedelta(weeks=back) for back in range(weeks - 1, -1, -1)]
    added: Counter[date] = Counter()
    recalled: Counter[date] = Counter()
    never = total = 0
    for record in records:
        total += 1
        if (made := _week(record.created)) is not None:
            added[made] += 1
        if (last := _week(record.last_recalled_at)) is not None:
            recalled[last] += 1
        if not record.recall_count:
            never += 1
    return Use(starts, [added[week] for week in starts], [recalled[week] for week in starts], never, total)


def _week(stamp: str | None) -> date | None:
    if not stamp:
        return None
    try:
        day = datetime.fromisoformat(stamp.replace("Z", "+00:00")).date()
    except ValueError:
        return None
    return day - timedelta(days=day.weekday())


def use_svg(use: Use) -> str:
    """Two bars a week (added, recalled), labelled; the numbers are in each bar's title too."""
    width, height, top, bottom, left = 560, 150, 14, 26, 28
    high = max([*use.added, *use.recalled, 1])
    step = (width - left) / max(len(use.weeks), 1)
    bar = max(step / 2 - 3, 2)
    scale = (height - top - bottom) / high
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="records added and recalled per week">',
        f'<text x="0" y="{top}" class="axis">{high}</text>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" class="axis"/>',
    ]
    for at, (week, added, recalled) in enumerate(zip(use.weeks, use.added, use.recalled, strict=True)):
        x = left + at * step
        for offset, count, kind in ((0, added, "added"), (bar + 2, recalled, "recalled")):
            tall = count * scale
            label = escape(f"week of {week.isoformat()}: {count} {kind}")
            parts.append(
                f'<rect class="{kind}" x="{x + offset:.1f}" y="{height - bottom - tall:.1f}" '
                f'width="{bar:.1f}" height="{tall:.1f}"><title>{label}</title></rect>'
            )
        if at % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{height - 8}" class="axis">{week.strftime("%d %b")}</text>')
    parts.append("</svg>")
    return "".join(parts)
