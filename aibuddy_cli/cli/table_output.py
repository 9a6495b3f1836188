"""Plain-text and Rich renderings of table results. Rows print as tab-separated lines under a
header line; cells go through `one_line`, so a value cannot forge a row or a column."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from .output import one_line
from .rendering import Render

if TYPE_CHECKING:
    from ..operations.loops.tables import TableAnswer, TableRun
    from ..tables.changes import Change, Changes
    from ..tables.queries import FilterResult, JoinResult, Reduction, SearchResult
    from ..tables.runs import RunEvent
    from ..tables.state import TableInfo, TableList
    from ..tables.undo import RunList, Undone


def cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return one_line(json.dumps(value, ensure_ascii=False))
    return one_line(value)


def rows_text(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    lines = ["\t".join(columns)]
    lines += ["\t".join(cell(row.get(c)) for c in columns) for row in rows]
    return "\n".join(lines)


def tables_text(tables: Sequence[TableInfo]) -> str:
    return "\n".join(
        f"{one_line(t.ref.qualified)}\t{t.rows} rows\t{len(t.schema.columns)} columns\t"
        + one_line(t.schema.description)
        for t in tables
    )


def info_text(info: TableInfo) -> str:
    lines = [f"{one_line(info.ref.qualified)}: {info.rows} rows, key {info.schema.key}"]
    if info.schema.description:
        lines.append(one_line(info.schema.description))
    for column in info.schema.columns:
        described = f"  {one_line(column.description)}" if column.description else ""
        lines.append(f"  {column.name}\t{column.type}{described}")
    return "\n".join(lines)


def filter_text(result: FilterResult) -> str:
    parts = []
    for rowset in result.tables:
        shown = len(rowset.rows)
        header = f"# {one_line(rowset.table)}: {shown} of {rowset.total} row(s)"
        parts.append(header + "\n" + rows_text(rowset.columns, rowset.rows))
    return "\n\n".join(parts)


def reduction_text(result: Reduction) -> str:
    columns = [*result.group_by, *(f"{result.metric}({c})" for c in result.columns)]
    rows = [
        {**group, **{f"{result.metric}({c})": values[c] for c in result.columns}}
        for group, values in result.groups
    ]
    return rows_text(columns, rows)


def search_text(result: SearchResult) -> str:
    return "\n".join(
        f"{one_line(hit.table)}\t{hit.score:.3f}\t" + "\t".join(f"{k}={cell(v)}" for k, v in hit.row.items())
        for hit in result.hits
    )


def join_text(result: JoinResult) -> str:
    return f"# {result.total} pair(s)\n" + rows_text(result.columns, result.rows)


def change_text(change: Change) -> str:
    detail = change.changed
    op = change.op
    if op == "add_rows":
        added = f"added {detail['added']} row(s) to {change.table}"
        new = [c["name"] for c in detail["new_columns"]]
        return added + (f" (new columns: {', '.join(new)})" if new else "")
    if op == "update_rows":
        return f"updated {detail['updated']} of {detail['matched']} matching row(s) in {change.table}"
    if op == "delete_rows":
        return f"deleted {detail['deleted']} row(s) from {change.table}"
    if op == "rename_table":
        return f"renamed {change.table} to {detail['new']}"
    if op == "delete_table":
        return f"deleted table {change.table}"
    failed = (
        detail.get("not_converted", {}).get("count", 0)
        if isinstance(detail.get("not_converted"), dict)
        else 0
    )
    summary = f"{op.replace('_', ' ')} {change.table}: {detail.get('column', '')}"
    done = "rounded to the nearest value" if detail.get("lossy") == "round" else "emptied"
    return summary + (f" ({failed} value(s) did not convert exactly and were {done})" if failed else "")


def show_rows(title: str, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    """Rows as a Rich table, for a person at a terminal."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(one_line(title)))
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell(row.get(c))) for c in columns))
    Console().print(table)


@contextmanager
def working(message: str, long: bool) -> Iterator[dict[str, Any]]:
    """A spinner on stderr while long work runs, for a person at a terminal; nothing otherwise."""
    if not (long and sys.stderr.isatty()):
        yield {}
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield {}


def _adding(values: Mapping[str, Any]) -> AbstractContextManager[dict[str, Any]]:
    rows = values.get("rows") or []
    return working(f"adding {len(rows)} rows to {values.get('table')}", len(rows) >= 1000)


def changes_text(result: Change | Changes) -> str:
    """A Change, or several (Changes), one line each."""
    from ..tables.changes import Changes

    return "\n".join(change_text(c) for c in (result.changes if isinstance(result, Changes) else [result]))


def answer_text(answer: TableAnswer) -> str:
    text: str = answer.answer
    if answer.hits:
        from ..tables.queries import SearchResult

        text += "\n" + search_text(SearchResult(answer.question, answer.method, answer.hits))
    return text


def run_text(run: TableRun) -> str:
    from ..tables.schema import json_text

    lines = [run.summary, ""]
    for operation in run.operations:
        arguments = one_line(json_text(operation["arguments"]))
        if "error" in operation:
            lines.append(f"refused\t{operation['tool']}\t{arguments}\t{one_line(operation['error'])}")
            continue
        applied = "applied" if operation["applied"] else "not applied"
        lines.append(f"{applied}\t{operation['tool']}\t{arguments}")
    if run.dry_run:
        lines.append("(dry run: nothing applied)")
    if run.not_applied:
        lines.append(
            f"not applied: {len(run.not_applied)} change(s) the model called were refused, whatever "
            f"the answer above says ({run.applied} applied)"
        )
    lines.append(f"run {run.run}" + (f" (continues {run.continues})" if run.continues else ""))
    if run.interrupted and run.applied:
        lines.append(f"undo what it applied: aibuddy table undo {run.run} --yes")
    if run.interrupted:
        lines.append(f'go on: aibuddy table {run.kind} --continue {run.run} "…"')
    return "\n".join(lines).strip()


def runs_text(listed: RunList) -> str:
    """One line a run: id, kind, started, changes, its state, the tables it changed."""
    if not listed.runs:
        return "no table update or refactor of yours yet"
    lines = []
    for run in listed.runs:
        state = "undone" if run.undone else "undoable" if run.undoable else "kept"
        fields = (run.run, run.kind, run.started, f"{run.changes} change(s)", state, ", ".join(run.tables))
        lines.append("\t".join(fields))
    return "\n".join(lines)


def _run_exit(run: TableRun, json_mode: bool) -> int:
    """Once a run has said what it applied: 130 when Ctrl-C stopped it, 8 when changes the model
    called were refused and never made good (its answer may claim them), else 0."""
    from ..errors import ExitCode

    if run.interrupted:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.NOT_APPLIED) if run.not_applied else 0


# --- a natural-language run's steps as they happen ----------------------------------------------


def step_line(event: RunEvent) -> str | None:
    """One line of a run's progress for a person (None: nothing to say)."""
    from ..tables.schema import json_text

    indent = "    " * int(event.get("depth") or 0)
    loop = event.get("loop", "")
    kind = event.get("event")
    if kind == "run":
        named = f" run {event['run']}" if event.get("run") else ""
        going_on = f", going on from {event['continues']}" if event.get("continues") else ""
        document = event.get("document")
        reading = f", reading {one_line(document['name'])} ({document['format']})" if document else ""
        return (
            f"table {loop}{named}{going_on}{reading}: at most {event['max_steps']} steps "
            "(Ctrl-C stops it between operations)"
        )
    if kind == "step":
        calls = ", ".join(event["calls"]) or "answers"
        return f"{indent}{'ask ' if event.get('depth') else ''}step {event['step']}: {calls}"
    if kind == "tool":
        arguments = one_line(json_text(event["arguments"]))
        if len(arguments) > 100:
            arguments = arguments[:99] + "…"
        if not event["ok"]:
            outcome = f"error: {one_line(event['error'])}"
        elif event.get("applied") is None:
            outcome = "ok"
        else:
            outcome = "applied" if event["applied"] else "not applied (dry run)"
        return f"{indent}  {event['tool']} {arguments} → {outcome}"
    if kind == "interrupted":
        run = f"run {event['run']} " if event.get("run") else ""
        return f"interrupted: {run}stopped after {event['applied']} applied operation(s)"
    return None


def _steps(json_mode: bool) -> dict[str, Any]:
    """A natural-language run's steps on stderr as they happen: JSON lines with --json (ASCII, one
    object a line), one line a step or tool call for a person at a terminal, nothing otherwise."""
    err = sys.stderr
    if json_mode:

        def as_json(event: RunEvent) -> None:
            err.write(json.dumps(event, ensure_ascii=True, allow_nan=False, default=str) + "\n")
            err.flush()

        return {"progress": as_json}
    if err.isatty():

        def as_line(event: RunEvent) -> None:
            line = step_line(event)
            if line is not None:
                err.write(line + "\n")
                err.flush()

        return {"progress": as_line}
    return {}


def _rowsets(result: FilterResult) -> None:
    for rowset in result.tables:
        show_rows(f"{rowset.table}: {len(rowset.rows)} of {rowset.total} row(s)", rowset.columns, rowset.rows)


def _pairs(result: JoinResult) -> None:
    show_rows(f"{result.left} ⋈ {result.right}: {result.total} pair(s)", result.columns, result.rows)


# --- one Render per table operation (cli/commands.py and the fast path use them) ---------------

_CHANGES = Render["Change | Changes"](changes_text)  # a Change, or several (Changes): one line each

RENDERS: dict[str, Render[Any]] = {
    "table list": Render["TableList"](lambda r: tables_text(r.tables)),
    "table show": Render["TableInfo"](info_text),
    "table create": Render["TableInfo"](lambda r: f"created table {r.ref.qualified}"),
    "table add": Render["Change"](changes_text, during=_adding),
    "table update-rows": _CHANGES,
    "table delete-rows": _CHANGES,
    "table rename": _CHANGES,
    "table delete": _CHANGES,
    "table filter": Render["FilterResult"](filter_text, rich=_rowsets),
    "table reduce": Render["Reduction"](reduction_text),
    "table search": Render["SearchResult"](search_text),
    "table join": Render["JoinResult"](join_text, rich=_pairs),
    "table search-join": Render["JoinResult"](join_text, rich=_pairs),
    "table column add": _CHANGES,
    "table column derive": _CHANGES,
    "table column delete": _CHANGES,
    "table column rename": _CHANGES,
    "table column copy": _CHANGES,
    "table column move": _CHANGES,
    "table column transform": _CHANGES,
    "table column vectorize": _CHANGES,
    "table ask": Render["TableAnswer"](answer_text, steps=_steps),
    "table update": Render["TableRun"](run_text, exit_code=_run_exit, steps=_steps),
    "table refactor": Render["TableRun"](run_text, exit_code=_run_exit, steps=_steps),
    "table undo": Render["Undone"](lambda r: f"undid run {r.run}: " + ", ".join(r.files)),
    "table runs": Render["RunList"](runs_text),
}
