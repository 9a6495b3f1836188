"""The model layer in a long-lived process: one helper for "configured? call, else fall back with a
warning"; calls on a few long-lived threads (no thread per timed-out call); litellm's prints kept
off stdout without swapping sys.stdout under other threads; litellm configured once."""

from __future__ import annotations

import io
import logging
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from aibuddy_cli.errors import ModelError
from aibuddy_cli.models import calls as models
from aibuddy_cli.models import threads as model_workers
from aibuddy_cli.models.calls import ModelCall, ModelSettings, call_role
from aibuddy_cli.settings import Settings

CONFIGURED = {"default": "openai/test-model"}
HELLO = [{"role": "user", "content": "hi"}]


def reply(content: str) -> Any:
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])


def model_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(model_workers.THREAD_PREFIX)]


# --- the helper --------------------------------------------------------------------------------


def test_without_a_model_the_helper_does_not_call_and_does_not_warn() -> None:
    warnings: list[str] = []
    called: list[ModelSettings] = []
    nothing = Settings.read({})
    assert call_role("recall", {}, nothing, called.append, warnings=warnings, fallback="used lexical") is None
    assert called == [] and warnings == []
    disabled = ModelCall("recall", CONFIGURED, Settings.read({"AIBUDDY_MODEL_RECALL": "none"}))
    assert not disabled.configured


def test_an_answer_is_returned_with_the_roles_settings() -> None:
    warnings: list[str] = []
    environ = {"AIBUDDY_MODEL_COMPACT": "openai/small", "AIBUDDY_TIMEOUT": "3"}
    given = Settings.read(environ)
    settings = call_role("compact", CONFIGURED, given, lambda s: s, warnings=warnings, fallback="x")
    assert settings == ModelSettings("compact", "openai/small", None, 3.0) and warnings == []


def test_a_failure_falls_back_with_the_callers_warning() -> None:
    def fail(settings: ModelSettings) -> str:
        raise ModelError(f"{settings.role} model timed out after 20s")

    warnings: list[str] = []
    fallback = "used lexical ranking instead"
    nothing = Settings.read({})
    assert call_role("recall", CONFIGURED, nothing, fail, warnings=warnings, fallback=fallback) is None
    assert warnings == ["recall model timed out after 20s; used lexical ranking instead"]
    summary = ModelCall("summary", CONFIGURED, Settings.read({}))
    assert summary(fail, warnings=warnings, fallback=lambda exc: f"guide: {exc}; left as it was") is None
    assert warnings[-1] == "guide: summary model timed out after 20s; left as it was"
    assert str(summary.failure) == "summary model timed out after 20s"
    # No sink: the failure is only kept (the extraction log records it as a decision).
    extract = ModelCall("extract", CONFIGURED, Settings.read({}))
    assert extract(fail, warnings=None) is None and len(warnings) == 2
    assert str(extract.failure) == "extract model timed out after 20s"


def test_a_bad_setting_is_a_failure_with_its_warning() -> None:
    warnings: list[str] = []
    answer = call_role(
        "recall",
        {"default": 5},
        Settings.read({}),
        lambda s: models.complete_text(s, HELLO),
        warnings=warnings,
        fallback="used lexical ranking instead",
    )
    assert answer is None
    assert warnings == [
        "recall model not called: aibuddy.toml: [models] default must be a litellm model string, not 5; "
        "used lexical ranking instead"
    ]


def test_only_model_errors_fall_back() -> None:
    def broken(settings: ModelSettings) -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        call_role("recall", CONFIGURED, Settings.read({}), broken, warnings=[], fallback="x")


# --- stdout -----------------------------------------------------------------------------------


def test_litellm_prints_are_dropped_and_other_threads_keep_their_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    printing, printed = threading.Event(), threading.Event()

    class ChattyLitellm:
        @staticmethod
        def completion(**kwargs: Any) -> Any:
            print("Give Feedback / Get Help: https://github.com/BerriAI/litellm")
            printing.set()  # the call is running: another thread prints meanwhile
            printed.wait(60)  # generous bounds: events, not timings
            print("LiteLLM: another banner", flush=True)
            return reply("hello")

    def other_thread() -> None:
        printing.wait(60)
        for number in range(50):
            print(f"line {number}")
        printed.set()

    monkeypatch.setattr(models, "_litellm", lambda: ChattyLitellm)
    settings = ModelSettings("recall", "openai/test", None, 5.0)
    writer = threading.Thread(target=other_thread)
    writer.start()
    assert models.complete_text(settings, HELLO) == "hello"
    writer.join(60)
    print("after the call")
    out = captured.getvalue()
    assert "Give Feedback" not in out and "banner" not in out
    assert out == "".join(f"line {n}\n" for n in range(50)) + "after the call\n"
    # The gate is put in front of sys.stdout once, not once per call.
    models.complete_text(settings, HELLO)
    assert isinstance(sys.stdout, model_workers.StdoutGate) and sys.stdout.target is captured


# --- threads ----------------------------------------------------------------------------------


def test_timed_out_calls_cost_no_new_thread_and_queued_ones_never_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    started: list[int] = []

    class HungLitellm:
        @staticmethod
        def completion(**kwargs: Any) -> Any:
            started.append(1)
            release.wait(30)  # a provider client that ignores its own timeout
            return reply("late")

    monkeypatch.setattr(models, "_litellm", lambda: HungLitellm)
    settings = ModelSettings("recall", "openai/test", None, 0.1)
    try:
        for _ in range(3 * model_workers.WORKERS):
            began = time.monotonic()
            with pytest.raises(ModelError, match="recall model timed out after 0.1s"):
                models.complete(settings, HELLO)
            assert time.monotonic() - began < 10  # a hang would wait out the 30 s the client holds
        assert len(model_threads()) <= model_workers.WORKERS
    finally:
        release.set()
    deadline = time.monotonic() + 60  # generous: an event, not a timing
    while model_workers._workers.outstanding and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model_workers._workers.outstanding == 0
    # Only the calls that had a worker ever started; the ones given up while queued were skipped.
    assert len(started) <= model_workers.WORKERS
    # The workers are free again: a new call answers on one of them.
    monkeypatch.setattr(models, "_litellm", lambda: SimpleNamespace(completion=lambda **kw: reply("ok")))
    assert models.complete_text(ModelSettings("recall", "openai/test", None, 5.0), HELLO) == "ok"
    assert len(model_threads()) <= model_workers.WORKERS


def test_the_workers_are_daemons_so_a_hung_call_never_holds_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(models, "_litellm", lambda: SimpleNamespace(completion=lambda **kw: reply("ok")))
    models.complete(ModelSettings("recall", "openai/test", None, 5.0), HELLO)
    assert model_threads() and all(thread.daemon for thread in model_threads())


# --- litellm is configured once ---------------------------------------------------------------


def test_litellm_is_imported_and_configured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = models._litellm()
    assert litellm.suppress_debug_info is True
    assert logging.getLogger("LiteLLM").level == logging.CRITICAL
    calls: list[str] = []
    monkeypatch.setattr(logging.Logger, "setLevel", lambda self, level: calls.append(self.name))
    monkeypatch.setattr(litellm, "set_verbose", True)  # what an application chose later stays
    assert models._litellm() is litellm
    assert calls == [] and litellm.set_verbose is True


# --- litellm's import is not the model's time -----------------------------------------------------


# A real process's cold start with a timeout below the import: the first calls of
# test_worker.py::test_the_first_model_calls_start_one_worker_however_many_at_once_that_serves_the_next.


def test_the_import_bound_is_its_own_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow_import() -> Any:
        release.wait(30)
        return SimpleNamespace(completion=lambda **kw: reply("ok"))

    monkeypatch.setattr(models, "_litellm_module", None)  # as in a process that never imported it
    monkeypatch.setattr(models, "_import", None)
    monkeypatch.setattr(models, "_litellm", slow_import)
    settings = models.model_settings("recall", CONFIGURED, Settings.read({"AIBUDDY_IMPORT_TIMEOUT": "0.2"}))
    assert settings.import_timeout == 0.2 and settings.timeout == 20
    try:
        with pytest.raises(ModelError, match=r"not called: litellm's import took longer than 0\.2s"):
            models.complete_text(settings, HELLO)
    finally:
        release.set()
    assert models.complete_text(settings, HELLO) == "ok"  # the import went on, for the next call
    bad = models.model_settings("recall", CONFIGURED, Settings.read({"AIBUDDY_IMPORT_TIMEOUT": "soon"}))
    assert bad.problem == "AIBUDDY_IMPORT_TIMEOUT must be a number of seconds from 0 to 3600, not 'soon'"
    soon = Settings.read({"AIBUDDY_IMPORT_TIMEOUT": "soon"})
    assert models.model_settings("recall", {}, soon).problem is None


def test_an_import_slower_than_the_model_timeout_does_not_count_against_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The in-process form of the cold start above, for certain: the import outlasts the call's
    timeout several times over, and the call, timed from the import's end, is answered."""
    imported = threading.Event()

    def slow_import() -> Any:  # the first time only, as an import is: then the module is there
        if not imported.is_set():
            imported.wait(1.0)  # the whole second, five times the call's timeout
            imported.set()
        return SimpleNamespace(completion=lambda **kw: reply("ok"))

    monkeypatch.setattr(models, "_litellm_module", None)  # as in a process that never imported it
    monkeypatch.setattr(models, "_import", None)
    monkeypatch.setattr(models, "_litellm", slow_import)
    settings = models.model_settings(
        "recall", CONFIGURED, Settings.read({"AIBUDDY_TIMEOUT": "0.2", "AIBUDDY_IMPORT_TIMEOUT": "600"})
    )
    assert (settings.timeout, settings.import_timeout) == (0.2, 600)
    assert models.complete_text(settings, HELLO) == "ok"
