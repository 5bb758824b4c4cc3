"""Provider batch APIs (SPEC §10) through litellm's files and batches: ``create_file`` (an input
file of JSONL requests, purpose ``batch``), ``create_batch`` (endpoint ``/v1/chat/completions``,
window ``24h``), ``retrieve_batch`` (its status and request counts) and ``file_content`` (its
output and error files). OpenAI's formats; litellm maps Anthropic's Message Batches onto them.

    client = BatchClient(gateway, "gpt")
    lines = [client.prepare("0", messages, sampling=..., cap=160, schema=...)]
    state = client.submit(lines, {"rwb_run": run_id})
    ...  # later, maybe in another process: client.state(state.id) until it has ended
    answers = client.answers(client.state(state.id))   # custom_id -> the output or error line
    result = client.result(lines[0], answers.get("0"), state)   # a CallResult, or None: undone

Each line's request is built as :meth:`Gateway.call` builds its own (the provider's sampling under
the agent's, the call kind's cap, the reply's ``response_format``), and each answer becomes a
:class:`CallResult` priced at the batch price (:func:`prices.batch_cost`), scrubbed of the key.
A failure of the API itself (no key, a refused connection, an error status) is a
:class:`BatchError` whose text never holds the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.services.llm.gateway import NO_KEY_PLACEHOLDER, Gateway, _Call, _load
from workbench.services.llm.limits import utc_stamp
from workbench.services.llm.result import CallResult
from workbench.services.llm.secrets import scrub
from workbench.services.llm.wire import classify

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"  # the only completion window OpenAI and Anthropic offer
ENDED = frozenset({"completed", "expired", "failed", "cancelled"})
UNDONE = frozenset({"batch_expired", "batch_cancelled"})  # error codes of requests the batch never ran


class BatchError(Exception):
    """The batch API itself failed (not one request of it); the message is scrubbed."""

    def __init__(self, message: str, kind: str = "internal"):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider describes it."""

    id: str
    status: str  # validating, in_progress, finalizing, completed, expired, failed, cancelling, cancelled
    total: int = 0
    completed: int = 0
    failed: int = 0
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    error: str | None = None  # why the whole batch failed (its validation errors)

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def counts(self) -> str:
        """``in_progress, 3 of 10 done, 1 failed``: the provider's counts, for a progress note."""
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.status}, {self.completed} of {self.total} done{failed}"


@dataclass
class BatchLine:
    """One request of a batch: its ``custom_id``, the body sent, and the gateway's call it stands
    for (the request as recorded, the secrets to scrub), or the cache's answer when it has one."""

    custom_id: str
    body: dict
    call: _Call
    cached: CallResult | None = None

    def line(self) -> dict:
        return {"custom_id": self.custom_id, "method": "POST", "url": ENDPOINT, "body": self.body}


class BatchClient:
    """One provider's batch API, with its key (read now, as a call would)."""

    def __init__(self, gateway: Gateway, provider: str):
        self.gw, self.provider = gateway, provider
        probe = _Call(gateway, provider, (), None, None, None, 0, None)
        if probe.cfg is None or probe.cfg.simulated:
            raise BatchError(f"provider {provider!r} has no batch API", "bad_request")
        self.cfg = probe.cfg
        missing = probe.resolve_key()
        if missing is not None:
            raise BatchError(missing.error or "missing key", "missing_key")
        self.secrets = probe.secrets
        self.key = probe.key
        litellm = _load()
        try:
            self.model_name, self.llm_provider, _key, _base = litellm.get_llm_provider(
                model=self.cfg.model, api_base=self.cfg.api_base)
        except Exception as exc:
            raise BatchError(f"litellm does not know which provider serves {self.cfg.model!r}: {exc}",
                             "bad_request") from None

    # -- requests and answers -------------------------------------------------------------------
    def prepare(self, custom_id: str, messages: Sequence[Mapping[str, Any]], *, sampling: Mapping[str, Any] | None,
                cap: int | None, schema: tuple[str, dict] | None, sample_index: int = 0) -> BatchLine:
        """The batch line for one call: the body the gateway would send (``response_format`` and
        sampling included), or the reply cache's answer (nothing to send)."""
        call = _Call(self.gw, self.provider, messages, None, None, None, sample_index, None, sampling=sampling, cap=cap)
        call.schema = schema
        early = call.prepare()
        call.key, call.secrets = self.key, set(self.secrets)
        body = {"model": self.model_name, "messages": call.messages, **call.params}
        call.request.update({"batch_api": True})
        if early is not None and not early.cached:  # the provider cannot take it at all
            raise BatchError(early.error or "cannot be sent", early.error_kind or "bad_request")
        return BatchLine(custom_id, body, call, early)

    def result(self, line: BatchLine, answer: dict | None, state: BatchState,
               submitted_at: str | None = None) -> CallResult | None:
        """The call's result from its ``answer`` (its line of the output or error file); None when
        the batch never ran it (expired or cancelled undone): it goes in the next batch. The result
        runs from ``submitted_at`` (the batch's submission) to now."""
        call, meta = line.call, {"batch": {"id": state.id, "custom_id": line.custom_id}}
        call.request.update(meta)
        done = _Finisher(call, submitted_at)
        error = (answer or {}).get("error") or {}
        if answer is None or (isinstance(error, dict) and error.get("code") in UNDONE):
            if answer is None and state.status == "failed":
                return done("error", error=f"the batch failed: {state.error or 'no reason given'}",
                                    error_kind="bad_request")
            if answer is None and state.status == "completed":
                return done("error", error="the batch ended without an answer to this request",
                                    error_kind="bad_response")
            return None
        response = answer.get("response") or {}
        status, body = response.get("status_code"), response.get("body")
        raw = json.dumps(body, ensure_ascii=False) if body is not None else json.dumps(answer, ensure_ascii=False)
        call.attempts = 1
        if status != 200 or not isinstance(body, dict):
            from workbench.services.llm.wire import _kind_for_status

            message = ((body or {}).get("error") or {}).get("message") if isinstance(body, dict) else None
            message = message or (error.get("message") if isinstance(error, dict) else None) or "no answer"
            kind = _kind_for_status(int(status)) if isinstance(status, int) else "bad_response"
            return done("rate_limited" if kind == "rate_limited" else "error",
                                error=f"HTTP {status}: {message}" if status else message, error_kind=kind,
                                response_raw=raw, http_status=status if isinstance(status, int) else None)
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return done("error", error="the answer holds no message (no choices)",
                                error_kind="bad_response", response_raw=raw, http_status=200)
        usage = body.get("usage") or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        from workbench.services.llm import prices

        cost = prices.batch_cost(self.cfg.model, prompt, completion) if prompt is not None and completion is not None \
            else None
        result = done("ok", text=text if text is not None else "", response_raw=raw, http_status=200,
                      finish_reason=choice.get("finish_reason"), prompt_tokens=prompt,
                      completion_tokens=completion, total_tokens=usage.get("total_tokens"), cost_usd=cost,
                      cost_source=f"litellm batch price:{self.cfg.model}" if cost is not None else "unknown")
        if self.gw.cache is not None:  # as Gateway.call keeps a reply it got
            self.gw.cache.put(call.ckey, result.to_dict())
        return result

    # -- the API ----------------------------------------------------------------------------------
    def submit(self, lines: Sequence[BatchLine], metadata: Mapping[str, str]) -> BatchState:
        """Upload the lines as one input file and start a batch over it."""
        data = "".join(json.dumps(line.line(), ensure_ascii=False) + "\n" for line in lines).encode()
        litellm = _load()
        upload = self._api(litellm.create_file, file=("rwb-batch.jsonl", data), purpose="batch")
        created = self._api(litellm.create_batch, completion_window=WINDOW, endpoint=ENDPOINT,
                            input_file_id=upload.id, metadata={k: str(v)[:500] for k, v in metadata.items()})
        return _state(created)

    def state(self, batch_id: str) -> BatchState:
        return _state(self._api(_load().retrieve_batch, batch_id=batch_id))

    def answers(self, state: BatchState) -> dict[str, dict]:
        """Every line of the batch's output and error files, by ``custom_id``."""
        out: dict[str, dict] = {}
        for file_id in (state.error_file_id, state.output_file_id):  # an answer wins over an error
            for row in self.file_lines(file_id):
                if isinstance(row, dict) and row.get("custom_id") is not None:
                    out[str(row["custom_id"])] = row
        return out

    def file_lines(self, file_id: str | None) -> list[dict]:
        """A JSONL file of the provider's (an input, output or error file), parsed."""
        if not file_id:
            return []
        content = self._api(_load().file_content, file_id=file_id)
        text = getattr(content, "text", None)
        if text is None:
            text = bytes(getattr(content, "content", b"")).decode("utf-8", "replace")
        rows = []
        for raw in text.splitlines():
            if raw.strip():
                try:
                    rows.append(json.loads(raw))
                except ValueError:
                    continue  # a line we cannot read is an answer missing: its call goes again
        return rows

    def _api(self, fn, **kwargs):
        key = self.key.value or (NO_KEY_PLACEHOLDER if self.cfg.api_base else None)
        try:
            # the model lets litellm pick the provider's batch mapping (Anthropic's Message Batches)
            return fn(custom_llm_provider=self.llm_provider, api_base=self.cfg.api_base, api_key=key,
                      model=self.cfg.model, timeout=self.cfg.timeout_s, **kwargs)
        except Exception as exc:
            failure = classify(exc, None)
            status = f"HTTP {failure.http_status}: " if failure.http_status else ""
            raise BatchError(scrub(f"{fn.__name__}: {status}{failure.message}"[:2000], self.secrets),
                             failure.kind) from None


@dataclass
class _Finisher:
    """A batch line's result: the gateway's scrubbed CallResult, from the submission to now."""

    call: _Call
    started_at: str | None

    def __call__(self, status: str, **fields: Any) -> CallResult:
        result = self.call.finish(status, **fields)
        return result.but(finished_at=utc_stamp(), **({"started_at": self.started_at} if self.started_at else {}))


def _state(batch: Any) -> BatchState:
    counts = getattr(batch, "request_counts", None)
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict) else None) or []
    why = "; ".join(str(getattr(e, "message", None) or (e.get("message") if isinstance(e, dict) else e))
                    for e in data) or None
    return BatchState(id=str(batch.id), status=str(batch.status), total=int(getattr(counts, "total", 0) or 0),
                      completed=int(getattr(counts, "completed", 0) or 0), failed=int(getattr(counts, "failed", 0) or 0),
                      input_file_id=getattr(batch, "input_file_id", None),
                      output_file_id=getattr(batch, "output_file_id", None),
                      error_file_id=getattr(batch, "error_file_id", None), error=why)
