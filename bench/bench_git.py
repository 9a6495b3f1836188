"""The git merge driver's cost: a memory record whose telemetry both sides changed, and a
100,000-row table both sides added a row to (issue 13: under 0.3 s and under 5 s), also with a
column one side added (issue 18: the rows and columns merge cell by cell).
The driver runs as in a `git pull` that merges (GIT_REFLOG_ACTION=pull): ours is the local side.
Writes bench/out/git-results.md."""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
PULL = {**os.environ, "GIT_REFLOG_ACTION": "pull"}  # what `git pull` tells the driver it runs in
RECORD = """---
name: tea
description: Drinks green tea
type: user
provenance: manual
created: 2026-01-01T00:00:00Z
updated: 2026-01-01T00:00:00Z
recallCount: {count}
lastRecalledAt: 2026-01-0{day}T00:00:00Z
---
Green tea, no sugar.
"""


def rows_csv(count: int) -> str:
    rng = random.Random(7)
    words = "alpha beta gamma delta kernel cache proxy canary rollback ledger".split()
    lines = ["row_id,name,city,price,tags"]
    for key in range(1, count + 1):
        name = " ".join(rng.choice(words) for _ in range(3))
        lines.append(
            f'{key},{name},{rng.choice(words)},{rng.random() * 1000:.2f},"[""{rng.choice(words)}""]"'
        )
    return "\n".join(lines) + "\n"


def timed_merge(folder: Path, names: tuple[str, ...], path: str, ours: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        (folder / names[1]).write_text(ours)
        started = time.perf_counter()
        done = subprocess.run(
            [str(AIBUDDY), "git", "merge-file", *(str(folder / n) for n in names), path], env=PULL, cwd=folder
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"the merge of {path} conflicted")
    return times


def main() -> None:
    folder = OUT / "git-bench"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    names = ("base", "ours", "theirs")
    for name, count, day in (("base", 3, 1), ("theirs", 5, 3)):
        (folder / f"{name}.md").write_text(RECORD.format(count=count, day=day))
    record = timed_merge(
        folder, tuple(f"{n}.md" for n in names), "memory/demo/tea.md", RECORD.format(count=4, day=2), 7
    )
    merged = (folder / "ours.md").read_text()
    assert "recallCount: 6" in merged, merged
    table = rows_csv(100_000)
    (folder / "base.csv").write_text(table)
    (folder / "theirs.csv").write_text(table + "100001,theirs row,rome,1.00,[]\n")
    rows = timed_merge(
        folder,
        tuple(f"{n}.csv" for n in names),
        "tables/personal/bench/big.csv",
        table + "100001,ours row,oslo,2.00,[]\n",
        3,
    )
    tail = (folder / "ours.csv").read_text().splitlines()[-2:]
    assert tail == ["100001,theirs row,rome,1.00,[]", "100002,ours row,oslo,2.00,[]"], tail
    with_column = "\n".join(
        f"{line},{'stars' if n == 0 else n % 5}" for n, line in enumerate(table.splitlines())
    )
    (folder / "theirs.csv").write_text(with_column + "\n")
    columns = timed_merge(
        folder,
        tuple(f"{n}.csv" for n in names),
        "tables/personal/bench/big.csv",
        table + "100001,ours row,oslo,2.00,[]\n",
        3,
    )
    merged = (folder / "ours.csv").read_text().splitlines()
    assert merged[0].endswith(",stars") and merged[-1] == "100001,ours row,oslo,2.00,[],", merged[-1]
    record_median, rows_median = statistics.median(record), statistics.median(rows)
    columns_median = statistics.median(columns)
    text = "\n".join(
        [
            "`aibuddy git merge-file` as git runs it (a whole process each time).",
            "",
            "| merge | median |",
            "|---|---|",
            f"| a memory record, both sides recalled it (median of 7) | {record_median * 1000:.0f} ms |",
            f"| a 100,000-row table, both sides added a row (median of 3) | {rows_median:.2f} s |",
            f"| the same, one side added a column, the other a row (median of 3) | {columns_median:.2f} s |",
            "",
            "Targets:",
            "",
            f"- a record under 0.3 s: {record_median * 1000:.0f} ms — "
            + ("PASS" if record_median < 0.3 else "FAIL"),
            f"- a 100,000-row table under 5 s: {max(rows_median, columns_median):.2f} s — "
            + ("PASS" if max(rows_median, columns_median) < 5 else "FAIL"),
        ]
    )
    (OUT / "git-results.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
