#!/usr/bin/env python3
"""Whole-process timing of aibuddy's knowledge-table commands on a generated table of 100,000 rows,
and of one-row changes on a table of 200,000.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_tables.py
Each vault is built once under bench/out/tables-vault-N/ (git-ignored) through the CLI (`table
create` then one `table add --file` of every row) and reused while it still holds the expected
rows; delete it to regenerate. Warm commands are timed beside `python -c pass` and `rg -c` in the
same run. The one-row changes run on one copy of the 200,000-row vault per run (its index built
once, untimed): add, update and delete of one row, interleaved; then adding a column, and the
first read after it (which must not rebuild the index).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import check_run, run_once

OUT = Path(__file__).resolve().parent / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
TABLE = "big"
SEED = 42
RARE, RARE_ROWS = "zephyrine", 5
WHERE = 'price > 990 and category == "tools"'
FORMAT = 1  # bump when the generated rows change, so an old vault is regenerated
Row = tuple[str, float, float | None]  # label, median ms, ms of the rg run it is compared with

COLUMNS = [
    "name:str",
    "category:str",
    "city:str",
    "price:float",
    "quantity:int",
    "added:date",
    "tags:list",
    "notes:str",
]
ADJECTIVES = """red blue green small large heavy light quiet smart compact portable classic modern
vintage rugged soft steel wooden silver golden digital electric manual outdoor indoor""".split()
NOUNS = """widget gadget lamp chair table kettle drill hammer wrench blender speaker monitor
keyboard backpack jacket boots tent stove bottle mug notebook pen scissors ladder bucket""".split()
CATEGORIES = """tools toys books kitchen garden office sports outdoor electronics music clothing
shoes beauty health grocery pets baby automotive furniture lighting""".split()
CITIES = """Berlin Paris London Madrid Rome Vienna Prague Warsaw Lisbon Dublin Amsterdam Brussels
Copenhagen Stockholm Oslo Helsinki Zurich Munich Hamburg Lyon Milan Barcelona Porto Krakow Budapest
Athens Tokyo Osaka Seoul Toronto""".split()
VOCAB = """api cache build deploy release branch merge review test staging production database
schema migration index query latency timeout retry queue worker cron backup restore logging metrics
alert dashboard oncall incident ticket roadmap customer invoice billing report weekly summary
template python rust docker helm nginx postgres redis kafka bucket region cluster node container
image registry token secret certificate proxy firewall budget audit privacy rollback canary
discount warranty shipping supplier stock return refund bundle sale premium fragile bulk""".split()


def make_rows(n: int, rng: random.Random, rare: set[int]) -> list[dict]:
    """n varied rows; the rows numbered in `rare` carry the rare word in their notes."""
    start = dt.date(2019, 1, 1).toordinal()
    rows = []
    for i in range(n):
        notes = rng.choices(VOCAB, k=rng.randint(5, 12))
        if i in rare:
            notes.insert(rng.randrange(len(notes) + 1), RARE)
        rows.append(
            {
                "name": f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.choice(VOCAB)}",
                "category": rng.choice(CATEGORIES),
                "city": rng.choice(CITIES),
                "price": round(rng.uniform(1, 1000), 2),
                "quantity": rng.randint(0, 500),
                "added": dt.date.fromordinal(start + rng.randrange(6 * 365)).isoformat(),
                "tags": rng.sample(VOCAB, rng.randint(1, 3)),
                "notes": " ".join(notes).capitalize() + ".",
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def generate(n: int, more: int) -> tuple[Path, Path, list[dict]]:
    """The initial rows and the rows of the add measure, as JSONL files (always regenerated: cheap)."""
    rng = random.Random(SEED)
    rows = make_rows(n, rng, set(rng.sample(range(n), RARE_ROWS)))
    extra = make_rows(more, rng, set())
    data = OUT / "tables-data"
    data.mkdir(parents=True, exist_ok=True)
    rows_file, more_file = data / f"rows-{n}.jsonl", data / f"more-{more}.jsonl"
    write_jsonl(rows_file, rows)
    write_jsonl(more_file, extra)
    return rows_file, more_file, rows


def timed_run(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One captured run and its wall time in ms (for the single-shot measures whose output matters)."""
    start = time.perf_counter()
    done = check_run(argv, env)
    return (time.perf_counter() - start) * 1000, done


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms per command; one captured warm-up each, then `runs` interleaved rounds."""
    for argv in commands.values():
        check_run(argv, env, ok=(0, 1) if argv[0] == "rg" else (0,))
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(run_once(argv, env))
    return {label: statistics.median(values) for label, values in samples.items()}


def bench_env(vault: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIBUDDY_")}
    return dict(env, AIBUDDY_VAULT=str(vault), AIBUDDY_USER=USER)


def table_csv(vault: Path) -> Path:
    return vault / "tables" / "personal" / USER / f"{TABLE}.csv"


def csv_rows(vault: Path) -> int:
    """Data rows in the table's CSV (no cell of the generated rows holds a newline)."""
    path = table_csv(vault)
    return path.read_bytes().count(b"\n") - 1 if path.is_file() else -1


def build_vault(n: int, rows_file: Path) -> tuple[Path, float, bool]:
    """The vault holding the n-row table, the ms of its `table add`, and whether it was built now."""
    vault, marker = OUT / f"tables-vault-{n}", OUT / f"tables-vault-{n}.json"
    expected = {"rows": n, "seed": SEED, "format": FORMAT}
    if marker.is_file():
        built = json.loads(marker.read_text(encoding="utf-8"))
        if {k: built.get(k) for k in expected} == expected and csv_rows(vault) == n:
            return vault, built["add_ms"], False
    print(f"generating a table of {n:,} rows in {vault} ...", file=sys.stderr)
    marker.unlink(missing_ok=True)
    shutil.rmtree(vault, ignore_errors=True)
    env = bench_env(vault)
    check_run([str(AIBUDDY), "--user", USER, "init", str(vault)], env)
    create = [str(AIBUDDY), "table", "create", TABLE, "-d", "generated benchmark rows"]
    check_run(create + [arg for column in COLUMNS for arg in ("-c", column)], env)
    add_ms, done = timed_run([str(AIBUDDY), "table", "add", TABLE, "--file", str(rows_file), "--json"], env)
    added = json.loads(done.stdout or "{}").get("added")
    if added != n or csv_rows(vault) != n:
        sys.exit(f"table add stored {added} rows ({csv_rows(vault)} in the CSV), expected {n:,}")
    marker.write_text(json.dumps(dict(expected, add_ms=add_ms)), encoding="utf-8")
    return vault, add_ms, True


def fresh_copy(vault: Path, env: dict[str, str]) -> Path:
    """A copy of the vault whose index is current: copying changes file ctimes, so one untimed
    command rebuilds the index first (otherwise the timed add would include that rebuild)."""
    copy = OUT / "tables-vault-add"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(vault, copy, symlinks=True)
    check_run([str(AIBUDDY), "table", "filter", TABLE, "--where", "row_id == 1", "--json"], env)
    return copy


def expected_figures(rows: list[dict]) -> tuple[int, dict[str, float]]:
    """The filter's row count and the mean price by category, computed here from the rows."""
    hits = sum(1 for row in rows if row["price"] > 990 and row["category"] == "tools")
    prices: dict[str, list[float]] = {}
    for row in rows:
        prices.setdefault(row["category"], []).append(row["price"])
    return hits, {category: statistics.fmean(values) for category, values in prices.items()}


def check_outputs(vault: Path, env: dict[str, str], rows: list[dict]) -> list[str]:
    """Compare what filter, reduce and search return with the generated rows."""
    notes = []
    hits, means = expected_figures(rows)
    argv = [str(AIBUDDY), "table", "filter", TABLE, "--where", WHERE, "--limit", "1000", "--json"]
    done = check_run(argv, env)
    try:
        total = json.loads(done.stdout)["tables"][0]["total"]
    except (ValueError, KeyError, IndexError, TypeError):
        total = None
    notes.append(f"filter `{WHERE}`: {total} row(s), expected {hits} — {'OK' if total == hits else 'WRONG'}")

    done = check_run(
        [str(AIBUDDY), "table", "reduce", TABLE, "-m", "mean", "-c", "price", "-g", "category", "--json"], env
    )
    try:
        got = {g["group"]["category"]: g["values"]["price"] for g in json.loads(done.stdout)["groups"]}
    except (ValueError, KeyError, TypeError):
        got = {}
    bad = [c for c, mean in means.items() if c not in got or abs(got[c] - mean) > 1e-6 * max(1.0, mean)]
    verdict = "OK" if not bad and len(got) == len(means) else f"WRONG ({bad[:5]})"
    notes.append(f"reduce mean price by category: {len(got)} group(s), expected {len(means)} — {verdict}")

    done = check_run([str(AIBUDDY), "table", "search", RARE, "--table", TABLE, "--json"], env)
    try:
        found = [hit["row"] for hit in json.loads(done.stdout)["hits"]]
    except (ValueError, KeyError, TypeError):
        found = []
    holding = sum(1 for row in found if RARE in row.get("notes", "").lower())
    rg = check_run(["rg", "-c", RARE, str(table_csv(vault))], env, ok=(0, 1))
    expected = int(rg.stdout.strip() or 0)
    verdict = "OK" if len(found) == holding == expected == RARE_ROWS else "WRONG"
    notes.append(
        f"search {RARE}: {len(found)} hit(s), {holding} holding it; rg -c: {expected};"
        f" planted {RARE_ROWS} — {verdict}"
    )
    return notes


def bench(n: int, more: int, runs: int, slow_runs: int) -> tuple[list[Row], float, dict, list[str]]:
    """Rows (label, ms, rg ms or None), the `python -c pass` time, single-shot timings and notes."""
    rows_file, more_file, rows = generate(n, more)
    vault, add_ms, built_now = build_vault(n, rows_file)
    env = bench_env(vault)
    csv_path = str(table_csv(vault))
    notes = [
        f"vault {'built in this run' if built_now else 'reused from an earlier run'}"
        f" through the CLI: `table create` + one `table add {TABLE} --file` of {n:,} rows"
    ]

    # Warm commands (the first warm-up also rebuilds the index if a copy or clone changed ctimes).
    aibuddy = str(AIBUDDY)
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        f"table filter {TABLE} --where '{WHERE}' --json": [
            aibuddy,
            "table",
            "filter",
            TABLE,
            "--where",
            WHERE,
            "--json",
        ],
        f"table reduce {TABLE} -m mean -c price -g category --json": [
            aibuddy,
            "table",
            "reduce",
            TABLE,
            "-m",
            "mean",
            "-c",
            "price",
            "-g",
            "category",
            "--json",
        ],
        f"table reduce {TABLE} -m median -c price -g category --json": [
            aibuddy,
            "table",
            "reduce",
            TABLE,
            "-m",
            "median",
            "-c",
            "price",
            "-g",
            "category",
            "--json",
        ],
        f"table search {RARE} --table {TABLE} --json": [
            aibuddy,
            "table",
            "search",
            RARE,
            "--table",
            TABLE,
            "--json",
        ],
        f"rg -c {RARE} {TABLE}.csv": ["rg", "-c", RARE, csv_path],
    }
    warm = measure(commands, env, runs)
    notes += check_outputs(vault, env, rows)
    rg_ms = warm[f"rg -c {RARE} {TABLE}.csv"]
    table_rows: list[Row] = []
    for label, ms in warm.items():
        if label != "python -c pass":
            table_rows.append((label, ms, rg_ms if "search" in label or label.startswith("rg") else None))

    # Adding rows: each run on a fresh copy of the vault, so the table is always n rows before.
    adds = []
    for _ in range(slow_runs):
        copy_env = bench_env(OUT / "tables-vault-add")
        copy = fresh_copy(vault, copy_env)
        ms, done = timed_run([aibuddy, "table", "add", TABLE, "--file", str(more_file), "--json"], copy_env)
        adds.append(ms)
        added = json.loads(done.stdout or "{}").get("added")
        if added != more or csv_rows(copy) != n + more:
            notes.append(f"add: {added} added, {csv_rows(copy)} rows after — WRONG")
    shutil.rmtree(OUT / "tables-vault-add", ignore_errors=True)

    # Index rebuild: the first command after deleting .aibuddy/.
    filter_argv = commands[f"table filter {TABLE} --where '{WHERE}' --json"]
    rebuilds = []
    for _ in range(slow_runs):
        shutil.rmtree(vault / ".aibuddy", ignore_errors=True)
        rebuilds.append(run_once(filter_argv, env))
    single = {"first add": add_ms, "built now": built_now, "add": adds, "rebuild": rebuilds}
    return table_rows, warm["python -c pass"], single, notes


def bench_rows(n: int, runs: int) -> tuple[dict[str, list[float]], float, list[str]]:
    """One-row changes on a copy of the n-row vault: ms per run of each, the `python -c pass` ms
    of the same run, and notes."""
    rows_file, _, _ = generate(n, 1)
    vault, _, built_now = build_vault(n, rows_file)
    copy = OUT / "tables-vault-rows"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(vault, copy, symlinks=True)
    env = bench_env(copy)
    aibuddy = [str(AIBUDDY), "table"]
    warm = [*aibuddy, "filter", TABLE, "--where", "row_id == 1", "--json"]
    check_run(warm, env)  # the copy's new ctimes: its index is built here, untimed
    notes = [f"row changes on a copy of a {n:,}-row vault ({'built in this run' if built_now else 'reused'})"]
    samples: dict[str, list[float]] = {
        label: [] for label in ("python -c pass", "warm filter", "add", "update", "delete")
    }
    spread = [1 + (n - 1) * i // max(1, runs - 1) for i in range(runs)]  # first row to last
    for i, key in enumerate(spread):
        samples["python -c pass"].append(run_once([sys.executable, "-c", "pass"], env))
        samples["warm filter"].append(run_once(warm, env))
        row = json.dumps({"name": f"bench row {i}", "price": 1.5})
        samples["add"].append(run_once([*aibuddy, "add", TABLE, "--row", row, "--json"], env))
        price = json.dumps({"price": 2.25 + i})
        samples["update"].append(
            run_once([*aibuddy, "update-rows", TABLE, "--where", f"row_id == {key}", "--set", price], env)
        )
        where = f"row_id == {min(n, key + 1)}"
        samples["delete"].append(run_once([*aibuddy, "delete-rows", TABLE, "--where", where, "--yes"], env))
    samples["column add"] = [run_once([*aibuddy, "column", "add", TABLE, "weight", "float", "--json"], env)]
    samples["first filter after column add"] = [run_once(warm, env)]
    row = json.dumps({"name": "with a new column", "colour": "red"})
    samples["add with a new column"] = [run_once([*aibuddy, "add", TABLE, "--row", row, "--json"], env)]
    red = [*aibuddy, "filter", TABLE, "--where", 'colour == "red"', "--json"]
    samples["first filter after it"] = [run_once(red, env)]
    found = check_run(red, env)
    try:
        hits = json.loads(found.stdout)["tables"][0]["total"]
    except (ValueError, KeyError, IndexError, TypeError):
        hits = None
    expected = n + 1  # runs rows added, runs deleted, one added with the new column
    shown = check_run([*aibuddy, "show", TABLE, "--json"], env)
    try:
        total = json.loads(shown.stdout)["rows"]
    except (ValueError, KeyError, TypeError):
        total = None
    updated = check_run([*aibuddy, "filter", TABLE, "--where", f"row_id in {spread}", "--json"], env)
    try:
        prices = {r["row_id"]: r["price"] for r in json.loads(updated.stdout)["tables"][0]["rows"]}
    except (ValueError, KeyError, IndexError, TypeError):
        prices = {}
    kept = all(prices.get(key) == 2.25 + i for i, key in enumerate(spread) if key < n)
    right = "OK" if hits == 1 and total == expected and kept else "WRONG"
    what = "the updated prices and the new column's row"
    notes.append(f"after the changes: {total} rows (expected {expected}), {what}: {right}")
    shutil.rmtree(copy, ignore_errors=True)
    base = statistics.median(samples.pop("python -c pass"))
    return samples, base, notes


def rows_report(n: int, runs: int, samples: dict[str, list[float]], base: float, notes: list[str]) -> str:
    median = {label: statistics.median(values) for label, values in samples.items()}
    lines = [
        f"One-row changes on a table of {n:,} rows (one copy of the vault; the add, update and delete"
        f" of one row interleaved, median of {runs}; the updated rows spread from the first to the last):\n",
        "| command | median | × python -c pass |",
        "|---|---|---|",
        f"| `python -c pass` | {base:.0f} ms | 1.0× |",
    ]
    for label, ms in median.items():
        lines.append(f"| {label} | {seconds(ms)} | {ms / base:.1f}× |")
    add, update, warm = median["add"], median["update"], median["warm filter"]
    first_reads = (median["first filter after column add"], median["first filter after it"])
    lines += [
        "",
        "Targets:",
        "",
        f"- one-row update ≤ 2× one-row add: {update / add:.1f}× — {verdict(update <= 2 * add)}",
        f"- the first read after adding a column (by `column add` and by `add`) does not rebuild the index"
        f" (≤ 2× a warm filter, {seconds(warm)}): {', '.join(seconds(ms) for ms in first_reads)}"
        f" — {verdict(max(first_reads) <= 2 * warm)}",
        "",
        "Checks:",
        "",
        *[f"- {note}" for note in notes],
    ]
    return "\n".join(lines) + "\n"


def seconds(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(n: int, more: int, runs: int, rows: list[Row], base: float, single: dict, notes: list[str]) -> str:
    """The Markdown table, the target checks and the correctness notes."""
    slow = len(single["add"])
    add_med, rebuild_med = statistics.median(single["add"]), statistics.median(single["rebuild"])
    first = "this run" if single["built now"] else "an earlier run, reused"
    lines = [
        f"Table `{TABLE}`: {n:,} rows. Warm commands: median of {runs} interleaved runs after 1 warm-up;"
        " ratios to `rg -c` of the same word and to `python -c pass`, measured in the same run.\n",
        "| command | median | × rg -c | × python -c pass |",
        "|---|---|---|---|",
        f"| `python -c pass` | {base:.0f} ms | | 1.0× |",
    ]
    for label, ms, rg in rows:
        ratio = f"{ms / rg:.1f}×" if rg else ""
        lines.append(f"| `{label}` | {seconds(ms)} | {ratio} | {ms / base:.1f}× |")
    lines += [
        f"| `table add {TABLE} --file rows.jsonl` ({n:,} rows into the empty table: first build; 1 run,"
        f" {first}) | {seconds(single['first add'])} | | |",
        f"| `table add {TABLE} --file more.jsonl` ({more:,} rows; median of {slow}, each on a fresh copy"
        f" of the {n:,}-row vault) | {seconds(add_med)} | | |",
        f"| first `table filter` after deleting `.aibuddy/` (index rebuild; median of {slow}) |"
        f" {seconds(rebuild_med)} | | |",
        "",
        f"Single runs — add {more:,}: {', '.join(seconds(ms) for ms in single['add'])};"
        f" rebuild: {', '.join(seconds(ms) for ms in single['rebuild'])}.",
        "",
        "Targets:",
        "",
    ]
    for label, ms, rg in rows:
        if label.startswith(("table filter", "table reduce")) and "median" not in label:
            lines.append(f"- `{label}` ≤ 10× `python -c pass`: {ms / base:.1f}× — {verdict(ms <= 10 * base)}")
        elif label.startswith("table search") and rg:
            lines.append(f"- `{label}` ≤ 3× `rg -c`: {ms / rg:.1f}× — {verdict(ms <= 3 * rg)}")
    lines.append(f"- add {more:,} rows in one call < 5 s: {seconds(add_med)} — {verdict(add_med < 5000)}")
    lines.append(
        f"- index rebuild (first filter after deleting .aibuddy/) < 10 s: {seconds(rebuild_med)}"
        f" — {verdict(rebuild_med < 10_000)}"
    )
    lines += ["", "Checks:", ""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows in the generated table")
    parser.add_argument("--more", type=int, default=10_000, help="rows added by the add measure")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per warm command (median)")
    parser.add_argument("--slow-runs", type=int, default=3, help="runs of the add and rebuild measures")
    parser.add_argument("--big-rows", type=int, default=200_000, help="rows of the one-row-change table")
    parser.add_argument("--row-runs", type=int, default=5, help="runs of each one-row change (median)")
    parser.add_argument("--only-rows", action="store_true", help="only the one-row changes")
    parser.add_argument("--quick", action="store_true", help="smoke check: 5,000 rows, 3 runs, 1 slow run")
    args = parser.parse_args()
    n, more, runs, slow = args.rows, args.more, args.runs, args.slow_runs
    big, row_runs = args.big_rows, args.row_runs
    if args.quick:
        n, more, runs, slow, big, row_runs = 5000, 1000, 3, 1, 5000, 3
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    if shutil.which("rg") is None and not args.only_rows:
        sys.exit("rg (ripgrep) not found: apt-get install ripgrep")
    OUT.mkdir(parents=True, exist_ok=True)
    text = ""
    if not args.only_rows:
        rows, base, single, notes = bench(n, more, runs, slow)
        text = report(n, more, runs, rows, base, single, notes) + "\n"
    samples, base, notes = bench_rows(big, row_runs)
    text += rows_report(big, row_runs, samples, base, notes)
    print(text)
    (OUT / "tables-results.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
