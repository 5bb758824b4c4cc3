"""A loopback stand-in of OpenAI's Batch API (``/v1/files`` and ``/v1/batches``) for tests and
benchmarks, served by :class:`~tests.support.fake_llm_server.FakeLLMServer` (stdlib only).

    batches = FakeBatchAPI()
    with FakeLLMServer(Reply(text="hello"), batches=batches) as server:
        ...  # litellm.create_file / create_batch / retrieve_batch / file_content at server.base_url

The formats are OpenAI's:

- ``POST /v1/files`` (multipart: ``file``, ``purpose``) stores an input file: JSONL, one request a
  line, ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``;
- ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``, ``metadata``) makes a
  batch, ``validating`` at first; ``GET /v1/batches/{id}`` polls it; ``POST /v1/batches/{id}/cancel``;
- a finished batch has an ``output_file_id`` (a line per request answered:
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}``) and an
  ``error_file_id`` (a line per request that failed, or that expired undone:
  ``{"custom_id", "response": null, "error": {"code": "batch_expired", "message"}}``), read with
  ``GET /v1/files/{id}/content``.

Each request of a batch is answered as a chat request would be (the server's queue, then its rule,
then its default), when the batch finishes. How a batch goes is scripted: ``FakeBatchAPI(script)``
sets the default :class:`BatchScript`, ``enqueue(script, ...)`` scripts the next batches made:
``polls`` retrieves answered ``in_progress`` before it ends, ``done`` requests answered and the rest
expired undone (an ``expired`` batch), ``hold`` until :meth:`release`, or ``fail`` validation.
The stand-in's state lives in the test's process, so a ``rwb`` process killed while it waits can
be resumed against the same batches.
"""

from __future__ import annotations

import email.parser
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_llm_server import RecordedRequest, Reply, completion_payload, error_payload

ENDED = ("completed", "expired", "failed", "cancelled")


@dataclass
class BatchScript:
    polls: int = 0  # retrieves answered in_progress before the batch ends
    done: int | None = None  # requests answered before it ends; the rest expire undone (None: all)
    hold: bool = False  # in_progress until release()
    fail: str | None = None  # the batch fails validation with this message


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    window: str
    metadata: dict
    script: BatchScript
    lines: list[dict]
    created_at: int
    status: str = "validating"
    polls: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    ended_at: int | None = None


class FakeBatchAPI:
    """OpenAI's files and batches, in memory (see the module docstring)."""

    def __init__(self, script: BatchScript | None = None):
        self.default = script or BatchScript()
        self.server: Any = None  # the FakeLLMServer serving it (set by the server)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, _Batch] = {}
        self.lines_answered = 0  # requests of every batch answered, over the stand-in's life
        self._scripts: deque[BatchScript] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()  # a batch that ends stores its files under the same lock

    # -- scripting --------------------------------------------------------------------------------
    def enqueue(self, *scripts: BatchScript) -> None:
        with self._lock:
            self._scripts.extend(scripts)

    def release(self, batch_id: str | None = None) -> None:
        """Let held batches (one, or all) end at their next poll."""
        with self._lock:
            for b in self.batches.values():
                if batch_id in (None, b.id):
                    b.script.hold = False

    # -- serving --------------------------------------------------------------------------------
    @staticmethod
    def serves(path: str) -> bool:
        path = path.split("?", 1)[0]
        return path.startswith(("/v1/files", "/v1/batches", "/files", "/batches"))

    def handle(self, request: RecordedRequest, raw: bytes) -> tuple[int, bytes, str, dict]:
        """``(status, body, content type, headers)`` for one request to the files or batches API."""
        path = request.path.split("?", 1)[0].rstrip("/").removeprefix("/v1")
        parts = path.strip("/").split("/")
        try:
            if request.method == "POST" and parts == ["files"]:
                return self._json(200, self._upload(request, raw))
            if request.method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                found = self.files.get(parts[1])
                if found is None:
                    return self._json(404, {"error": {"message": f"no file {parts[1]}", "type": "invalid_request_error"}})
                return 200, found["data"], "application/octet-stream", {}
            if request.method == "GET" and len(parts) == 2 and parts[0] == "files":
                found = self.files.get(parts[1])
                return self._json(200, found["object"]) if found else self._json(404, {"error": {"message": "no file"}})
            if request.method == "POST" and parts == ["batches"]:
                return self._json(200, self._create(json.loads(raw or b"{}")))
            if request.method == "GET" and len(parts) == 2 and parts[0] == "batches":
                return self._json(200, self._retrieve(parts[1]))
            if request.method == "POST" and len(parts) == 3 and parts[0] == "batches" and parts[2] == "cancel":
                return self._json(200, self._cancel(parts[1]))
        except KeyError as exc:
            return self._json(404, {"error": {"message": f"not found: {exc}", "type": "invalid_request_error"}})
        return self._json(404, {"error": {"message": f"no route {request.method} {request.path}"}})

    @staticmethod
    def _json(status: int, payload: dict) -> tuple[int, bytes, str, dict]:
        return status, json.dumps(payload).encode(), "application/json", {}

    # -- files ------------------------------------------------------------------------------------
    def _upload(self, request: RecordedRequest, raw: bytes) -> dict:
        ctype = request.headers.get("content-type", "")
        message = email.parser.BytesParser().parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
        fields = {part.get_param("name", header="content-disposition"): part for part in message.get_payload()}
        data = fields["file"].get_payload(decode=True)
        purpose = fields["purpose"].get_payload(decode=True).decode()
        filename = fields["file"].get_filename() or "upload.jsonl"
        return self._store_file(data, purpose, filename)

    def _store_file(self, data: bytes, purpose: str, filename: str) -> dict:
        with self._lock:
            file_id = f"file-fake{next(self._ids)}"
        obj = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[file_id] = {"data": data, "object": obj}
        return obj

    # -- batches ----------------------------------------------------------------------------------
    def _create(self, body: dict) -> dict:
        source = self.files[body["input_file_id"]]
        lines = [json.loads(line) for line in source["data"].decode().splitlines() if line.strip()]
        with self._lock:
            script = self._scripts.popleft() if self._scripts else BatchScript(**vars(self.default))
            batch_id = f"batch_fake{next(self._ids)}"
        batch = _Batch(batch_id, body["input_file_id"], body.get("endpoint", ""), body.get("completion_window", ""),
                       body.get("metadata") or {}, script, lines, int(time.time()))
        batch.counts["total"] = len(lines)
        if script.fail:
            batch.status, batch.ended_at = "failed", int(time.time())
        self.batches[batch_id] = batch
        return self._object(batch)

    def _retrieve(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        with self._lock:
            if batch.status not in ENDED:
                batch.polls += 1
                if batch.script.hold or batch.polls <= batch.script.polls:
                    batch.status = "in_progress"
                else:
                    self._finish(batch)
        return self._object(batch)

    def _cancel(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        with self._lock:
            if batch.status not in ENDED:
                batch.script.done = 0
                self._finish(batch, "cancelled")
        return self._object(batch)

    def _finish(self, batch: _Batch, status: str | None = None) -> None:
        """Answer the batch's requests (``script.done`` of them; the rest expire undone)."""
        done = len(batch.lines) if batch.script.done is None else min(batch.script.done, len(batch.lines))
        out, errors = [], []
        for n, line in enumerate(batch.lines):
            custom_id = line.get("custom_id")
            if n >= done:
                code = "batch_cancelled" if status == "cancelled" else "batch_expired"
                errors.append({"id": f"batch_req_{batch.id}_{n}", "custom_id": custom_id, "response": None,
                               "error": {"code": code, "message": "This request could not be executed before the "
                                                                  "completion window expired."}})
                continue
            body = line.get("body") or {}
            request = RecordedRequest(index=n, method="POST", path=line.get("url", ""), headers={}, body=body,
                                      raw_body=json.dumps(body), arrived=time.monotonic(), arrived_wall=time.time(),
                                      thread=threading.current_thread().name)
            reply: Reply = self.server._reply_for(request)
            self.lines_answered += 1
            if reply.status == 200:
                response = {"status_code": 200, "request_id": f"req_{batch.id}_{n}",
                            "body": completion_payload(request, reply)}
                out.append({"id": f"batch_req_{batch.id}_{n}", "custom_id": custom_id, "response": response,
                            "error": None})
                batch.counts["completed"] += 1
            else:
                response = {"status_code": reply.status, "request_id": f"req_{batch.id}_{n}",
                            "body": error_payload(reply)}
                errors.append({"id": f"batch_req_{batch.id}_{n}", "custom_id": custom_id, "response": response,
                               "error": None})
                batch.counts["failed"] += 1
        if out:
            batch.output_file_id = self._store_file(_jsonl(out), "batch_output", "output.jsonl")["id"]
        if errors:
            batch.error_file_id = self._store_file(_jsonl(errors), "batch_output", "errors.jsonl")["id"]
        batch.status = status or ("expired" if done < len(batch.lines) else "completed")
        batch.ended_at = int(time.time())

    def _object(self, b: _Batch) -> dict:
        ended = b.ended_at
        return {"id": b.id, "object": "batch", "endpoint": b.endpoint, "input_file_id": b.input_file_id,
                "completion_window": b.window, "status": b.status,
                "errors": ({"object": "list", "data": [{"code": "invalid_request", "message": b.script.fail,
                                                        "param": None, "line": None}]} if b.script.fail else None),
                "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
                "created_at": b.created_at, "in_progress_at": b.created_at if b.status != "validating" else None,
                "expires_at": b.created_at + 86_400, "finalizing_at": ended,
                "completed_at": ended if b.status == "completed" else None,
                "failed_at": ended if b.status == "failed" else None,
                "expired_at": ended if b.status == "expired" else None,
                "cancelling_at": None, "cancelled_at": ended if b.status == "cancelled" else None,
                "request_counts": dict(b.counts), "metadata": b.metadata}


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()
