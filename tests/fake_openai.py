"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

Tests queue behaviours (a reply, an HTTP status, a delay, a raw body) and read back the
requests the real litellm client sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Behaviour:
    content: str | None = None
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None
    tool_calls: list[dict[str, Any]] | None = None
    hold: threading.Event | None = None  # the reply waits until the test sets it


SYNONYMS = {"car": "vehicle", "automobile": "vehicle", "truck": "vehicle", "cat": "pet", "dog": "pet"}


def words_vector(text: str, dims: int = 32) -> list[float]:
    """A deterministic embedding: words (with a few synonyms folded together) hashed into dims
    buckets, so texts sharing words, or synonyms, point the same way."""
    vector = [0.0] * dims
    for word in text.lower().split():
        word = SYNONYMS.get(word.strip(".,"), word.strip(".,"))
        vector[sum(word.encode()) % dims] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (dims - 1)


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._queue: list[Behaviour] = []
        self._lock = threading.Lock()
        self.embedding_failures: list[int] = []  # HTTP statuses the next embedding calls fail with
        self.default = Behaviour(content='{"selected": []}')
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": payload})
                    if self.path.endswith("/embeddings"):
                        failure = server.embedding_failures.pop(0) if server.embedding_failures else None
                    else:
                        behaviour = server._queue.pop(0) if server._queue else server.default
                if self.path.endswith("/embeddings"):
                    self._embeddings(payload, failure)
                    return
                if behaviour.delay:
                    time.sleep(behaviour.delay)
                if behaviour.hold is not None:
                    behaviour.hold.wait(timeout=120)
                if behaviour.raw is not None:
                    body = behaviour.raw
                elif behaviour.status != 200:
                    body = json.dumps(
                        {"error": {"message": "scripted failure", "type": "server_error"}}
                    ).encode()
                else:
                    message: dict[str, Any] = {"role": "assistant", "content": behaviour.content}
                    if behaviour.tool_calls:
                        message["tool_calls"] = behaviour.tool_calls
                    body = json.dumps(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": payload.get("model", "test"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": message,
                                    "finish_reason": "tool_calls" if behaviour.tool_calls else "stop",
                                }
                            ],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                        }
                    ).encode()
                try:
                    self.send_response(behaviour.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def _embeddings(self, payload: dict[str, Any], failure: int | None) -> None:
                texts = payload.get("input") or []
                texts = [texts] if isinstance(texts, str) else texts
                if failure is not None:
                    body = json.dumps({"error": {"message": "scripted failure", "type": "server_error"}})
                else:
                    data = [
                        {"object": "embedding", "index": i, "embedding": words_vector(text)}
                        for i, text in enumerate(texts)
                    ]
                    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
                    body = json.dumps(
                        {"object": "list", "data": data, "model": payload.get("model"), "usage": usage}
                    )
                self.send_response(failure or 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enqueue(self, **behaviour: Any) -> None:
        with self._lock:
            self._queue.append(Behaviour(**behaviour))

    def reply_json(self, data: Any) -> None:
        self.enqueue(content=json.dumps(data))

    def call_tools(self, *calls: tuple[str, dict[str, Any]]) -> None:
        """Queue an assistant turn that calls tools: (name, arguments) pairs."""
        with self._lock:
            start = len(self.requests) + len(self._queue)
        self.enqueue(
            tool_calls=[
                {
                    "id": f"call_{start}_{i}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for i, (n, a) in enumerate(calls)
            ]
        )

    def reset(self) -> FakeOpenAI:
        """As a new server: nothing queued or received, the default reply (one server, many tests)."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.embedding_failures.clear()
            self.default = Behaviour(content='{"selected": []}')
        return self

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
