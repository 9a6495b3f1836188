"""Which model each role uses: `ModelSettings`, resolved from [models] of aibuddy.toml and the
environment's settings (`settings.Settings`), with the bounds of a call (timeout, litellm's
import) and whether it goes through the model worker. No model is called here (calls.py calls
them, worker_client.py sends them to the worker), so both import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

# declared with the other [models] keys
from ..config import CONFIG_FILE, DEFAULT_TIMEOUT, MAX_KEEP_WORKER, ROLES
from ..settings import Settings

_DISABLED = {"", "none", "off", "false", "0"}
# litellm's one-time import (seconds; far more on a busy machine) has its own bound: a start-up
# cost is not a slow model. The model's timeout starts once litellm is imported.
DEFAULT_IMPORT_TIMEOUT = 120.0
MAX_IMPORT_TIMEOUT = 3600.0


class Environment:
    """A caller's environment mapping, held as it is: compared by identity, and its repr never
    shows the values (provider keys), wherever a settings tuple is printed."""

    __slots__ = ("mapping",)

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self.mapping = mapping

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Environment) and other.mapping is self.mapping

    def __hash__(self) -> int:
        return id(self.mapping)

    def __repr__(self) -> str:
        return f"Environment(<{len(self.mapping)} variables>)"


class ModelSettings(NamedTuple):
    role: str
    model: str | None
    api_base: str | None
    timeout: float
    # A setting that cannot be used (`default = 5`, `timeout = "abc"`): the role counts as
    # configured and every call fails with this message, so callers fall back as for any failure.
    problem: str | None = None
    # Seconds litellm's import may take before the first call of a process (AIBUDDY_IMPORT_TIMEOUT).
    import_timeout: float = DEFAULT_IMPORT_TIMEOUT
    # The environment a model worker serves this call in (`Settings.worker` says whether); None: the
    # call runs in this process. Not sent to the worker, which calls in its own process.
    worker: Environment | None = None
    # Seconds the model worker serving this call stays up unused ([models] keep_worker); None: as
    # long as its own start took (the worker measures it). Sent with each request.
    keep_worker: float | None = None

    @property
    def configured(self) -> bool:
        return self.model is not None or self.problem is not None


def model_settings(role: str, models: Mapping[str, Any], settings: Settings) -> ModelSettings:
    """AIBUDDY_MODEL_<ROLE> > AIBUDDY_MODEL > [models].<role> > [models].default; "none" disables.

    Never raises for a bad value: it becomes `problem`, naming the variable or the aibuddy.toml key.
    """
    if role not in ROLES:
        raise ValueError(f"unknown model role {role!r}")
    problem: str | None = None  # a model setting that cannot be used
    model: Any = None
    for source, candidate in (
        (f"AIBUDDY_MODEL_{role.upper()}", settings.role_models.get(role)),
        ("AIBUDDY_MODEL", settings.model),
        (f"{CONFIG_FILE}: [models] {role}", models.get(role)),
        (f"{CONFIG_FILE}: [models] default", models.get("default")),
    ):
        if candidate is not None:
            model = candidate
            if not isinstance(model, str):
                problem, model = f"{source} must be a litellm model string, not {model!r}", None
            elif model.strip().lower() in _DISABLED:
                model = None
            break
    if settings.timeout is not None:
        timeout_source, raw_timeout = "AIBUDDY_TIMEOUT", settings.timeout
    else:
        timeout_source = f"{CONFIG_FILE}: [models] timeout"
        raw_timeout = models.get("timeout", DEFAULT_TIMEOUT)
    try:
        timeout = float(raw_timeout)
        if isinstance(raw_timeout, bool) or not 0 < timeout <= 600:
            raise ValueError
    except (TypeError, ValueError):
        timeout = DEFAULT_TIMEOUT
        if model is not None:  # a broken timeout matters only to a role that has a model
            problem = f"{timeout_source} must be a number of seconds from 0 to 600, not {raw_timeout!r}"
    try:
        import_bound = import_timeout(settings)
    except ValueError as exc:
        import_bound = DEFAULT_IMPORT_TIMEOUT
        if model is not None:
            problem = str(exc)
    api_base = models.get("api_base")
    if api_base is not None and not isinstance(api_base, str):
        api_base = None
        if model is not None:
            problem = f"{CONFIG_FILE}: [models] api_base must be a URL string, not {models['api_base']!r}"
    keep_worker = models.get("keep_worker")
    if keep_worker is not None:
        try:
            if isinstance(keep_worker, bool) or not 0 <= float(keep_worker) <= MAX_KEEP_WORKER:
                raise ValueError
            keep_worker = float(keep_worker)
        except (TypeError, ValueError):
            if model is not None:
                problem = (
                    f"{CONFIG_FILE}: [models] keep_worker must be a number of seconds from 0 to "
                    f"{MAX_KEEP_WORKER:g}, not {keep_worker!r}"
                )
            keep_worker = None
    return ModelSettings(
        role=role,
        model=model.strip() if model else None,
        api_base=api_base,
        timeout=timeout,
        problem=problem,
        import_timeout=import_bound,
        worker=Environment(settings.environ) if settings.worker else None,
        keep_worker=keep_worker,
    )


def import_timeout(settings: Settings) -> float:
    """AIBUDDY_IMPORT_TIMEOUT: the seconds litellm's one-time import may take (default 120).
    ValueError, naming the variable, for a value that is not a number from 0 to 3600."""
    raw = settings.import_timeout
    if raw is None:
        return DEFAULT_IMPORT_TIMEOUT
    try:
        value = float(raw)
        if not 0 < value <= MAX_IMPORT_TIMEOUT:
            raise ValueError
    except ValueError:
        expected = f"a number of seconds from 0 to {MAX_IMPORT_TIMEOUT:g}"
        raise ValueError(f"AIBUDDY_IMPORT_TIMEOUT must be {expected}, not {raw!r}") from None
    return value
