"""A fake Honcho: a real HTTP server on 127.0.0.1, in a thread of the test process.

It speaks the v3 endpoints memoryd uses, answers as a real Honcho 3.0.12 did (its data and
answers are `honcho_model.py`'s, its refusals `honcho_rules.py`'s; `test_honcho_recorded.py`
holds it to the recorded exchanges), keeps what it is sent, and records every request. Per
workspace it can also misbehave::

    with FakeHoncho() as fake:                      # fake.url is "http://127.0.0.1:PORT"
        fake.behave("ws", "fail", status=503, times=1)   # the next request to ws: 503
        fake.behave("ws", "hang", store=True, times=1)   # keep the batch, never answer
        fake.behave("ws", "commit_late", delay=1.5)      # hold it 1.5 s, then keep it (the
                                                         # client may have gone), then answer
        fake.behave("ws", "drop")                        # read the request, close the socket
        fake.behave("ws", "missing")                     # 404 as a deleted session answers
        fake.behave("ws", "answer")                      # back to normal
        fake.messages("ws", "s1")       # what was stored, in order (JSON objects)
        fake.requests                   # every Request(method, path, body, raw, authorization, at)
        fake.seed_message("ws", "s1", "alice", "dark roast")   # data for search tests
        fake.seed_conclusion("ws", "prefers tea", "agent", "agent")
        fake.deleted                    # the (workspace, session) pairs deleted

`only="/messages"` restricts a behaviour to paths containing that text, `method="DELETE"` to
that method. `FakeHoncho(key=...)` takes only that bearer token (401 otherwise, as Honcho with
auth on), `embeddings=False` is a Honcho without its embedding provider (conclusions refused
with 422), `semantic=True` one whose search fills `limit` with unrelated messages.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from honcho_model import HonchoModel, fixture

MODES = ("answer", "hang", "fail", "drop", "missing", "commit_late")


@dataclass(frozen=True)
class Request:
    """One request the fake received."""

    method: str
    path: str
    body: Any
    raw: bytes
    authorization: str | None
    at: float = 0.0
    """When it arrived (time.monotonic())."""

    @property
    def workspace(self) -> str | None:
        """The workspace the path names (or the body creates)."""
        return _workspace(self.path, self.body)


@dataclass
class Behaviour:
    """How the fake answers a workspace's requests."""

    mode: str = "answer"
    status: int = 503
    store: bool = False
    times: int | None = None
    only: str | None = None
    delay: float = 0.0
    method: str | None = None
    body: Any = None
    """What `fail` answers (None: Honcho's body for an unexpected error)."""


@dataclass
class _Log:
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (a timeout, a killed process) is not news


def _workspace(path: str, body: Any) -> str | None:
    match = re.match(r"/v3/workspaces/([^/?]+)", path)
    if match:
        return match.group(1)
    if path.startswith("/v3/workspaces") and isinstance(body, dict):
        value = body.get("id")
        return value if isinstance(value, str) else None
    return None


class FakeHoncho(HonchoModel):
    """The fake server; start it with `with` (or `start()`), stop it with `stop()`. What it
    keeps and answers is its `HonchoModel`'s (`messages`, `conclusions`, `deleted`, seeds)."""

    def __init__(
        self, *, key: str | None = None, embeddings: bool = True, semantic: bool = False
    ) -> None:
        super().__init__(key=key, embeddings=embeddings, semantic=semantic)
        self._log = _Log()
        self._log_lock = threading.Lock()
        self._release = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.latency = 0.0
        """Seconds every answer waits before it is sent, as a real server's network and
        database would make it (the benchmarks set it; tests leave it 0)."""

    def start(self) -> FakeHoncho:
        """Serve in a thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release every hanging request and stop serving."""
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeHoncho:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # What tests set and read.

    def behave(
        self,
        workspace: str,
        mode: str,
        *,
        status: int = 503,
        store: bool = False,
        times: int | None = None,
        only: str | None = None,
        delay: float = 0.0,
        method: str | None = None,
        body: Any = None,
    ) -> None:
        """From now on answer `workspace` this way (`times` requests, then normally again).
        `commit_late` holds each request `delay` seconds, then does what it asks whether or
        not the client is still there, as a server still committing after a timeout does;
        `fail` answers `status` with `body` (default Honcho's for an unexpected error)."""
        assert mode in MODES, mode
        with self._log_lock:
            self._log.behaviours[workspace] = Behaviour(
                mode, status, store, times, only, delay, method, body
            )

    @property
    def requests(self) -> list[Request]:
        """Every request so far, in the order they arrived."""
        with self._log_lock:
            return list(self._log.requests)

    def _behaviour(self, request: Request) -> Behaviour:
        with self._log_lock:
            self._log.requests.append(request)
            workspace = request.workspace
            behaviour = self._log.behaviours.get(workspace or "")
            if behaviour is None or behaviour.mode == "answer":
                return Behaviour()
            if behaviour.only is not None and behaviour.only not in request.path:
                return Behaviour()
            if behaviour.method is not None and behaviour.method != request.method:
                return Behaviour()
            if behaviour.times is not None:
                behaviour.times -= 1
                if behaviour.times <= 0:
                    del self._log.behaviours[workspace or ""]
            return behaviour

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without this, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every answer, which would hide memoryd's own.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self._serve("POST")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                request = Request(
                    method,
                    self.path,
                    body,
                    raw,
                    self.headers.get("Authorization"),
                    time.monotonic(),
                )
                behaviour = fake._behaviour(request)
                if fake.latency:
                    time.sleep(fake.latency)
                match behaviour.mode:
                    case "answer":
                        self._send(*fake.answer(method, self.path, body, request.authorization))
                    case "fail":
                        if behaviour.store:
                            fake.answer(method, self.path, body)
                        failed = {"detail": "An unexpected error occurred"}
                        self._send(
                            behaviour.status, failed if behaviour.body is None else behaviour.body
                        )
                    case "missing":
                        self._send(404, fixture("missing"))
                    case "hang":
                        if behaviour.store:
                            fake.answer(method, self.path, body)
                        fake._release.wait(60)
                        self.close_connection = True
                    case "drop":
                        if behaviour.store:
                            fake.answer(method, self.path, body)
                        self.close_connection = True
                    case "commit_late":
                        if fake._release.wait(behaviour.delay):
                            self.close_connection = True  # the fake is stopping
                            return
                        answer = fake.answer(method, self.path, body, request.authorization)
                        self._send(*answer)  # a client that left makes this fail; unheard

            def _send(self, status: int, payload: Any) -> None:
                data = b"" if status == 204 else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
