"""The loopback fake server itself: routes, scripting, streaming, recording and a clean stop."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.request

import pytest

from tests.support.fake_llm_server import FakeClock, FakeLLMServer, Reply

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "one two three"}]}


def post(server: FakeLLMServer, body: dict, headers: dict | None = None, timeout: float = 5):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    return conn, response


def test_chat_completion_non_streaming_with_usage_and_recording():
    with FakeLLMServer(Reply(text="hello there")) as server:
        conn, response = post(server, CHAT, {"Authorization": "Bearer sk-x"})
        payload = json.loads(response.read())
        conn.close()
        assert response.status == 200
        assert payload["choices"][0]["message"] == {"role": "assistant", "content": "hello there"}
        assert payload["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
        assert payload["model"] == "fake-model"
        (request,) = server.chat_requests
        assert request.headers["authorization"] == "Bearer sk-x"
        assert request.body == CHAT and request.messages == CHAT["messages"]
        assert request.arrived <= time.monotonic()


def test_models_route_and_unknown_routes():
    with FakeLLMServer(models=["a", "b"]) as server:
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
            assert [m["id"] for m in json.loads(response.read())["data"]] == ["a", "b"]
        conn, response = post(server, CHAT)
        response.read()
        conn.request("POST", "/v1/nowhere", "{}")
        assert conn.getresponse().status == 404
        conn.close()


def test_script_queue_then_rule_then_default():
    with FakeLLMServer(Reply(text="default")) as server:
        server.enqueue(Reply(text="first"), Reply(status=429, retry_after=7))
        server.rule = lambda req: Reply(text=lambda r: f"rule saw {r.index}") if req.index == 2 else None
        seen = []
        for _ in range(4):
            conn, response = post(server, CHAT)
            body = json.loads(response.read())
            seen.append((response.status, response.getheader("Retry-After"),
                         body.get("choices", [{}])[0].get("message", {}).get("content")))
            conn.close()
        assert seen == [(200, None, "first"), (429, "7", None), (200, None, "rule saw 2"), (200, None, "default")]


def test_malformed_body_and_raw_body_and_usage_override():
    with FakeLLMServer() as server:
        server.enqueue(Reply(malformed=True), Reply(body="plain text", status=502),
                       Reply(text="x", usage={"prompt_tokens": 100, "completion_tokens": 7}))
        conn, response = post(server, CHAT)
        with pytest.raises(ValueError):
            json.loads(response.read())
        conn.close()
        conn, response = post(server, CHAT)
        assert (response.status, response.read()) == (502, b"plain text")
        conn.close()
        conn, response = post(server, CHAT)
        assert json.loads(response.read())["usage"]["total_tokens"] == 107
        conn.close()


def sse_events(raw: bytes) -> list[str]:
    return [line[len("data: "):] for line in raw.decode().split("\n") if line.startswith("data: ")]


def test_streaming_sse_reassembles_the_text_and_ends_with_done():
    with FakeLLMServer(Reply(text="a streamed reply")) as server:
        conn, response = post(server, {**CHAT, "stream": True})
        assert response.getheader("Content-Type") == "text/event-stream"
        events = sse_events(response.read())
        conn.close()
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "a streamed reply"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["usage"]["completion_tokens"] == 3


def test_truncated_stream_drops_the_connection_mid_body():
    with FakeLLMServer(Reply(text="never finished at all", truncate_stream=True)) as server:
        conn, response = post(server, {**CHAT, "stream": True})
        with pytest.raises(http.client.IncompleteRead) as info:
            response.read()
        conn.close()
    events = sse_events(info.value.partial)
    assert len(events) == 1 and "[DONE]" not in events


@pytest.mark.filterwarnings("ignore:Item 'summary' on TypedDict")  # litellm's types vs pydantic
def test_a_real_litellm_stream_reads_the_fake_server():
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from workbench.services.llm.gateway import _load

    litellm = _load()  # as configured by the gateway (no logging threads)
    with FakeLLMServer(Reply(text="streamed through litellm")) as server:
        stream = litellm.completion(model="openai/fake-model", api_base=server.base_url, api_key="none",
                                    messages=CHAT["messages"], stream=True, max_retries=0, timeout=5)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
    assert text == "streamed through litellm"


def test_in_flight_tracking_and_latency():
    with FakeLLMServer(Reply(text="slow", latency_s=0.15)) as server:
        results = []

        def call():
            conn, response = post(server, CHAT)
            results.append(response.read())
            conn.close()

        threads = [threading.Thread(target=call) for _ in range(3)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        assert len(results) == 3 and time.monotonic() - t0 < 0.45  # served concurrently
        assert server.max_in_flight == 3


def test_stop_wakes_hanging_handlers_and_closes_keep_alive_connections():
    server = FakeLLMServer(Reply(text="ok")).start()
    keep_alive, response = post(server, CHAT)
    response.read()  # the connection stays open, its handler thread waits for the next request
    server.default = Reply(hang_s=30)
    errors: list[BaseException] = []

    def hanging_client():
        try:
            conn, resp = post(server, CHAT, timeout=10)
            resp.read()
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    client = threading.Thread(target=hanging_client)
    client.start()
    deadline = time.monotonic() + 5
    while len(server.chat_requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    server.stop()
    assert time.monotonic() - t0 < 2
    client.join(5)
    keep_alive.close()
    assert not client.is_alive() and errors  # the hanging client saw its connection end
    assert not any(t.name.startswith("fake-llm") for t in threading.enumerate())


def test_max_in_window_and_fake_clock_stamps():
    clock = FakeClock(start=0.0)
    with FakeLLMServer(clock=clock.now) as server:
        for step in (0.0, 10.0, 50.0, 0.0, 30.0):  # arrivals at 0, 10, 60, 60, 90
            clock.sleep(step)
            conn, response = post(server, CHAT)
            response.read()
            conn.close()
        assert server.arrivals() == [0.0, 10.0, 60.0, 60.0, 90.0]
        assert server.max_in_window(60.0) == 3  # 10, 60, 60 (the stamp at 0 has left by 60)
        assert server.max_in_window(61.0) == 4
