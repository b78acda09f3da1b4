"""A fake Honcho: a real HTTP server on 127.0.0.1, in a thread of the test process.

It speaks the v3 endpoints memoryd uses, answers in the shapes a real Honcho 3.0.12 gave
(`tests/fixtures/honcho/`), keeps what it is sent, and records every request. Per workspace it
can also misbehave::

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
that method. A deleted session is gone at once (Honcho deletes in the background), and its id
is dead: creating it again or posting to it answers 404, as a real Honcho does; deleting it
again, or one never created, answers 404 too. A conclusion delete answers 204 with no body.

Search matches the
messages holding every word of the query (lowercase substrings), newest first; conclusion
query gives the pair's conclusions, most shared words first. A workspace never written to
answers `[]` to both, as Honcho does.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).parent / "fixtures" / "honcho"
MODES = ("answer", "hang", "fail", "drop", "missing", "commit_late")


def fixture(name: str) -> Any:
    """A recorded answer, parsed."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


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


@dataclass
class _State:
    messages: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    conclusions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    sessions: set[tuple[str, str]] = field(default_factory=set)
    deleted: list[tuple[str, str]] = field(default_factory=list)


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


class FakeHoncho:
    """The fake server; start it with `with` (or `start()`), stop it with `stop()`."""

    def __init__(self) -> None:
        self._state = _State()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._ids = itertools.count(1)
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
    ) -> None:
        """From now on answer `workspace` this way (`times` requests, then normally again).
        `commit_late` holds each request `delay` seconds, then does what it asks whether or
        not the client is still there, as a server still committing after a timeout does."""
        assert mode in MODES, mode
        with self._lock:
            self._state.behaviours[workspace] = Behaviour(
                mode, status, store, times, only, delay, method
            )

    @property
    def requests(self) -> list[Request]:
        """Every request so far, in the order they arrived."""
        with self._lock:
            return list(self._state.requests)

    def messages(self, workspace: str, session: str | None = None) -> list[dict[str, Any]]:
        """The messages stored in a session (or in every session of the workspace)."""
        with self._lock:
            return [
                message
                for (ws, s), stored in self._state.messages.items()
                if ws == workspace and session in (None, s)
                for message in stored
            ]

    @property
    def deleted(self) -> list[tuple[str, str]]:
        """The sessions deleted, `(workspace, session)`, in order."""
        with self._lock:
            return list(self._state.deleted)

    def conclusions(self, workspace: str) -> list[dict[str, Any]]:
        """The conclusions stored in a workspace."""
        with self._lock:
            return list(self._state.conclusions.get(workspace, []))

    def seed_message(
        self,
        workspace: str,
        session: str,
        peer: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        created_at: str = "2026-11-29T20:39:34.902158Z",
    ) -> None:
        """Store a message as if it had been sent."""
        with self._lock:
            self._store_message(
                workspace,
                session,
                {"peer_id": peer, "content": content, "metadata": metadata or {}},
                created_at,
            )

    def seed_conclusion(self, workspace: str, content: str, observer: str, observed: str) -> None:
        """Store a conclusion as if it had been created."""
        with self._lock:
            self._store_conclusion(
                workspace, {"content": content, "observer_id": observer, "observed_id": observed}
            )

    # The server side.

    def _store_message(
        self, workspace: str, session: str, raw: dict[str, Any], created_at: str
    ) -> dict[str, Any]:
        shape = fixture("messages_create")[0]
        message = {
            **shape,
            "id": f"msg{next(self._ids):018d}",
            "content": raw.get("content", ""),
            "peer_id": raw.get("peer_id"),
            "session_id": session,
            "metadata": raw.get("metadata") or {},
            "created_at": raw.get("created_at") or created_at,
            "workspace_id": workspace,
            "token_count": len(str(raw.get("content", "")).split()),
        }
        self._state.messages.setdefault((workspace, session), []).append(message)
        self._state.sessions.add((workspace, session))
        return message

    def _store_conclusion(self, workspace: str, raw: dict[str, Any]) -> dict[str, Any]:
        shape = fixture("conclusions_create")[0]
        conclusion = {
            **shape,
            "id": f"con{next(self._ids):018d}",
            "content": raw.get("content", ""),
            "observer_id": raw.get("observer_id"),
            "observed_id": raw.get("observed_id"),
            "session_id": raw.get("session_id"),
        }
        self._state.conclusions.setdefault(workspace, []).append(conclusion)
        return conclusion

    def _behaviour(self, request: Request) -> Behaviour:
        with self._lock:
            self._state.requests.append(request)
            workspace = request.workspace
            behaviour = self._state.behaviours.get(workspace or "")
            if behaviour is None or behaviour.mode == "answer":
                return Behaviour()
            if behaviour.only is not None and behaviour.only not in request.path:
                return Behaviour()
            if behaviour.method is not None and behaviour.method != request.method:
                return Behaviour()
            if behaviour.times is not None:
                behaviour.times -= 1
                if behaviour.times <= 0:
                    del self._state.behaviours[workspace or ""]
            return behaviour

    @staticmethod
    def _gone(workspace: str, session: str) -> dict[str, Any]:
        return {"detail": f"Session {session} not found in workspace {workspace}"}

    @staticmethod
    def _page(shape: Any, found: list[Any], query: dict[str, list[str]]) -> dict[str, Any]:
        """One page of `found`, as Honcho pages a listing (`?page=&size=`, default 50)."""
        size = int(query.get("size", ["50"])[0])
        page = int(query.get("page", ["1"])[0])
        return {
            **shape,
            "items": found[(page - 1) * size : page * size],
            "total": len(found),
            "page": page,
            "size": size,
            "pages": max(1, -(-len(found) // size)),
        }

    def _answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """The status and JSON a normal Honcho gives."""
        url = urlsplit(path)
        parts = url.path.strip("/").split("/")[1:]  # after "v3"
        query = parse_qs(url.query)
        with self._lock:
            match parts:
                case ["workspaces"]:
                    return 201, {**fixture("workspace"), "id": body["id"], "metadata": {}}
                case ["workspaces", ws, "peers"]:
                    return 201, {**fixture("peer"), "id": body["id"], "workspace_id": ws}
                case ["workspaces", ws, "sessions"] if method == "POST":
                    if (ws, body["id"]) in self._state.deleted:
                        return 404, self._gone(ws, body["id"])
                    self._state.sessions.add((ws, body["id"]))
                    return 201, {**fixture("session"), "id": body["id"], "workspace_id": ws}
                case ["workspaces", ws, "sessions", s] if method == "DELETE":
                    if (ws, s) not in self._state.sessions:
                        return 404, self._gone(ws, s)
                    self._state.sessions.discard((ws, s))
                    self._state.messages.pop((ws, s), None)
                    self._state.deleted.append((ws, s))
                    return 202, fixture("session_delete")
                case ["workspaces", ws, "sessions", s, "messages"]:
                    if (ws, s) in self._state.deleted:
                        return 404, self._gone(ws, s)
                    batch = body.get("messages") if isinstance(body, dict) else None
                    if not isinstance(batch, list) or not 1 <= len(batch) <= 100:
                        return 422, fixture("rejected_101")
                    now = "2026-11-29T20:39:34.902158Z"
                    return 201, [self._store_message(ws, s, raw, now) for raw in batch]
                case ["workspaces", ws, "sessions", s, "messages", "list"]:
                    wanted = (body.get("filters") or {}).get("metadata") or {}
                    found = [
                        m
                        for m in self._state.messages.get((ws, s), [])
                        if _holds(m["metadata"], wanted)
                    ]
                    return 200, self._page(fixture("messages_list"), found, query)
                case ["workspaces", ws, "search"]:
                    words = str(body.get("query", "")).lower().split()
                    stored = [
                        m for (w, _), ms in self._state.messages.items() if w == ws for m in ms
                    ]
                    hits = [m for m in stored if all(w in m["content"].lower() for w in words)]
                    return 200, list(reversed(hits))[: int(body.get("limit", 10))]
                case ["workspaces", ws, "conclusions"]:
                    raws = body.get("conclusions") if isinstance(body, dict) else None
                    if not isinstance(raws, list) or not 1 <= len(raws) <= 100:
                        return 422, fixture("rejected_101")
                    return 201, [self._store_conclusion(ws, raw) for raw in raws]
                case ["workspaces", ws, "conclusions", "list"]:
                    filters = (body or {}).get("filters") or {}
                    found = [
                        c
                        for c in reversed(self._state.conclusions.get(ws, []))
                        if all(c.get(k) == v for k, v in filters.items())
                    ]
                    return 200, self._page(fixture("conclusions_list"), found, query)
                case ["workspaces", ws, "conclusions", c] if method == "DELETE":
                    stored = self._state.conclusions.get(ws, [])
                    kept = [x for x in stored if x["id"] != c]
                    if len(kept) == len(stored):
                        detail = f"Document {c} not found or does not belong to workspace {ws}"
                        return 404, {"detail": detail}
                    self._state.conclusions[ws] = kept
                    return 204, None
                case ["workspaces", ws, "conclusions", "query"]:
                    filters = body.get("filters") or {}
                    words = set(str(body.get("query", "")).lower().split())
                    pair = [
                        c
                        for c in self._state.conclusions.get(ws, [])
                        if c["observer_id"] == filters.get("observer_id")
                        and c["observed_id"] == filters.get("observed_id")
                    ]
                    pair.sort(key=lambda c: -len(words & set(c["content"].lower().split())))
                    return 200, pair[: int(body.get("top_k", 10))]
        return 405, {"detail": "Method Not Allowed"}

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
                        self._send(*fake._answer(method, self.path, body))
                    case "fail":
                        if behaviour.store:
                            fake._answer(method, self.path, body)
                        self._send(behaviour.status, {"detail": "An unexpected error occurred"})
                    case "missing":
                        self._send(404, fixture("missing"))
                    case "hang":
                        if behaviour.store:
                            fake._answer(method, self.path, body)
                        fake._release.wait(60)
                        self.close_connection = True
                    case "drop":
                        if behaviour.store:
                            fake._answer(method, self.path, body)
                        self.close_connection = True
                    case "commit_late":
                        if fake._release.wait(behaviour.delay):
                            self.close_connection = True  # the fake is stopping
                            return
                        answer = fake._answer(method, self.path, body)
                        self._send(*answer)  # a client that left makes this fail; unheard

            def _send(self, status: int, payload: Any) -> None:
                data = b"" if status == 204 else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _holds(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Honcho's metadata filter: each key equal, or `{"in": [...]}` holding the value."""
    for key, value in wanted.items():
        if isinstance(value, dict) and "in" in value:
            if metadata.get(key) not in value["in"]:
                return False
        elif metadata.get(key) != value:
            return False
    return True
