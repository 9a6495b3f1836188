"""Document summaries through the summary model role, never in the way of an import or an edit.

A summary is stored with the sha256 of the body it describes; one made for a body that changed
meanwhile is discarded. New bodies are summarized by a background `kb summarize --background`
that logs its outcome, since nobody waits for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

from ..clock import utc_now
from ..errors import InvalidInput, ModelUnavailable, NotFound
from .documents import DocRef
from .retrieval import Retrieval
from .state import KnowledgeState

if TYPE_CHECKING:
    from ..models.calls import ModelCall, ModelSettings

SUMMARY_LOG = ".aibuddy/logs/summaries.jsonl"
SUMMARY_PROMPT = (
    "Summarise the document below in two to four sentences for someone deciding whether to read "
    "it: what it covers and for whom. Plain text only, in the document's own language."
)


class SummarizedJson(TypedDict):
    doc: str
    summarized: Literal[True]
    summary: str | None


class NotSummarizedJson(TypedDict):
    doc: str
    summarized: Literal[False]
    reason: str | None  # why there is no summary


class SummaryOutcome(NamedTuple):
    """What became of one document's summary: the summary kept, or why there is none."""

    doc: str  # qualified reference
    summarized: bool
    summary: str | None = None
    reason: str | None = None

    def to_json(self) -> SummarizedJson | NotSummarizedJson:
        if self.summarized:
            return {"doc": self.doc, "summarized": True, "summary": self.summary}
        return {"doc": self.doc, "summarized": False, "reason": self.reason}


class Summaries:
    def __init__(
        self,
        state: KnowledgeState,
        retrieval: Retrieval,
        start: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.state = state
        self.retrieval = retrieval
        # How summaries of new bodies start without the import waiting for the model.
        self.start = start or self._spawn

    def summarize(self, specs: Iterable[str]) -> list[SummaryOutcome]:
        """Summaries through the summary model role. A failure leaves the document as it was."""
        from ..models.calls import ModelCall

        call = ModelCall("summary", self.state.vault.config.models, self.state.settings)
        if not call.configured:
            raise ModelUnavailable("no model is configured for the summary role (AIBUDDY_MODEL_SUMMARY)")
        return [self._summarize_one(call, spec) for spec in specs]

    def _summarize_one(self, call: ModelCall, spec: str) -> SummaryOutcome:
        from ..models.calls import complete_text

        ref, meta = self.retrieval.show(spec)
        body = self.state.store.read(ref.body_key)[0].decode("utf-8")
        prompt = [
            {"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": f"Title: {meta.title}\n\n{body[:12000]}"},
        ]

        def ask(role: ModelSettings) -> str:
            return " ".join(complete_text(role, prompt).split())[:1000]

        summary = call(
            ask,
            warnings=self.state.warnings,
            fallback=lambda exc: f"{ref.qualified}: {exc}; summary left as it was",
        )
        if summary is None:
            return SummaryOutcome(ref.qualified, False, reason=str(call.failure))
        from ..redaction.detect import screen

        warnings = self.state.warnings
        summary = screen(summary, automatic=True, warnings=warnings, what=f"{ref.qualified} summary")
        return self.store_summary(ref, meta.sha256, summary)

    def store_summary(self, ref: DocRef, summarized_sha: str, summary: str) -> SummaryOutcome:
        """Keep the summary only if the body is still the one it describes: the version it was
        made from, or that version after a publication moved it (never another version)."""
        with self.state.lock():
            for current in (ref, ref.moved("ready" if ref.status == "pending" else "pending")):
                try:
                    meta = self.state.meta(current)
                except (NotFound, InvalidInput):
                    continue
                if meta.sha256 == summarized_sha:
                    new_meta = meta._replace(summary=summary, summary_sha256=summarized_sha)
                    self.state.store.write(current.sidecar_key, new_meta.encode())
                    return SummaryOutcome(ref.qualified, True, summary=summary)
        self.state.warnings.append(f"{ref.qualified} changed while it was summarized; summary discarded")
        return SummaryOutcome(ref.qualified, False, reason="document changed")

    def summarize_later(self, docs: list[str]) -> None:
        """Start summaries of new bodies when a summary model is configured; never wait for them."""
        if not docs:
            return
        from ..models.calls import ModelCall

        try:
            if not ModelCall("summary", self.state.vault.config.models, self.state.settings).configured:
                return
            self.start(docs)
        except (InvalidInput, OSError) as exc:
            self.state.warnings.append(f"summaries not started: {getattr(exc, 'message', None) or exc}")

    def _spawn(self, docs: list[str]) -> None:
        from ..background import spawn_aibuddy

        state = self.state
        args = ["kb", "summarize", "--background", *docs]
        spawn_aibuddy(state.vault.root, state.user, args, state.settings)

    def summarize_in_background(self, specs: Iterable[str]) -> None:
        """`kb summarize --background`: summaries whose outcome goes to .aibuddy/logs/summaries.jsonl,
        since nobody waits for the output."""
        import json

        try:
            results: list[Mapping[str, Any]] = [outcome.to_json() for outcome in self.summarize(specs)]
        except Exception as exc:  # noqa: BLE001 - nobody sees this process fail but the log
            results = [{"summarized": False, "reason": f"{type(exc).__name__}: {exc}"}]
        entries = [*results, *({"warning": warning} for warning in self.state.warnings)]
        from ..redaction.detect import redacted

        entries = [redacted({"at": utc_now(), "user": self.state.user, **entry}) for entry in entries]
        lines = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
        self.state.store.append(SUMMARY_LOG, lines.encode("utf-8"))
