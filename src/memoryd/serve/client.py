"""The one typed client to the daemon, over its Unix socket (or TCP with a token, or any httpx
transport, such as `httpx.ASGITransport` in-process).

A refusal comes back as `DaemonError` with the daemon's error code, HTTP status and message; a
daemon that cannot be reached is `DaemonError` with status 0 and a message saying to start it.
Its answers are the same values `Service` gives, so `memoryd mcp` can use either.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import DaemonError
from memoryd.home import Home

if TYPE_CHECKING:  # httpx and the service load when a client is made: `serves` needs neither
    from collections.abc import Callable

    import httpx

    from memoryd.forget.run import Asked, Done, Shown
    from memoryd.memory.journal import Op
    from memoryd.serve.service import Edited, Labelled

TIMEOUT = 30.0

HEALTH_TIMEOUT = 1.0
"""How long `serves` waits for a daemon's health answer, in seconds, before saying none serves."""


class Client:
    """A connection to one daemon; use it as a context manager or call `close`."""

    def __init__(self, http: httpx.Client, where: str, socket: Path | None = None) -> None:
        self.http = http
        self.where = where
        self.socket = socket

    @classmethod
    def unix(cls, home: Home) -> Client:
        """The daemon serving `home`, through `<home>/memoryd.sock`."""
        import httpx

        path = home.root / "memoryd.sock"
        transport = httpx.HTTPTransport(uds=str(path))
        http = httpx.Client(transport=transport, base_url="http://memoryd", timeout=TIMEOUT)
        return cls(http, str(path), path)

    @classmethod
    def tcp(cls, url: str, token: str) -> Client:
        """The daemon listening at `url` (`http://127.0.0.1:8765`), with its bearer token."""
        import httpx

        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            parsed = None
        # Not echoed, and nothing but the address: a user, query or fragment may hold a key.
        if (
            parsed is None
            or parsed.scheme not in ("http", "https")
            or not parsed.host
            or parsed.userinfo
            or parsed.query
            or parsed.fragment
        ):
            raise DaemonError(
                "the daemon's URL is http(s), a host and a port, nothing else, like "
                "http://127.0.0.1:8765",
                "bad_url",
                0,
            )
        headers = {"Authorization": f"Bearer {token}"}
        return cls(httpx.Client(base_url=parsed, headers=headers, timeout=TIMEOUT), str(parsed))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.http.close()

    def _unreachable(self, why: object) -> DaemonError:
        return DaemonError(
            f"cannot reach memoryd at {self.where} ({why}): start it with `memoryd serve`",
            "unreachable",
            0,
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        # No socket, no daemon: said without a connect (httpcore leaks a failed one's socket).
        if self.socket is not None and not self.socket.exists():
            raise self._unreachable("no socket")
        try:
            response = self.http.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as e:
            raise self._unreachable(e) from e
        except httpx.TransportError as e:
            # Asked, then no answer: the daemon may have done it (a forget it began is
            # finished when it starts again), so "start it" alone would say nothing was done.
            raise DaemonError(
                f"memoryd at {self.where} gave no answer ({type(e).__name__}): what was asked "
                "may or may not have been done; `memoryd status` says whether it is serving, "
                "`memoryd serve` starts it again",
                "unreachable",
                0,
            ) from e
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error:
            found = body.get("error") if isinstance(body, dict) else None
            if isinstance(found, dict):
                code, message = str(found.get("code")), str(found.get("message"))
            else:
                code, message = "http", response.text[:200]
            raise DaemonError(message, code, response.status_code)
        return body

    def recall(self, query: str, k: int = 5, session: str | None = None) -> Labelled:
        """The model's `recall`."""
        body = {"query": query, "k": k, "session": session}
        return _labelled(self._call("POST", "/v1/recall", json=body))

    def begin_recall(self, query: str, k: int, session: str | None) -> Callable[[], Labelled]:
        """`recall`, as the MCP server calls it (`serve.mcp.Backend`): answered at once, by the
        daemon, which waits for Honcho itself."""
        answer = self.recall(query, k, session)
        return lambda: answer

    def block(self, session: str | None = None) -> Labelled:
        """The memory block for `session`."""
        params = {"session": session} if session is not None else {}
        return _labelled(self._call("GET", "/v1/block", params=params))

    def edit(
        self,
        op: Op,
        file: str,
        text: str,
        old: str,
        session: str | None = None,
        *,
        as_owner: bool = False,
    ) -> Edited:
        """A memory edit, by the model for `session` or by the owner (`as_owner=True`): say
        exactly one, or the daemon refuses it (422)."""
        body: dict[str, Any] = {"op": str(op), "file": file, "text": text, "old": old}
        body.update(_who(session, as_owner))
        done = self._call("POST", "/v1/memory", json=body)
        from memoryd.serve.service import Edited

        return Edited(int(done["line"]), str(done["op"]), str(done["file"]), str(done["usage"]))

    def files(self, session: str | None = None, *, as_owner: bool = False) -> list[dict[str, Any]]:
        """The memory files `session`'s class may see, or every one (`as_owner=True`), with
        their labels: say exactly one, or the daemon refuses it (422)."""
        found: list[dict[str, Any]] = self._call(
            "GET", "/v1/memory/files", params=_who(session, as_owner)
        )["files"]
        return found

    def append(self, session: str, records: list[dict[str, Any]]) -> int:
        """Append records to a session's log; the daemon indexes them before answering."""
        done = self._call("POST", f"/v1/sessions/{session}/records", json={"records": records})
        return int(done["appended"])

    def forget_preview(self, request: Asked) -> list[Shown]:
        """What the owner's forget would cover, as recall shows it, each with its key."""
        from memoryd.forget.run import Shown

        body = {**_forget_body(request), "dry_run": True}
        found = self._call("POST", "/v1/forget", json=body)["shown"]
        return [Shown(str(s["key"]), str(s["text"])) for s in found]

    def forget(self, request: Asked) -> Done:
        """The owner's forget, for good: what it forgot, by key."""
        from memoryd.forget.run import Done

        done = self._call("POST", "/v1/forget", json=_forget_body(request))
        return Done(int(done["id"]), str(done["kind"]), tuple(map(str, done["forgotten"])))

    def status(self) -> dict[str, Any]:
        """The daemon's status."""
        found: dict[str, Any] = self._call("GET", "/v1/status")
        return found

    def reindex(self) -> bool:
        """Start a reindex; False when one was running already."""
        return bool(self._call("POST", "/v1/reindex")["started"])

    def health(self) -> bool:
        """Whether the daemon answers: False when none can be reached (no socket, a stale one,
        nothing listening). A daemon that answers with an error (a wrong token) still raises."""
        if self.socket is not None and not _listening(self.socket):
            return False
        try:
            return bool(self._call("GET", "/v1/health")["ok"])
        except DaemonError as e:
            if e.status == 0:
                return False
            raise

    def window(self) -> dict[str, str]:
        """A one-time link to the owner's window (`url`) and its opener (`file`)."""
        found = self._call("POST", "/v1/window")
        return {"url": str(found["url"]), "file": str(found["file"])}

    def tools(self) -> list[dict[str, Any]]:
        """The model's tool schemas."""
        found: list[dict[str, Any]] = self._call("GET", "/v1/tools")["tools"]
        return found


def serves(home: Home, timeout: float = HEALTH_TIMEOUT) -> bool:
    """Whether a daemon serves `home` on `<home>/memoryd.sock`, answering `GET /v1/health` with
    `{"ok": true}` within `timeout`: what `Client.unix(home).health()` says, in about a
    millisecond and without loading the HTTP client (the CLI asks it before every catch-up)."""
    request = b"GET /v1/health HTTP/1.1\r\nHost: memoryd\r\nConnection: close\r\n\r\n"
    answer = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(timeout)
            probe.connect(str(home.root / "memoryd.sock"))
            probe.sendall(request)
            while len(answer) < 1 << 16 and (chunk := probe.recv(4096)):
                answer += chunk
    except OSError:  # no socket, a stale one, a path too long, a daemon too slow to answer
        return False
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.1 200 ", b"HTTP/1.0 200 ")):
        return False
    try:
        found = json.loads(body)
    except ValueError:
        return False
    return isinstance(found, dict) and found.get("ok") is True


def _listening(path: Path) -> bool:
    # A connect of our own first: httpcore leaks the socket of a failed Unix connect, and a
    # stale socket file (a daemon killed) is there but refuses.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            return probe.connect_ex(str(path)) == 0
        except OSError:  # a path too long for a Unix socket
            return False


def _who(session: str | None, as_owner: bool) -> dict[str, str]:
    # Only what was said is sent: the owner is never the default of a missing session.
    who = {"session": session} if session is not None else {}
    if as_owner:
        who["as"] = "owner"
    return who


def _forget_body(request: Asked) -> dict[str, Any]:
    entry: dict[str, Any] | None = None
    if request.entry is not None:
        entry = dict(zip(("file", "words"), request.entry, strict=True))
    elif request.at is not None:
        entry = dict(zip(("file", "n", "shown"), request.at, strict=True))
    return {"keys": list(request.keys), "entry": entry, "query": request.query, "as": "owner"}


def _labelled(body: dict[str, Any]) -> Labelled:
    from memoryd.serve.service import Labelled

    return Labelled(str(body["text"]), str(body["class"]), bool(body["untrusted"]))
