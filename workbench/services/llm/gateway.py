"""The provider gateway: the only module that imports litellm, and only when first needed.

    gateway = Gateway({"local": ProviderConfig(name="local", model="openai/qwen2.5",
                                               api_base="http://127.0.0.1:8000/v1")})
    result = gateway.call("local", [{"role": "user", "content": "Hello"}], cancel=event)

``Gateway.call`` is synchronous and thread-safe, meant for worker threads. It never raises: every
outcome is a :class:`CallResult` (ok, error, rate_limited or cancelled). Per provider it keeps
at most ``max_concurrency`` requests in flight and at most ``rpm`` requests sent in any 60 s
window, retries included; it retries timeouts, refused connections and 5xx answers up to
``max_retries`` times with exponential backoff and jitter, honouring ``Retry-After``. A 429 uses
no retry: it cuts the concurrency of the deployment that answered it and pauses that deployment
for its ``Retry-After`` (:mod:`.adaptive`), and the call is sent again once it may, until it has
been refused for the provider's ``max_wait_s``. Keys are read at call time (see
:mod:`workbench.services.llm.secrets`) and scrubbed from every text it returns or logs. No Qt
here, so the headless CLI uses the same gateway.

A provider with ``deployments`` (several servers behind one name) is served by one litellm
``Router`` per gateway, built on the first call to it (on that worker thread): one model group
named after the provider, picking a deployment at random among those not busy (``simple-shuffle``,
weighted by their rpm/tpm). The provider's ``max_concurrency`` and ``rpm`` still gate all its
deployments together; a deployment's own ``max_concurrency`` and ``rpm``, and its adaptive limit,
are held here around the request the Router sends to it (a deployment whose slots are all taken
or that is paused after a 429 is skipped while another is free). The Router never retries (``num_retries=0``): this loop
does, and each retry skips the deployments that call already failed on, while a failed
deployment sits out a cooldown for every call. Each result names the deployment that answered.

Importing litellm takes seconds: :func:`warm_up` does it on a background thread ahead of the
first call, and :func:`is_ready` says whether it is done. docs/providers.md has the user's side.
"""

from __future__ import annotations

import concurrent.futures
import copy
import gc
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.core.runs.providers import SAMPLING_KEYS, ProviderConfig, capped
from workbench.services.llm.adaptive import AdaptiveLimit, LimitHistory, Ticket
from workbench.services.llm.cache import CacheBackend, MemoryCacheBackend, ResponseCache, cache_key
from workbench.services.llm.limits import (
    Backoff,
    Clock,
    ConcurrencyGate,
    RateLimiter,
    Sleep,
    event_sleep,
    parse_retry_after,
    utc_stamp,
)
from workbench.services.llm.reply_cost import remember_unmapped, reply_cost
from workbench.services.llm.result import RETRYABLE, CallResult
from workbench.services.llm.secrets import (
    SECRET_FILTER,
    MissingKey,
    ResolvedKey,
    ambient_secrets,
    install_filter,
    resolve_key,
    scrub,
    scrub_value,
)
from workbench.services.llm.structured import response_format, supports_schema
from workbench.services.llm.wire import WireRecord, WireTap, classify

__all__ = ["Gateway", "CallResult", "ResponseCache", "CacheBackend", "MemoryCacheBackend", "Backoff",
           "RateLimiter", "scrub", "warm_up", "is_ready", "NO_KEY_PLACEHOLDER"]

log = logging.getLogger(__name__)
NO_KEY_PLACEHOLDER = "no-key"  # sent to a keyless api_base, so no ambient cloud key can leak there
MAX_ERROR_CHARS = 2000
_LOGGERS = ("workbench.services.llm.gateway", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai",
            "openai._base_client", "httpx", "httpcore.http11", "httpcore.connection")

install_filter(__name__)  # our own log lines are scrubbed already; this is the second lock

_EXECUTOR_HOLDERS = ("litellm.litellm_core_utils.thread_pool_executor", "litellm.utils",
                     "litellm.litellm_core_utils.litellm_logging", "litellm.litellm_core_utils.streaming_handler")

DEPLOYMENT_COOLDOWN_S = 10.0  # a deployment that failed is left out of the routing this long
_local = threading.local()  # the _Call a worker thread is sending, for the Router's pick hook

_litellm: Any = None
_router_cls: Any = None
_wire: WireTap | None = None
_warmed = False
_import_lock = threading.Lock()


class _InlineExecutor:
    """Stands in for litellm's logging thread pool: runs its post-call task in the calling thread.

    litellm hands a success-logging task to a pool that starts up to 100 threads that never end.
    The workbench registers no litellm callbacks, so the task is short, and running it inline
    leaves no thread behind (the test suite fails any test that leaves one)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # logging is best effort, as in litellm
            future.set_exception(exc)
        return future


def _load() -> Any:
    """Import and configure litellm once (thread-safe); returns the module."""
    global _litellm, _wire
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # or the import goes online
            import importlib

            import litellm

            litellm.suppress_debug_info = True
            inline = _InlineExecutor()
            for name in _EXECUTOR_HOLDERS:  # each module bound the pool under its own name
                try:
                    importlib.import_module(name).executor = inline
                except Exception:  # a module renamed in some litellm release: its pool stays
                    log.debug("cannot replace litellm's executor in %s", name, exc_info=True)
            try:  # the TLS settings litellm itself would use (SSL_VERIFY, SSL_CERT_FILE, ...)
                from litellm.llms.custom_httpx.http_handler import get_ssl_configuration

                verify: Any = get_ssl_configuration()
            except Exception:
                verify = True
            _wire = WireTap(verify)
            litellm.client_session = _wire.client  # litellm's OpenAI-compatible path sends through it
            install_filter(*_LOGGERS)
            remember_unmapped(litellm)
            # litellm's import leaves about 370,000 objects the collector tracks, all of them
            # module-level and never freed; each full collection then walked them all, 180 ms
            # with the interpreter lock held, in the middle of a run (or of the window's paint).
            # Frozen, they are out of its sight (as the window's own start-up is: ui/app.py).
            gc.freeze()
            _litellm = litellm
    return _litellm


def warm_up() -> None:
    """Import litellm in the calling (background) thread and prime its first-call imports."""
    global _warmed
    litellm = _load()
    if _warmed:
        return
    try:
        import openai.resources.chat  # noqa: F401 - loaded lazily by the first real call otherwise

        litellm.completion(model="openai/warm-up", messages=[{"role": "user", "content": "hi"}],
                           mock_response="ok", api_key=NO_KEY_PLACEHOLDER)
    except Exception:  # warming is an optimisation only
        log.debug("litellm warm-up call failed", exc_info=True)
    _warmed = True


def _router_class(litellm: Any) -> Any:
    """litellm's ``Router``, told which deployment it picked for the current thread's call: its
    sync path calls ``routing_strategy_pre_call_checks`` with the deployment just before sending."""
    global _router_cls
    if _router_cls is None:
        class _GatewayRouter(litellm.Router):  # type: ignore[name-defined,misc]
            def routing_strategy_pre_call_checks(self, deployment: dict) -> None:
                super().routing_strategy_pre_call_checks(deployment)
                call = getattr(_local, "call", None)
                if call is not None:
                    call._picked(deployment)

        _router_cls = _GatewayRouter
    return _router_cls


class _Cancelled(Exception):
    """Cancelled while waiting for a deployment's own slot."""


class _OutOfTime(Exception):
    """A deployment's pause lasts past the time this call may still spend on refusals."""


class _Deployments:
    """A provider's deployments behind one litellm Router, with their keys (resolved once, when the
    Router is built) and their own limits."""

    def __init__(self, gw: Gateway, name: str, cfg: ProviderConfig, litellm: Any):
        given = gw._keys.get(name)
        self.keys: list[ResolvedKey] = []
        model_list = []
        for i, d in enumerate(cfg.deployments):
            try:
                if d.key_env or d.key_keyring:
                    key = resolve_key(d.key_env, d.key_keyring)
                elif given:
                    key = ResolvedKey(given, "given")
                else:
                    key = resolve_key(cfg.key_env, cfg.key_keyring)
            except MissingKey as exc:
                raise MissingKey(f"deployments[{i}] ({d.api_base}): {exc}") from None
            self.keys.append(key)
            SECRET_FILTER.remember(key.value)
            params: dict[str, Any] = {"model": d.model or cfg.model, "api_base": d.api_base,
                                      "api_key": key.value or NO_KEY_PLACEHOLDER,
                                      "timeout": d.timeout_s or cfg.timeout_s}
            params.update({k: v for k, v in (("rpm", d.rpm), ("tpm", d.tpm)) if v})
            model_list.append({"model_name": name, "litellm_params": params, "model_info": {"id": _dep_id(name, i)}})
        self.secrets = {k.value for k in self.keys if k.value}
        # Building a Router registers each deployment's model in litellm's global price map with no
        # price, after which litellm prices that model at $0 for every later call, here and in
        # every other gateway. An unpriced model must stay "unknown" (FACTS: never $0), so the map
        # is put back as it was.
        prices = dict(litellm.model_cost)
        try:
            self.router = _router_class(litellm)(
                model_list=model_list, routing_strategy="simple-shuffle", num_retries=0, allowed_fails=0,
                cooldown_time=DEPLOYMENT_COOLDOWN_S, set_verbose=False)
        finally:
            for added in set(litellm.model_cost) - set(prices):
                del litellm.model_cost[added]
            litellm.model_cost.update(prices)


def _dep_id(provider: str, index: int) -> str:
    return f"{provider}[{index}]"


def is_ready() -> bool:
    """True once litellm is imported: calls no longer pay the import."""
    return _litellm is not None


def _now_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


class Gateway:
    """Calls to configured providers, with per-provider limits, retries and an optional cache.

    ``clock`` and ``sleep`` drive the rate limiter and backoff waits (inject fakes in tests);
    ``rate_window_s`` is the rpm window (60 s; tests may scale it down); ``seed`` makes backoff
    jitter reproducible; ``max_retry_after_s`` caps how long a ``Retry-After`` may make a call
    wait before it gives up with ``rate_limited``.
    """

    def __init__(self, providers: Mapping[str, ProviderConfig | Mapping[str, Any]], *,
                 cache: ResponseCache | None = None, seed: int | None = None,
                 clock: Clock = time.monotonic, sleep: Sleep = event_sleep, rate_window_s: float = 60.0,
                 backoff: Backoff | None = None, max_retry_after_s: float = 120.0,
                 keys: Mapping[str, str] | None = None):
        self.providers: dict[str, ProviderConfig] = {}
        for name, cfg in providers.items():
            if not isinstance(cfg, ProviderConfig):
                cfg = ProviderConfig.model_validate({"name": name, **dict(cfg)})
            self.providers[name] = cfg
        self.cache = cache
        self.seed = seed
        self.backoff = backoff or Backoff()
        self.max_retry_after_s = max_retry_after_s
        # Keys given by the caller, per provider (a key typed in the provider dialog and not yet
        # stored, for its connection test); any other key is looked up at call time.
        self._keys = dict(keys or {})
        self._sleep, self._clock = sleep, clock
        self.gates = {n: ConcurrencyGate(c.max_concurrency) for n, c in self.providers.items()}
        # The concurrency each deployment gets now (a provider without deployments is one), cut on
        # 429s and grown back on clean calls (SPEC §10); every change goes to ``limit_history``.
        self.limit_history = LimitHistory()
        self.adaptive: dict[str, AdaptiveLimit] = {}
        for n, c in self.providers.items():
            if c.simulated:
                continue
            if not c.deployments:
                self.adaptive[n] = AdaptiveLimit(n, c.max_concurrency, clock=clock, sleep=sleep,
                                                 record=self.limit_history.record)
            for i, d in enumerate(c.deployments):
                self.adaptive[_dep_id(n, i)] = AdaptiveLimit(
                    n, min(d.max_concurrency or c.max_concurrency, c.max_concurrency), deployment=i, clock=clock,
                    sleep=sleep, record=self.limit_history.record)
        self.limiters = {n: RateLimiter(c.rpm, rate_window_s, clock=clock, sleep=sleep)
                         for n, c in self.providers.items() if c.rpm}
        # A deployment's own limits, by provider and index (its provider's gate and limiter hold as well).
        self.deployment_gates = {(n, i): ConcurrencyGate(d.max_concurrency) for n, c in self.providers.items()
                                 for i, d in enumerate(c.deployments) if d.max_concurrency}
        self.deployment_limiters = {(n, i): RateLimiter(d.rpm, rate_window_s, clock=clock, sleep=sleep)
                                    for n, c in self.providers.items() for i, d in enumerate(c.deployments) if d.rpm}
        self._deployments: dict[str, _Deployments] = {}
        self._deployments_lock = threading.Lock()

    warm_up = staticmethod(warm_up)
    is_ready = staticmethod(is_ready)

    def _routed(self, name: str, litellm: Any) -> _Deployments:
        """The Router serving provider ``name``'s deployments, built on first use (raises MissingKey)."""
        with self._deployments_lock:
            routed = self._deployments.get(name)
            if routed is None:
                routed = self._deployments[name] = _Deployments(self, name, self.providers[name], litellm)
            return routed

    def call(self, provider: str, messages: Sequence[Mapping[str, Any]], *, timeout_s: float | None = None,
             max_tokens: int | None = None, temperature: float | None = None, sample_index: int = 0,
             cancel: threading.Event | None = None,
             on_wait: Callable[[dict[str, Any]], None] | None = None,
             sampling: Mapping[str, Any] | None = None, cap: int | None = None,
             schema: tuple[str, dict] | None = None, structured_output: str | None = None) -> CallResult:
        """One chat completion, retried as configured. Never raises. ``on_wait`` hears of each
        wait before a retry (a 429's ``Retry-After``, a backoff), on the calling thread, as it begins.

        Sampling: ``sampling`` (temperature, top_p, max_tokens, seed, stop; the provider's own when
        None) with ``max_tokens``/``temperature`` over it; ``cap`` is the call kind's output cap, and
        the smaller of it and ``max_tokens`` is sent. ``schema`` (``(name, JSON schema)``) is sent as
        ``response_format`` in the form the provider's ``structured_output`` (or the one given)
        says (see :mod:`.structured`)."""
        try:
            call = _Call(self, provider, messages, timeout_s, max_tokens, temperature, sample_index, cancel,
                         sampling=sampling, cap=cap)
            call.on_wait = on_wait
            call.schema, call.structured_output = schema, structured_output
        except Exception as exc:  # messages that are not mappings, a timeout that is not a number...
            call = _Call(self, provider, (), None, None, None, sample_index, cancel)
            return call.finish("error", error=f"invalid call: {type(exc).__name__}: {exc}", error_kind="bad_request")
        try:
            result = call.run()
        except Exception as exc:  # a bug of ours or an unexpected library error: still a result
            log.error("gateway call to %s failed unexpectedly: %s", provider, scrub(repr(exc), call.secrets))
            result = call.finish("error", error=f"{type(exc).__name__}: {exc}", error_kind="internal")
        level = logging.DEBUG if result.ok else logging.INFO
        log.log(level, "%s %s: %s after %d attempt(s)%s", provider, result.model, result.status,
                result.attempts, f" ({result.error_kind}: {result.error})" if result.error else "")
        return result


class _Call:
    """The state of one ``Gateway.call``: its request, secrets, attempts and timings."""

    def __init__(self, gw: Gateway, provider: str, messages: Sequence[Mapping[str, Any]], timeout_s: float | None,
                 max_tokens: int | None, temperature: float | None, sample_index: int,
                 cancel: threading.Event | None, *, sampling: Mapping[str, Any] | None = None,
                 cap: int | None = None):
        self.gw, self.provider, self.cancel, self.sample_index = gw, provider, cancel, sample_index
        self.on_wait: Callable[[dict[str, Any]], None] | None = None
        self.schema: tuple[str, dict] | None = None
        self.structured_output: str | None = None
        self.cfg = gw.providers.get(provider)
        self.model = self.cfg.model if self.cfg else "?"
        self.messages = [dict(m) for m in messages]
        given = dict(sampling) if sampling is not None else (self.cfg.sampling() if self.cfg else {})
        given.update({k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if v is not None})
        given["max_tokens"] = capped(given.get("max_tokens"), cap)
        # Sent in this order; a key left unset is not sent at all (a seed only where one is set).
        self.params = {k: given[k] for k in SAMPLING_KEYS if given.get(k) is not None}
        self.timeout_given = timeout_s is not None
        self.timeout_s = float(timeout_s or (self.cfg.timeout_s if self.cfg else 60.0))
        self.routed: _Deployments | None = None
        self.failed_on: list[str] = []  # deployments this call failed on, skipped by its retries
        self.pick: tuple[int, str] | None = None
        self.held: list[Any] = []
        self.ticket: tuple[AdaptiveLimit, Ticket] | None = None  # the adaptive slot this attempt holds
        self.refused_since: float | None = None  # on the gateway's clock: this call's first 429
        self.deadline: float | None = None  # ... plus max_wait_s: refusals are waited out until then
        self.refusals = 0
        self._wait_from: float | None = None  # when the wait after the last 429 began (its attempt log)
        self.request = {"model": self.model, "api_base": self.cfg.api_base if self.cfg else None,
                        "messages": self.messages, "params": self.params, "timeout_s": self.timeout_s,
                        "sample_index": sample_index}
        self.ckey = ""
        self.key = ResolvedKey(None, "none")
        self.secrets: set[str] = set()
        self.attempts = 0
        self.attempt_log: list[dict[str, Any]] = []
        self.queued_s = 0.0
        self.started_wall = time.time()
        self.t0 = time.perf_counter()

    # -- the result ------------------------------------------------------------------------

    def finish(self, status: str, **fields: Any) -> CallResult:
        result = CallResult(
            status=status, provider=self.provider, model=self.model, attempts=self.attempts,
            request=self.request, sample_index=self.sample_index, key_source=self.key.source,
            queued_ms=round(self.queued_s * 1000.0, 3), attempt_log=tuple(self.attempt_log),
            started_at=utc_stamp(self.started_wall), finished_at=utc_stamp(),
            **({"deployment": self.pick[0], "api_base": self.pick[1]} if getattr(self, "pick", None) else {}),
            **fields)
        if result.error and len(result.error) > MAX_ERROR_CHARS:
            result = result.but(error=result.error[:MAX_ERROR_CHARS] + "...")
        if not self.secrets:
            return result
        clean = CallResult.from_dict(scrub_value(result.to_dict(), self.secrets))  # type: ignore[arg-type]
        return clean

    def _waited(self, start: float) -> None:
        self.queued_s += time.perf_counter() - start

    def _cancelled(self, last: dict[str, Any] | None = None) -> CallResult:
        error = "cancelled"
        if last and last.get("error"):
            error = f"cancelled while waiting to retry after: {last['error']}"
        return self.finish("cancelled", error=error, error_kind="cancelled",
                           response_raw=(last or {}).get("response_raw"),
                           http_status=(last or {}).get("http_status"))

    # -- the call --------------------------------------------------------------------------

    def run(self) -> CallResult:
        early = self.prepare()
        if early is not None:
            return early
        cfg = self.cfg
        assert cfg is not None
        if cfg.deployments:
            try:
                litellm = _load()
            except Exception as exc:
                return self.finish("error", error=f"litellm could not be imported: {exc}", error_kind="internal")
            try:
                self.routed = self.gw._routed(self.provider, litellm)
            except MissingKey as exc:
                return self.finish("error", error=f"missing API key for provider {self.provider!r}: {exc}",
                                   error_kind="missing_key")
            self.secrets = ambient_secrets() | self.routed.secrets
        else:
            missing = self.resolve_key()
            if missing is not None:
                return missing
            try:
                litellm = _load()
            except Exception as exc:
                return self.finish("error", error=f"litellm could not be imported: {exc}", error_kind="internal")
        rng = random.Random(f"{self.gw.seed}:{self.ckey}") if self.gw.seed is not None else random.Random()
        return self._attempts(litellm, rng)

    def prepare(self) -> CallResult | None:
        """The request's params (``response_format`` included) and cache key; a result when the
        call ends before any request (no such provider, the simulated panel, a cache hit)."""
        cfg = self.cfg
        if cfg is None:
            return self.finish("error", error=f"no provider named {self.provider!r}", error_kind="bad_request")
        if cfg.simulated:
            return self.finish("error", error=f"provider {self.provider!r} is the simulated panel: the runner "
                               "answers it without the gateway", error_kind="bad_request")
        if self.schema is not None:
            mode = self.structured_output or cfg.structured_output
            if mode == "auto":  # the one question that needs litellm before the cache is asked
                try:
                    litellm_mod = _load()
                except Exception as exc:
                    return self.finish("error", error=f"litellm could not be imported: {exc}", error_kind="internal")
                mode = "json_schema" if supports_schema(litellm_mod, cfg.model) else "off"
            form = response_format(mode, *self.schema)
            if form is not None:
                self.params["response_format"] = form
            self.request["structured_output"] = mode  # as resolved: "auto" became json_schema or off
        base = cfg.api_base if not cfg.deployments else " | ".join(d.api_base for d in cfg.deployments)
        self.ckey = cache_key(cfg.model, base, self.messages, self.params, self.sample_index)
        if self.gw.cache is not None:
            hit = self.gw.cache.get(self.ckey)
            if hit is not None:  # the stored reply, as this call's (a hit costs nothing and sends nothing)
                return CallResult.from_dict(hit).but(
                    provider=self.provider, request=self.request, cached=True, attempts=0, cost_usd=0.0,
                    cost_source="cache", attempt_log=(), queued_ms=0.0, latency_ms=_now_ms(self.t0),
                    key_source="none", started_at=utc_stamp(self.started_wall), finished_at=utc_stamp())
        return None

    def resolve_key(self) -> CallResult | None:
        """The provider's key (given, or named by it), remembered for scrubbing; a missing_key
        result when it cannot be found."""
        cfg = self.cfg
        assert cfg is not None
        try:
            given = self.gw._keys.get(self.provider)
            self.key = ResolvedKey(given, "given") if given else resolve_key(cfg.key_env, cfg.key_keyring)
        except MissingKey as exc:
            return self.finish("error", error=f"missing API key for provider {self.provider!r}: {exc}",
                               error_kind="missing_key")
        self.secrets = ambient_secrets() | ({self.key.value} if self.key.value else set())
        SECRET_FILTER.remember(self.key.value)
        return None

    def _api_key(self) -> str | None:
        if self.key.value:
            return self.key.value
        # No key named: a custom api_base (a local server) gets a placeholder, so litellm cannot
        # fall back on an ambient OPENAI_API_KEY and send it there; a cloud provider is left to
        # litellm's own credential discovery (OPENAI_API_KEY, AWS profiles, ...).
        return NO_KEY_PLACEHOLDER if self.cfg and self.cfg.api_base else None

    def _attempts(self, litellm: Any, rng: random.Random) -> CallResult:
        cfg = self.cfg
        assert cfg is not None
        gate, limiter = self.gw.gates[self.provider], self.gw.limiters.get(self.provider)
        adaptive = self.gw.adaptive.get(self.provider)  # None for a provider with deployments: see _picked
        last: dict[str, Any] = {}
        failures = 0  # failures other than 429s: these use up max_retries
        while True:
            start = time.perf_counter()
            if not gate.acquire(self.cancel):
                self._waited(start)
                return self._cancelled(last)
            try:
                if adaptive is not None:
                    ticket = adaptive.acquire(self.cancel, self.deadline)
                    if ticket is None:
                        self._waited(start)
                        return self._cancelled(last) if self._is_cancelled() else self._out_of_time(last)
                    self.ticket = (adaptive, ticket)
                if limiter is not None and not limiter.acquire(self.cancel):
                    self._waited(start)
                    self._release_ticket({"error_kind": "cancelled"}, rng)
                    return self._cancelled(last)
                self._waited(start)
                self._note_wait()
                if self._is_cancelled():
                    self._release_ticket({"error_kind": "cancelled"}, rng)
                    return self._cancelled(last)
                self.attempts += 1
                outcome = self._send(litellm)
                self._release_ticket(outcome, rng)
            finally:
                gate.release()
            if outcome.get("error_kind") == "cancelled":  # waiting for a deployment's own slot: nothing sent
                self.attempts -= 1
                return self._cancelled(last)
            if outcome.get("error_kind") == "out_of_time":  # ... or for its pause, past max_wait_s
                self.attempts -= 1
                return self._out_of_time(last)
            self.attempt_log.append({k: outcome.get(k) for k in
                                     ("http_status", "error_kind", "latency_ms", "retry_after_s")})
            if self.pick is not None:
                self.attempt_log[-1]["deployment"] = self.pick[0]
            if outcome["status"] == "ok":
                result = self.finish("ok", **outcome["fields"])
                if self.gw.cache is not None:
                    self.gw.cache.put(self.ckey, result.to_dict())
                return result
            last = outcome
            kind, retry_after = outcome["error_kind"], outcome.get("retry_after_s")
            if kind == "rate_limited":
                refused = self._refused(outcome, rng)
                if refused is not None:
                    return refused
                continue
            failures += 1
            if kind not in RETRYABLE or failures > cfg.max_retries:
                return self._failed("error", outcome)
            if retry_after is not None and retry_after > self.gw.max_retry_after_s:
                outcome = {**outcome, "error": f"{outcome['error']} (the server asked to retry after "
                           f"{retry_after:g} s, more than the {self.gw.max_retry_after_s:g} s allowed)"}
                return self._failed("error", outcome)
            delay = self.gw.backoff.delay(failures, rng, retry_after)
            self.attempt_log[-1]["waited_s"] = round(delay, 4)
            self._tell_wait(kind, delay, outcome)
            log.info("%s: attempt %d failed (%s), retrying in %.2f s", self.provider, self.attempts, kind, delay)
            start = time.perf_counter()
            cancelled = self.gw._sleep(delay, self.cancel)
            self._waited(start)
            if cancelled:
                return self._cancelled(last)

    # -- 429s: waited out on the deployment's pause, until max_wait_s (SPEC §10) ----------------
    def _refused(self, outcome: dict[str, Any], rng: random.Random) -> CallResult | None:
        """A 429 (or every deployment cooling down): None to send again once the deployment's pause
        allows, or the rate_limited result when this call has been refused for max_wait_s."""
        assert self.cfg is not None
        now = self.gw._clock()
        if self.refused_since is None:
            self.refused_since = now
            self.deadline = now + self.cfg.max_wait_s
        self.refusals += 1
        spent, allowed = now - self.refused_since, self.cfg.max_wait_s
        retry_after = outcome.get("retry_after_s")
        if retry_after is not None and spent + retry_after > allowed:
            return self._failed("rate_limited", {**outcome, "error": f"{outcome['error']} (the server asked to "
                                f"retry after {retry_after:g} s, past the provider's max_wait_s of {allowed:g} s"
                                f"{f' ({spent:.3g} s spent already)' if spent else ''})"})
        if spent >= allowed:
            return self._out_of_time(outcome)
        limit = self.gw.adaptive.get(_dep_id(self.provider, self.pick[0]) if self.pick is not None else self.provider)
        wait = limit.pause_left() if limit is not None and outcome.get("deployment_answered") else None
        if wait is None:  # no deployment answered (the Router had them all cooling down): wait here
            wait = min(retry_after if retry_after is not None else self.gw.backoff.delay(self.refusals, rng),
                       self.deadline - now)
            self._tell_wait("rate_limited", wait, outcome)
            start = time.perf_counter()
            if self.gw._sleep(wait, self.cancel):
                self._waited(start)
                return self._cancelled(outcome)
            self._waited(start)
            return None
        self._tell_wait("rate_limited", wait, outcome)
        self._wait_from = now  # the next attempt notes how long this one waited
        return None

    def _out_of_time(self, last: dict[str, Any]) -> CallResult:
        assert self.cfg is not None
        error = last.get("error") or "rate-limited"
        return self._failed("rate_limited", {**last, "error_kind": "rate_limited", "error": f"{error} (refused "
                            f"for the provider's max_wait_s of {self.cfg.max_wait_s:g} s)"})

    def _note_wait(self) -> None:
        """The attempt before this one waited out a pause: how long, in its attempt log."""
        began = self._wait_from
        if began is not None and self.attempt_log:
            self.attempt_log[-1]["waited_s"] = round(self.gw._clock() - began, 4)
        self._wait_from = None

    def _release_ticket(self, outcome: dict[str, Any], rng: random.Random) -> None:
        """Give the adaptive slot back, telling its limit how the request went."""
        if self.ticket is None:
            return
        limit, ticket = self.ticket
        self.ticket = None
        kind = outcome.get("error_kind")
        if outcome.get("status") == "ok":
            limit.release(ticket, "ok")
        elif kind == "rate_limited":
            outcome["deployment_answered"] = True
            retry_after = outcome.get("retry_after_s")
            # Retry-After 0, or none: this call's backoff, so a server that says "now" forever
            # is not asked again in a tight loop for max_wait_s.
            pause = self.gw.backoff.delay(self.refusals + 1, rng) if not retry_after else None
            limit.release(ticket, "rate_limited", retry_after_s=retry_after or None, pause_s=pause)
        else:
            limit.release(ticket, kind or "error")

    def _tell_wait(self, kind: str, delay: float, outcome: dict[str, Any]) -> None:
        if self.on_wait is None:  # the GUI shows the wait as it happens
            return
        try:
            self.on_wait({"attempt": self.attempts, "error_kind": kind, "delay_s": delay,
                          "retry_after_s": outcome.get("retry_after_s"), "http_status": outcome.get("http_status"),
                          "error": outcome.get("error")})
        except Exception:  # a listener's bug never fails the call
            log.exception("on_wait listener failed")

    def _is_cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def _failed(self, status: str, outcome: dict[str, Any]) -> CallResult:
        return self.finish(status, error=outcome["error"], error_kind=outcome["error_kind"],
                           response_raw=outcome.get("response_raw"), http_status=outcome.get("http_status"),
                           latency_ms=outcome.get("latency_ms"))

    def _send(self, litellm: Any) -> dict[str, Any]:
        """One request. Returns a dict: status ok with result fields, or the failure's details."""
        cfg = self.cfg
        assert cfg is not None and _wire is not None
        logged: dict[str, Any] = {}

        def capture(details: dict) -> None:  # litellm's logger_fn: only the raw response is kept
            if details.get("log_event_type") == "post_api_call":
                logged["raw"] = details.get("original_response")

        wire = _wire.begin()
        t0 = time.perf_counter()
        self.t_send = t0
        try:
            if self.routed is not None:
                return self._send_routed(litellm, wire, capture, logged)
            response = litellm.completion(
                model=cfg.model, messages=copy.deepcopy(self.messages), api_base=cfg.api_base,
                api_key=self._api_key(), timeout=self.timeout_s, num_retries=0, max_retries=0,
                logger_fn=capture, **self.params)
        except Exception as exc:
            latency = _now_ms(t0)
            failure = classify(exc, wire)
            raw = failure.body  # None when no response came back (timeout, refused connection)
            retry_after = parse_retry_after(failure.headers) if failure.kind in ("rate_limited",
                                                                                 "server_error") else None
            status = f"HTTP {failure.http_status}: " if failure.http_status else ""
            return {"status": "error", "error_kind": failure.kind, "error": f"{status}{failure.message}",
                    "http_status": failure.http_status, "response_raw": raw, "latency_ms": latency,
                    "retry_after_s": retry_after}
        finally:
            _wire.end()
        latency = _now_ms(t0)
        return self._parse(litellm, response, wire, _text(logged.get("raw")), latency)

    def _send_routed(self, litellm: Any, wire: WireRecord, capture: Callable[[dict], None],
                     logged: dict[str, Any]) -> dict[str, Any]:
        """One request through the provider's Router: it picks a deployment, skipping those this
        call failed on and those whose own slots are all taken (unless that leaves none)."""
        assert self.routed is not None and self.cfg is not None
        busy = [_dep_id(self.provider, i) for i in range(len(self.cfg.deployments))
                if ((g := self.gw.deployment_gates.get((self.provider, i))) is not None and g.full)
                or ((a := self.gw.adaptive.get(_dep_id(self.provider, i))) is not None and (a.full or a.paused))]
        skip = tuple(dict.fromkeys([*self.failed_on, *busy]))
        self.pick = None
        _local.call = self
        try:
            response = self.routed.router.completion(
                model=self.provider, messages=copy.deepcopy(self.messages), num_retries=0, max_retries=0,
                logger_fn=capture, _retry_skipped_deployment_ids=skip,
                **({"timeout": self.timeout_s} if self.timeout_given else {}), **self.params)
        except _Cancelled:
            return {"status": "error", "error_kind": "cancelled", "error": "cancelled", "latency_ms": None}
        except _OutOfTime:
            return {"status": "error", "error_kind": "out_of_time", "error": "rate-limited", "latency_ms": None}
        except Exception as exc:
            latency = _now_ms(self.t_send)
            if type(exc).__name__ in ("RouterRateLimitError", "RouterRateLimitErrorBasic"):
                wait = getattr(exc, "cooldown_time", None) or DEPLOYMENT_COOLDOWN_S
                return {"status": "error", "error_kind": "rate_limited", "latency_ms": latency,
                        "error": f"every deployment is cooling down after failures: {exc}",
                        "http_status": None, "response_raw": None, "retry_after_s": float(wait)}
            failure = classify(exc, wire)
            # A 429 is no sign the deployment is broken: its pause (and the Router's cooldown) keeps
            # calls off it for its Retry-After, and then it serves this call's retry as well as any.
            if self.pick is not None and failure.kind in RETRYABLE and failure.kind != "rate_limited":
                self.failed_on.append(_dep_id(self.provider, self.pick[0]))
            retry_after = parse_retry_after(failure.headers) if failure.kind in ("rate_limited",
                                                                                 "server_error") else None
            status = f"HTTP {failure.http_status}: " if failure.http_status else ""
            where = f" (deployment {self.pick[0]}: {self.pick[1]})" if self.pick is not None else ""
            return {"status": "error", "error_kind": failure.kind, "error": f"{status}{failure.message}{where}",
                    "http_status": failure.http_status, "response_raw": failure.body, "latency_ms": latency,
                    "retry_after_s": retry_after}
        finally:
            _local.call = None
            for held in reversed(self.held):
                held.release()
            self.held.clear()
        latency = _now_ms(self.t_send)
        return self._parse(litellm, response, wire, _text(logged.get("raw")), latency)

    def _picked(self, deployment: dict) -> None:
        """The Router chose ``deployment`` for this attempt: take its own slot and rpm, then send."""
        assert self.cfg is not None
        index = int(str(deployment["model_info"]["id"]).rsplit("[", 1)[1].rstrip("]"))
        spec = self.cfg.deployments[index]
        self.pick = (index, spec.api_base)
        self.model = spec.model or self.cfg.model
        self.key = self.routed.keys[index] if self.routed is not None else self.key
        self.request.update({"model": self.model, "api_base": spec.api_base, "deployment": index,
                             "timeout_s": self.timeout_s if self.timeout_given else spec.timeout_s or self.cfg.timeout_s})
        start = time.perf_counter()
        gate = self.gw.deployment_gates.get((self.provider, index))
        if gate is not None:
            if not gate.acquire(self.cancel):
                self._waited(start)
                raise _Cancelled()
            self.held.append(gate)
        adaptive = self.gw.adaptive.get(_dep_id(self.provider, index))
        if adaptive is not None:
            ticket = adaptive.acquire(self.cancel, self.deadline)
            if ticket is None:
                self._waited(start)
                raise _Cancelled() if self._is_cancelled() else _OutOfTime()
            self.ticket = (adaptive, ticket)
        limiter = self.gw.deployment_limiters.get((self.provider, index))
        if limiter is not None and not limiter.acquire(self.cancel):
            self._waited(start)
            raise _Cancelled()
        self._waited(start)
        self.t_send = time.perf_counter()  # the request's latency starts now, not while waiting

    def _parse(self, litellm: Any, response: Any, wire: WireRecord, logged_raw: str | None,
               latency: float) -> dict[str, Any]:
        raw = wire.body if wire.body is not None else logged_raw
        base = {"http_status": wire.status or 200, "latency_ms": latency, "response_raw": raw}
        try:
            text = response.choices[0].message.content
            finish_reason = getattr(response.choices[0], "finish_reason", None)
        except (AttributeError, IndexError, TypeError):
            return {**base, "status": "error", "error_kind": "bad_response",
                    "error": "the response holds no message (no choices)"}
        usage = getattr(response, "usage", None)
        tokens = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        if raw is not None and not _reports_usage(raw):
            tokens = dict.fromkeys(tokens)  # the server reported none: unknown, not zero
        cost, source = reply_cost(litellm, response, self.model)
        return {**base, "status": "ok", "fields": {
            "text": text if text is not None else "", "response_raw": raw, "http_status": base["http_status"],
            "latency_ms": latency, "cost_usd": cost, "cost_source": source,
            "finish_reason": finish_reason if isinstance(finish_reason, str) else None, **tokens}}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def _reports_usage(raw: str) -> bool:
    try:
        body = json.loads(raw)
    except ValueError:
        return True  # not JSON we can read: trust litellm's figures
    return not isinstance(body, dict) or body.get("usage") is not None
