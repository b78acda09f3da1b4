"""The one typed client to the daemon, over its Unix socket (`serve.exchange`: the standard
library's socket alone, so a command loads no HTTP client to ask it), or TCP with a token, or an
httpx client given (such as `httpx.ASGITransport` in-process, in tests).

A refusal comes back as `DaemonError` with the daemon's error code, HTTP status and message; a
daemon that cannot be reached is `DaemonError` with status 0 and a message saying to start it.
Its answers are the same values `Service` gives, so `memoryd mcp` can use either.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import DaemonError
from memoryd.home import Home
from memoryd.labels import Labelled
from memoryd.serve.exchange import Unanswered, Unreached, exchange, request

if TYPE_CHECKING:  # httpx and the service load when they are used: the CLI's recall needs neither
    import httpx

    from memoryd.forget.run import Asked, Done, Shown
    from memoryd.memory.journal import Op
    from memoryd.serve.service import Edited

TIMEOUT = 30.0
"""How long a request to the daemon may take, in seconds, its answer included."""

HEALTH_TIMEOUT = 1.0
"""How long `serves` waits for a daemon's health answer, in seconds, before saying none serves."""

HEALTH_LIMIT = 1 << 16
"""The most bytes of a health answer `serves` reads."""

Send = Callable[[str, str, bytes | None], tuple[int, bytes]]
"""One request (method, path with its query, JSON body) to the daemon: its status and body, or
`Unreached` (nothing sent) or `Unanswered` (sent, no answer)."""


class Client:
    """A connection to one daemon; use it as a context manager or call `close`."""

    def __init__(
        self,
        send: Send,
        where: str,
        socket: Path | None = None,
        close: Callable[[], None] = lambda: None,
        start: str = "memoryd serve",
    ) -> None:
        self.send = send
        self.where = where
        self.socket = socket
        self._close = close
        self.start = start

    @classmethod
    def unix(cls, home: Home) -> Client:
        """The daemon serving `home`, through `<home>/memoryd.sock`."""
        path = home.root / "memoryd.sock"

        def send(method: str, target: str, body: bytes | None) -> tuple[int, bytes]:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            found = exchange(str(path), request(method, target, body, headers), TIMEOUT)
            return found.status, found.body

        return cls(send, str(path), path)

    @classmethod
    def of(cls, http: httpx.Client, where: str, start: str = "memoryd serve") -> Client:
        """The daemon `http` reaches (its base URL, its headers), shown as `where`; `start` is
        the command that would serve it."""
        import httpx

        def send(method: str, target: str, body: bytes | None) -> tuple[int, bytes]:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            try:
                response = http.request(method, target, content=body, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                raise Unreached(str(e)) from e
            except httpx.TransportError as e:
                raise Unanswered(type(e).__name__) from e
            return response.status_code, response.content

        return cls(send, where, close=http.close, start=start)

    @classmethod
    def tcp(cls, url: str, token: str, home: Home | None = None) -> Client:
        """The daemon listening at `url` (`http://127.0.0.1:8765`), with its bearer token; an
        unreachable one is started with `memoryd serve --listen` on that address (and `home`)."""
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
        http = httpx.Client(base_url=parsed, headers=headers, timeout=TIMEOUT)
        return cls.of(http, str(parsed), _serving(parsed, home))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._close()

    def _unreachable(self, why: object) -> DaemonError:
        return DaemonError(
            f"cannot reach memoryd at {self.where} ({why}): start it with `{self.start}`",
            "unreachable",
            0,
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        # No socket, no daemon: said without a connect.
        if self.socket is not None and not self.socket.exists():
            raise self._unreachable("no socket")
        if params:
            from urllib.parse import urlencode

            path = f"{path}?{urlencode(params)}"
        # ASCII escapes: a lone surrogate in a field is sent as JSON, not a UnicodeEncodeError.
        body = None if json_body is None else json.dumps(json_body).encode()
        try:
            status, raw = self.send(method, path, body)
        except Unreached as e:
            raise self._unreachable(e) from e
        except Unanswered as e:
            # Asked, then no answer: the daemon may have done it (a forget it began is
            # finished when it starts again), so "start it" alone would say nothing was done.
            raise DaemonError(
                f"memoryd at {self.where} gave no answer ({e}): what was asked "
                "may or may not have been done; `memoryd status` says whether it is serving, "
                f"`{self.start}` starts it again",
                "unreachable",
                0,
            ) from e
        try:
            found = json.loads(raw)
        except ValueError:
            found = None
        if status >= 400:
            error = found.get("error") if isinstance(found, dict) else None
            if isinstance(error, dict):
                code, message = str(error.get("code")), str(error.get("message"))
            else:
                code, message = "http", raw.decode("utf-8", "replace")[:200]
            raise DaemonError(message, code, status)
        return found

    def recall(self, query: str, k: int = 5, session: str | None = None) -> Labelled:
        """The model's `recall`."""
        body = {"query": query, "k": k, "session": session}
        return _labelled(self._call("POST", "/v1/recall", json_body=body))

    def begin_recall(self, query: str, k: int, session: str | None) -> Callable[[], Labelled]:
        """`recall`, as the MCP server calls it (`serve.mcp.Backend`): answered at once, by the
        daemon, which waits for Honcho itself."""
        from memoryd.serve.footprint import Ready

        return Ready(self.recall(query, k, session))

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
        done = self._call("POST", "/v1/memory", json_body=body)
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
        done = self._call("POST", f"/v1/sessions/{session}/records", json_body={"records": records})
        return int(done["appended"])

    def forget_preview(self, request: Asked) -> list[Shown]:
        """What the owner's forget would cover, as recall shows it, each with its key."""
        from memoryd.forget.run import Shown

        body = {**_forget_body(request), "dry_run": True}
        found = self._call("POST", "/v1/forget", json_body=body)["shown"]
        return [Shown(str(s["key"]), str(s["text"])) for s in found]

    def forget(self, request: Asked) -> Done:
        """The owner's forget, for good: what it forgot, by key."""
        from memoryd.forget.run import Done

        done = self._call("POST", "/v1/forget", json_body=_forget_body(request))
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


def _serving(url: httpx.URL, home: Home | None) -> str:
    """The command that serves the daemon at `url` (for `home`, when given)."""
    port = url.port if url.port is not None else (443 if url.scheme == "https" else 80)
    host = f"[{url.host}]" if ":" in url.host else url.host
    loopback = host in ("localhost", "[::1]") or host.startswith("127.")
    public = "" if loopback else " --public"
    at = "" if home is None else f" --home {shlex.quote(str(home.root))}"
    return f"memoryd serve --listen {shlex.quote(f'{host}:{port}')}{public}{at}"


def serves(home: Home, timeout: float = HEALTH_TIMEOUT) -> bool:
    """Whether a daemon serves `home` on `<home>/memoryd.sock`, answering `GET /v1/health` with
    `{"ok": true}` within `timeout`: what `Client.unix(home).health()` says, in about a
    millisecond and without waiting longer for a daemon too busy to answer (the CLI asks it
    before every command that a daemon may answer or catch up for it)."""
    try:
        found = exchange(
            str(home.root / "memoryd.sock"), request("GET", "/v1/health"), timeout, HEALTH_LIMIT
        )
    except (Unreached, Unanswered):  # no socket, a stale one, a daemon too slow to answer
        return False
    if found.status != 200:
        return False
    try:
        said = json.loads(found.body)
    except ValueError:
        return False
    return isinstance(said, dict) and said.get("ok") is True


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
    return Labelled(str(body["text"]), str(body["class"]), bool(body["untrusted"]))
