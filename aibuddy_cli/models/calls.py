"""The only module that talks to language models, through litellm, imported lazily.

Each role (recall, extract, summary, knowledge, compact) resolves to a litellm model string or to
"no model". Every failure (not configured, timeout, HTTP error, unusable reply) is a ModelError,
which callers turn into their deterministic fallback through ModelCall / call_role, the one place
for "configured? call, else fall back with a warning". Calls run on the long-lived threads of
aibuddy_cli.models.threads; litellm's own printing never reaches stdout.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..config import DEFAULT_TIMEOUT, ROLES  # noqa: F401 - re-exported, as models has always named them
from ..errors import ModelError
from ..settings import Settings
from .roles import (  # noqa: F401 - re-exported: the settings as callers import them from here
    DEFAULT_IMPORT_TIMEOUT,
    MAX_IMPORT_TIMEOUT,
    ModelSettings,
    import_timeout,
    model_settings,
)

T = TypeVar("T")


class WarningSink(Protocol):
    """Where a fallback's warning goes: a list of strings, or a session's warnings sink."""

    def append(self, warning: str, /) -> None: ...


class ModelCall:
    """The one place for "resolve the role, check it is configured, call, fall back with a warning".

    `ModelCall(role, models, settings)` resolves the role once ([models] of aibuddy.toml and the
    environment's settings, as model_settings). Calling it runs `ask(settings)`, which makes the model calls
    and checks the reply, raising ModelError for anything unusable. The result is what `ask`
    returned, or None when the role has no model (silently) or any ModelError was raised: then
    the warning `"{error}; {fallback}"` (or `fallback(error)`, by default the error's text) goes
    to `warnings`, and the error stays in `failure` for callers that report it elsewhere
    (`warnings=None`). Other exceptions are bugs and propagate.
    """

    def __init__(self, role: str, models: Mapping[str, Any], settings: Settings) -> None:
        self.settings = model_settings(role, models, settings)
        self.failure: ModelError | None = None  # of the latest call

    @property
    def configured(self) -> bool:
        return self.settings.configured

    def __call__(
        self,
        ask: Callable[[ModelSettings], T],
        *,
        warnings: WarningSink | None,
        fallback: str | Callable[[ModelError], str] = str,
    ) -> T | None:
        self.failure = None
        if not self.settings.configured:
            return None
        try:
            return ask(self.settings)
        except ModelError as exc:
            self.failure = exc
            if warnings is not None:
                warnings.append(f"{exc}; {fallback}" if isinstance(fallback, str) else fallback(exc))
            return None


def call_role(
    role: str,
    models: Mapping[str, Any],
    settings: Settings,
    ask: Callable[[ModelSettings], T],
    *,
    warnings: WarningSink | None,
    fallback: str | Callable[[ModelError], str],
) -> T | None:
    """One model call with its fallback: `ModelCall(role, models, settings)(ask, …)`."""
    return ModelCall(role, models, settings)(ask, warnings=warnings, fallback=fallback)


_litellm_module: Any = None


def _litellm() -> Any:
    """litellm, imported and quietened once per process (its verbosity and its loggers)."""
    global _litellm_module
    from .threads import IMPORT_LOCK

    with IMPORT_LOCK:
        if _litellm_module is None:
            # Production mode stops litellm from loading a .env from the working directory; the local
            # cost map avoids a network fetch at import. Both must be set before the import.
            os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import logging
            import warnings

            # Notes pydantic makes about litellm's types while it builds them (at import and at
            # the first call) are not the user's business: never printed on stderr.
            warnings.filterwarnings("ignore", category=UserWarning, module=r"pydantic\._internal")
            import litellm

            litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners
            litellm.set_verbose = False
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            _warm_up(litellm)
            _litellm_module = litellm
    return _litellm_module


def _warm_up(litellm: Any) -> None:
    """What litellm still imports and builds at its first call (a second on a busy machine),
    done with the import, so the first model call of a process pays only the model's latency:
    a mock completion (litellm's own, no request is sent) and the HTTP client's transport."""
    try:
        hello = [{"role": "user", "content": "-"}]
        litellm.completion(model="openai/warm-up", messages=hello, mock_response="-")
        import httpcore  # noqa: F401 - imported by the first real request otherwise
    except Exception:  # noqa: BLE001, S110 - a warm-up that fails costs the first call only its time
        pass


def complete(settings: ModelSettings, messages: Sequence[Mapping[str, Any]], **options: Any) -> Any:
    """One chat completion; returns the response message (content, tool_calls). Raises ModelError
    on any failure. When the settings name a worker environment (`Settings.worker`:
    the `aibuddy` command's) it asks the warm model worker first (worker_client.py); without one,
    the call runs here."""
    if settings.worker is not None and settings.problem is None and settings.model is not None:
        import time

        from ..unix_peer import PeerUnavailable
        from . import worker_client

        began = time.monotonic()
        try:
            return worker_client.complete(settings, messages, options, settings.worker.mapping)
        except PeerUnavailable:
            # A worker that broke off after taking the request has used part of the timeout:
            # the call here gets what is left of it, so the caller never waits twice.
            left = settings.timeout - (time.monotonic() - began)
            if left <= 0:
                raise ModelError(f"{settings.role} model timed out after {settings.timeout:g}s") from None
            settings = settings._replace(timeout=left)
    return call_in_process(settings, messages, **options)


def _litellm_call(settings: ModelSettings, function: str, **arguments: Any) -> Any:
    """`litellm.<function>(model=…, **arguments)` with the role's settings and no retries, on a
    model worker thread, so the configured timeout bounds it even if the provider client ignores
    its own; anything litellm prints there is dropped, never sent to stdout. The timeout bounds
    the wait for the model's answer; litellm's one-time import (seconds on a cold start, far more
    on a busy machine) comes first, under its own bound (settings.import_timeout), so a cold
    start still reaches the model. Raises ModelError."""
    if settings.problem is not None:
        raise ModelError(f"{settings.role} model not called: {settings.problem}")
    if settings.model is None:
        raise ModelError(f"no model configured for the {settings.role} role")

    def call() -> Any:
        kwargs: dict[str, Any] = dict(
            model=settings.model, timeout=settings.timeout, num_retries=0, max_retries=0, **arguments
        )
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        return getattr(_litellm(), function)(**kwargs)

    from . import threads

    threads.gate_stdout()
    try:
        import_litellm(settings.import_timeout)
    except ModelError as exc:
        raise ModelError(f"{settings.role} model not called: {exc}") from None
    job = threads.run(call, settings.timeout)
    if job.abandoned:
        raise ModelError(f"{settings.role} model timed out after {settings.timeout:g}s")
    if job.error is not None:
        raise ModelError(_describe(job.error, settings))
    return job.result


class _Import:
    """One attempt at importing litellm, on its own thread (not a model call's), output dropped."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from . import threads

        threads.silence_this_thread()
        try:
            _litellm()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting callers
            self.error = exc
        finally:
            self.done.set()


_import_lock = threading.Lock()
_import: _Import | None = None


def import_litellm(timeout: float) -> None:
    """litellm imported (and configured) in this process, waiting at most timeout seconds for an
    import in progress; a process imports it once however many callers wait. ModelError when it
    takes longer (the import goes on, for the next call) or fails."""
    global _import
    if _litellm_module is not None:
        return
    from . import threads

    threads.gate_stdout()  # what the import prints on its thread is dropped
    with _import_lock:
        attempt = _import
        if attempt is None or attempt.done.is_set():  # none yet, or one that failed: try again
            attempt = _import = _Import()
            threading.Thread(target=attempt.run, name="aibuddy-import", daemon=True).start()
    if not attempt.done.wait(timeout):
        raise ModelError(f"litellm's import took longer than {timeout:g}s (AIBUDDY_IMPORT_TIMEOUT)")
    if attempt.error is not None:
        kind, text = type(attempt.error).__name__, " ".join(str(attempt.error).split())
        raise ModelError(f"litellm cannot be imported ({kind}: {text[:200]})")


def _after_fork_in_child() -> None:
    global _import, _import_lock
    _import, _import_lock = None, threading.Lock()  # a forked child has no importing thread


os.register_at_fork(after_in_child=_after_fork_in_child)


def call_in_process(settings: ModelSettings, messages: Sequence[Mapping[str, Any]], **options: Any) -> Any:
    """One chat completion in this process; returns litellm's response message. Raises ModelError
    on any failure."""
    result = _litellm_call(settings, "completion", messages=list(messages), **options)
    try:
        return result.choices[0].message
    except (AttributeError, IndexError, KeyError, TypeError):
        raise ModelError(f"{settings.role} model returned no message") from None


def embed(settings: ModelSettings, texts: Sequence[str]) -> list[list[float]]:
    """Embeddings of texts through litellm.embedding, one vector each, in order. Raises ModelError
    on any failure, a timeout included, or a reply that is not one vector per text."""
    result = _litellm_call(settings, "embedding", input=list(texts))
    try:
        items = sorted(result.data, key=lambda item: _item(item, "index"))
        vectors = [[float(x) for x in _item(item, "embedding")] for item in items]
    except (AttributeError, KeyError, TypeError, ValueError):
        raise ModelError(f"{settings.role} model returned no embeddings") from None
    if len(vectors) != len(texts) or any(len(v) != len(vectors[0]) or not v for v in vectors):
        raise ModelError(f"{settings.role} model returned {len(vectors)} embeddings for {len(texts)} texts")
    return vectors


def _item(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, Mapping) else getattr(item, name)


def _describe(exc: BaseException, settings: ModelSettings) -> str:
    kind = type(exc).__name__
    text = " ".join(str(exc).split())
    if "timeout" in kind.lower() or "timed out" in text.lower():
        return f"{settings.role} model timed out after {settings.timeout:g}s"
    return f"{settings.role} model failed ({kind}): {text[:200]}"


def complete_text(settings: ModelSettings, messages: Sequence[Mapping[str, Any]]) -> str:
    message = complete(settings, messages, temperature=0)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        raise ModelError(f"{settings.role} model returned an empty reply")
    return content


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_json_object(text: str) -> dict[str, Any]:
    """Leniently find the JSON object in a model reply (code fences, prose around it)."""
    candidate = _FENCE.sub("", text.strip())
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end <= start:
            raise ModelError("the model reply holds no JSON object") from None
        try:
            value = json.loads(candidate[start : end + 1])
        except json.JSONDecodeError:
            raise ModelError("the model reply is not valid JSON") from None
    if not isinstance(value, dict):
        raise ModelError("the model reply is JSON but not an object")
    return value


def complete_json(settings: ModelSettings, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return parse_json_object(complete_text(settings, messages))
