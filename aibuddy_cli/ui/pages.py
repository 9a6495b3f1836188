"""The pages: each a thin view over the registry's operations, so a change made here follows the
same rules, journals and refusals as on the command line (nothing is possible only here).

Each request gets its own Session for its session's user (the person who started `aibuddy ui`,
or the user of the token it signed in with: guard.py), closed after the answer. A change is a
POST whose form carries the session's CSRF token (guard.form_of); it answers with a redirect
(303) to the page that shows its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote, urlencode

from ..errors import EXPECTED, AibuddyError, as_aibuddy_error
from ..memory.records import TYPES
from .charts import use_by_week, use_svg
from .guard import Refusal, form_of
from .views import diff_lines, markdown_html, render

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ..app.session import Session
    from ..vault import Vault


class Place(NamedTuple):
    """What every page is served for: the vault, and how a session is made for a user."""

    vault: Vault
    session: Callable[[str], Session]


def _status(error: AibuddyError) -> int:
    """The HTTP status of an operation's refusal, by its exit code's meaning."""
    from ..errors import Conflict, InvalidInput, NotAllowed, NotFound

    for kind, status in ((NotFound, 404), (NotAllowed, 403), (Conflict, 409), (InvalidInput, 400)):
        if isinstance(error, kind):
            return status
    return 400


class Pages:
    def __init__(self, place: Place) -> None:
        self.place = place

    # --- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def session(self, request: Request) -> Iterator[Session]:
        session = self.place.session(request.scope["state"]["ui"]["user"])
        try:
            yield session
        finally:
            session.close()

    def page(self, request: Request, template: str, status: int = 200, **values: Any) -> Response:
        from starlette.responses import HTMLResponse

        ui = request.scope["state"]["ui"]
        shown = {
            "user": ui["user"],
            "vault": str(self.place.vault.root),
            "csrf": ui["csrf"],
            "notice": request.query_params.get("done"),
            "problem": None,
            "section": "memory",
            **values,
        }
        return HTMLResponse(render(template, shown), status_code=status)

    def failed(self, request: Request, error: BaseException) -> Response:
        """An operation's refusal (or a bug) as a page: its one-line message, never a traceback."""
        if isinstance(error, Refusal):
            return self.page(request, "error.html", error.status, title="Refused", heading="Refused",
                             problem=error.message)  # fmt: skip
        if not isinstance(error, EXPECTED):
            raise error
        known = as_aibuddy_error(error)
        return self.page(request, "error.html", _status(known), title="Refused", heading="Refused",
                         problem=known.message)  # fmt: skip

    @staticmethod
    def redirect(path: str, done: str | None = None) -> Response:
        from starlette.responses import RedirectResponse

        if done:
            path += ("&" if "?" in path else "?") + urlencode({"done": done})
        return RedirectResponse(path, status_code=303)

    async def form(self, request: Request) -> Mapping[str, str]:
        fields = {key: str(value) for key, value in (await request.form()).items()}
        return form_of(fields, request.scope["state"]["ui"])

    @staticmethod
    def run(session: Session, operation: str, **arguments: Any) -> Any:
        from ..operations.registry import find

        return find(operation)(session, **arguments)

    # --- memory ------------------------------------------------------------------------------

    def memory(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        try:
            with self.session(request) as session:
                if query:
                    recalled = self.run(session, "memory recall", query=query)
                    return self.page(request, "memory.html", title="Recall", query=query,
                                     method=recalled.method, recalled=recalled.records,
                                     warnings=recalled.warnings)  # fmt: skip
                listed = self.run(session, "memory list", every=True)
        except Exception as error:  # noqa: BLE001 - shown as the page's refusal (failed re-raises bugs)
            return self.failed(request, error)
        records = [item.record for item in listed.records]
        use = use_by_week(records, datetime.now(UTC).date())
        shown = records if request.query_params.get("all") else records[:RECORDS_SHOWN]
        return self.page(request, "memory.html", title="Memory", query=None, records=shown,
                         total=len(records), problems=listed.problems, use=use,
                         chart=use_svg(use))  # fmt: skip

    def record(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            with self.session(request) as session:
                shown = self.run(session, "memory show", name=name)
                versions = self.run(session, "memory history", name=name)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        record = shown.record
        return self.page(request, "record.html", title=record.name, record=record,
                         body=markdown_html(record.body), git=versions.git,
                         versions=_versions(record.body, versions))  # fmt: skip

    def edit_form(self, request: Request) -> Response:
        try:
            with self.session(request) as session:
                record = self.run(session, "memory show", name=request.path_params["name"]).record
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        return self.page(request, "edit.html", title=f"Edit {record.name}", record=record, types=TYPES)

    async def edit(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            fields = await self.form(request)
            with self.session(request) as session:
                written = self.run(session, "memory update", name=name, type=fields.get("type"),
                                   description=fields.get("description"),
                                   body=_newlines(fields.get("body")))  # fmt: skip
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        done = f"saved {name}" if written.changed else f"{name} unchanged"
        return self.redirect(f"/memory/{quote(name)}", done)

    def delete_form(self, request: Request) -> Response:
        name = request.path_params["name"]
        return self.page(request, "confirm.html", title=f"Delete {name}", question=f"Delete {name}?",
                         detail="The record's file is removed (git keeps its history in a git vault).",
                         action=f"/memory/{quote(name)}/delete", verb="Delete",
                         back=f"/memory/{quote(name)}")  # fmt: skip

    async def delete(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            await self.form(request)
            with self.session(request) as session:
                self.run(session, "memory delete", name=name)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        return self.redirect("/memory", f"deleted {name}")

    async def revert(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            fields = await self.form(request)
            to = int(fields.get("to", "1")) if fields.get("to", "1").isdigit() else 0
            with self.session(request) as session:
                reverted = self.run(session, "memory revert", name=name, to=to)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        done = f"reverted {name} to version {reverted.version}" if reverted.changed else f"{name} unchanged"
        return self.redirect(f"/memory/{quote(name)}", done)


    # --- changes that wait for a person (memory/pending.py) -----------------------------------

    def pending(self, request: Request) -> Response:
        try:
            with self.session(request) as session:
                listed = self.run(session, "memory pending")
                review = self.run(session, "memory review")
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        suggestions = [{"id": p.id, "summary": p.summary(), "reason": p.reason} for p in review.proposals]
        proposals = [_proposal(proposal) for proposal in listed.proposals]
        return self.page(request, "pending.html", title="Waiting for you", section="pending",
                         proposals=proposals, suggestions=suggestions)  # fmt: skip

    async def apply_review(self, request: Request) -> Response:
        try:
            fields = await self.form(request)
            with self.session(request) as session:
                done = self.run(session, "memory review", apply=[fields.get("id", "")])
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        said = "; ".join(f"{applied.outcome}: {applied.detail}" for applied in done.applied)
        return self.redirect("/pending", said or "nothing applied")

    async def accept(self, request: Request) -> Response:
        proposal = request.path_params["id"]
        try:
            fields = await self.form(request)
            edited = [key for key in ("type", "description", "body") if key in fields]
            edits = {key: _newlines(fields.get(key)) for key in edited}
            with self.session(request) as session:
                done = self.run(session, "memory accept", id=proposal, **edits)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        if done.record is None:  # a contact
            return self.redirect("/pending", f"contact {(done.contact or {}).get('name', '')} written")
        verb = "created" if done.action == "create" else "updated"
        return self.redirect("/pending", f"{verb} {done.record.name}{' (yours now)' if done.edited else ''}")

    async def reject(self, request: Request) -> Response:
        proposal = request.path_params["id"]
        try:
            await self.form(request)
            with self.session(request) as session:
                done = self.run(session, "memory reject", id=proposal)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        return self.redirect("/pending", f"rejected the change to {done.name}")


    # --- knowledge ---------------------------------------------------------------------------

    def knowledge(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        try:
            with self.session(request) as session:
                if query:
                    found = self.run(session, "kb search", query=query)
                    hits = [_hit(hit) for hit in found.hits]
                    return self.page(request, "knowledge.html", title="Search", section="knowledge",
                                     query=query, hits=hits)  # fmt: skip
                listed = self.run(session, "kb list", status="all")
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        scopes: dict[str, list[dict[str, Any]]] = {"system": [], "personal": []}
        for document in listed.documents:
            link = urlencode({"d": document.ref.qualified, "status": document.ref.status})
            scopes[document.ref.scope].append({**document.to_json(), "link": link})
        return self.page(request, "knowledge.html", title="Knowledge", section="knowledge", query=None,
                         scopes=list(scopes.items()))  # fmt: skip

    def document(self, request: Request) -> Response:
        spec, status = request.query_params.get("d", ""), request.query_params.get("status", "ready")
        try:
            with self.session(request) as session:
                shown = self.run(session, "kb outline", doc=spec, status=status)
                ref, knowledge = shown.ref, session.knowledge
                diff, ready, may_review = [], False, False
                if ref.status == "pending":
                    published = knowledge.resolve(ref.qualified, prefer="ready")
                    ready = published.status == "ready"
                    before = knowledge.store.read(published.body_key)[0].decode() if ready else ""
                    diff = diff_lines(before, knowledge.store.read(ref.body_key)[0].decode())
                    may_review = knowledge.may_review(ref)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        meta = shown.meta
        outline = [
            {"title": section.title or "(before the first heading)", "anchor": section.anchor,
             "level": section.level, "link": urlencode({"d": ref.qualified, "anchor": section.anchor,
                                                         "status": ref.status})}
            for section in meta.outline
        ]  # fmt: skip
        rule = (
            "Only an admin (admins in aibuddy.toml) publishes or rejects a system document."
            if ref.scope == "system"
            else "Only its owner publishes or rejects a personal document."
        )
        return self.page(request, "document.html", title=meta.title, section="knowledge",
                         doc=ref.qualified, doc_status=ref.status, reviewed_by=meta.reviewed_by,
                         reviewed_at=meta.reviewed_at,
                         ready=ready, diff=diff, may_review=may_review, review_rule=rule,
                         outline=outline)  # fmt: skip

    def section_page(self, request: Request) -> Response:
        params = request.query_params
        spec, status = params.get("d", ""), params.get("status", "ready")
        try:
            with self.session(request) as session:
                page = self.run(session, "kb read", doc=spec, anchor=params.get("anchor") or None,
                                cursor=params.get("cursor") or None, status=status)  # fmt: skip
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        doc = page.ref.qualified
        link = {"d": doc, "status": page.ref.status}
        children = [{"title": child.title, "link": urlencode({**link, "anchor": child.anchor})}
                    for child in page.children]  # fmt: skip
        more = {**link, "anchor": page.section.anchor, "cursor": page.next_cursor}
        after = urlencode(more) if page.next_cursor else None
        return self.page(request, "section.html", title=page.section.title or page.title,
                         section="knowledge",
                         back=urlencode(link), path=page.path, citation=f"{doc}#{page.section.anchor}",
                         lines=[page.section.start, page.section.end], text=markdown_html(page.text),
                         next=after, children=children)  # fmt: skip

    async def publish(self, request: Request) -> Response:
        return await self._review(request, "publish")

    async def reject_document(self, request: Request) -> Response:
        return await self._review(request, "reject")

    async def _review(self, request: Request, verb: str) -> Response:
        try:
            fields = await self.form(request)
            with self.session(request) as session:
                done = self.run(session, f"kb {verb}", docs=[fields.get("doc", "")])
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        names = ", ".join(done.names)
        if verb == "publish":
            shown = urlencode({"d": names, "status": "ready"})
            return self.redirect(f"/kb/doc?{shown}", f"published {names}")
        return self.redirect("/kb", f"rejected {names}")


    # --- tables ------------------------------------------------------------------------------

    def tables(self, request: Request) -> Response:
        try:
            with self.session(request) as session:
                listed = self.run(session, "table list")
                runs = self.run(session, "table runs").runs
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        tables = [
            {"name": info.ref.qualified, "description": info.schema.description, "rows": info.rows,
             "columns": ", ".join(f"{c.name}: {c.type}" for c in info.schema.columns),
             "link": urlencode({"t": info.ref.qualified})}
            for info in listed.tables
        ]  # fmt: skip
        return self.page(request, "tables.html", title="Tables", section="tables", tables=tables, runs=runs)

    async def undo(self, request: Request) -> Response:
        try:
            fields = await self.form(request)
            with self.session(request) as session:
                done = self.run(session, "table undo", run=fields.get("run") or None)
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        return self.redirect("/tables", f"undid run {done.run}: {', '.join(done.files)}")

    def table(self, request: Request) -> Response:
        """A table's rows, a page at a time, filtered and sorted as `table filter` does; a filter
        that does not hold is said on the page (the rows are then not shown)."""
        params = request.query_params
        name, where, sort = params.get("t", ""), params.get("where", "").strip(), params.get("sort") or None
        page = int(params["page"]) if params.get("page", "").isdigit() else 1
        refused, rows = None, None
        try:
            with self.session(request) as session:
                info = self.run(session, "table show", table=name)
                try:
                    rows = self.run(session, "table filter", tables=[name], where=where or None, sort=sort,
                                    limit=ROWS_A_PAGE, offset=(page - 1) * ROWS_A_PAGE).tables[0]  # fmt: skip
                except Exception as error:  # noqa: BLE001 - a filter that does not hold: said, not raised
                    if not isinstance(error, EXPECTED):
                        raise
                    refused = as_aibuddy_error(error).message
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        table = info.ref.qualified
        state = {"t": table, **({"where": where} if where else {})}
        types = {column.name: column.type for column in info.schema.columns}
        names = rows.columns if rows is not None else list(types)
        columns = [
            {"name": column, "type": types.get(column, ""), "sorted": _sorted(sort, column),
             "link": urlencode({**state, "sort": column if sort != column else f"-{column}"})}
            for column in names
        ]  # fmt: skip
        shown: dict[str, Any] = {"shown": rows is not None}
        if rows is not None:
            base = {**state, **({"sort": sort} if sort else {})}
            more = page * ROWS_A_PAGE < rows.total
            shown |= {
                "rows": [[row.get(column) for column in names] for row in rows.rows],
                "total": rows.total,
                "first": (page - 1) * ROWS_A_PAGE + (1 if rows.rows else 0),
                "last": (page - 1) * ROWS_A_PAGE + len(rows.rows),
                "previous": urlencode({**base, "page": page - 1}) if page > 1 else None,
                "next": urlencode({**base, "page": page + 1}) if more else None,
            }
        return self.page(request, "table.html", title=table, section="tables", name=table,
                         description=info.schema.description, where=where, sort=sort, columns=columns,
                         refused=refused, **shown)  # fmt: skip


    # --- tasks -------------------------------------------------------------------------------

    def tasks(self, request: Request) -> Response:
        try:
            with self.session(request) as session:
                listed = self.run(session, "task list")
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        return self.page(request, "tasks.html", title="Tasks", section="tasks", tasks=listed.tasks)

    def task(self, request: Request) -> Response:
        """A task: its goal, plan and status, attached documents, how far consolidation has come
        with the rolling summary, and its latest messages (reading them changes nothing)."""
        from itertools import islice

        name = request.query_params.get("t", "")
        try:
            with self.session(request) as session:
                shown = self.run(session, "task show", task=name)
                latest = list(islice(session.tasks.messages_from_end(shown.task.id), MESSAGES_SHOWN))
        except Exception as error:  # noqa: BLE001
            return self.failed(request, error)
        task, consolidation = shown.task, shown.consolidation
        total = task.messages if task.messages is not None else len(latest)
        return self.page(request, "task.html", title=f"{task.id}: {task.goal}", section="tasks", task=task,
                         plan=markdown_html(task.plan or ""), consolidation=consolidation,
                         summary=markdown_html(consolidation.summary or ""), messages=list(reversed(latest)),
                         earlier=max(total - len(latest), 0))  # fmt: skip


ROWS_A_PAGE = 50
MESSAGES_SHOWN = 100
RECORDS_SHOWN = 200  # the newest; a link shows them all


def _sorted(sort: str | None, column: str) -> str | None:
    if sort == column:
        return "asc"
    return "desc" if sort == f"-{column}" else None


def _proposal(proposal: Any) -> dict[str, Any]:
    """A proposal for the page, with its diff: a record's body, or a contact's columns."""
    if proposal.values is None:
        return {**proposal._asdict(), "diff": diff_lines(proposal.base_body or "", proposal.body)}
    before = (proposal.base_values or {}).items()
    shown_before = "\n".join(f"{column}: {value}" for column, value in before if value is not None)
    shown_after = "\n".join(f"{column}: {value}" for column, value in proposal.values.items())
    return {**proposal._asdict(), "diff": diff_lines(shown_before, shown_after)}


def _hit(hit: Any) -> dict[str, Any]:
    found = hit.hit
    link = urlencode({"d": found.ref.qualified, "anchor": found.anchor, "status": "ready"})
    return {"section": found.section_title or found.title, "title": found.title, "snippet": hit.snippet,
            "citation": f"{found.ref.qualified}#{found.anchor}", "link": link}  # fmt: skip


def _newlines(text: str | None) -> str | None:
    """A textarea's text with the browser's CRLF line ends as the file's LF."""
    return None if text is None else text.replace("\r\n", "\n")


def _versions(current: str, versions: Any) -> list[dict[str, Any]]:
    """The record's earlier versions, newest first, each as a diff from it to the text after it:
    what automatic memory (or a revert) replaced, numbered as `memory revert --to N` takes them,
    then the git commits."""
    shown: list[dict[str, Any]] = []
    after = current
    for number, replaced in enumerate(versions.replaced, 1):
        before = str(replaced.get("body") or "")
        label = f"replaced {replaced.get('replaced') or ''} (it said, before the change below)"
        shown.append({"label": label, "diff": diff_lines(before, after), "revert": number})
        after = before
    after = current
    for commit in versions.commits:
        before = commit.get("body")
        if before is None:
            continue
        label = f"{commit['date']} {commit['commit'][:10]} {commit['subject']}"
        shown.append({"label": label, "diff": diff_lines(before, after), "revert": None})
        after = before
    return shown
