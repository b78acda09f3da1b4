"""A small typed client for Honcho's v3 API (httpx, no SDK): the calls memoryd makes, no more.

Every call has its own timeout and is made once: nothing here retries. Failures become one
`HonchoError` (see errors.py) with a kind, the HTTP status and whether the request may have
landed. The key is sent only as a bearer token; it is never part of a message, an error or a
log line, and `repr(client)` does not show it.

    with Honcho("http://127.0.0.1:8000", key=None) as honcho:
        honcho.add_messages("boxmaker", "s1", [MessageIn("kyle", "hello", {"turn": 1})])
        hits = honcho.search("boxmaker2", "coffee", limit=5, timeout=1.5)
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from memoryd.errors import HonchoError
from memoryd.honcho import deadline
from memoryd.text.answer import parse_time

MAX_BATCH = 100  # messages or conclusions in one request (Honcho refuses 101 with a 422)
PAGE_SIZE = 100  # the largest page Honcho lists
MAX_PAGES = 1000
"""The most pages of one listing read (100,000 items): a server that says there are more
pages, page after page, would hold the worker for ever and fill its memory."""
MAX_CONTENT = 25_000  # characters of one message (Honcho refuses 25 001 with a 422)
ONE_RESULT = 320 * 1024
"""The most bytes an answer may spend on each message or conclusion it was asked for:
MAX_CONTENT characters outside the BMP written as two `\\uXXXX` (12 bytes each), and the
other fields. A longer answer is a server fault, not read on into memory."""
MAX_ANSWER = PAGE_SIZE * ONE_RESULT
"""The most bytes of any one answer: a full page of a listing (32 MiB)."""


def _path(*parts: str) -> str:
    """A path under `/workspaces/`, each part one segment: an id Honcho gave back (a
    conclusion's, to delete it) can never reach another path with a `/`, `?` or `..` (httpx
    resolves a `..` segment: a conclusion `..` would delete its workspace)."""
    return "/workspaces/" + "/".join(quote(part, safe="").replace(".", "%2E") for part in parts)


def honcho_time(at: str) -> str | None:
    """An RFC 3339 time as Honcho gives its own back (`2026-09-28T23:19:00.000000Z`), a form
    its validator always takes; None when `at` is no time. Python reads forms Honcho refuses
    (`:60`, `20260928T231900Z`, a leading space), and one refused time fails its whole batch."""
    try:
        # isoformat, not strftime: %Y writes the year 999 as "999", which is no time.
        return parse_time(at).isoformat(timespec="microseconds").replace("+00:00", "Z")
    except ValueError:
        return None


@dataclass(frozen=True)
class MessageIn:
    """A message to add: who said it, the text, its metadata and when (RFC 3339, or None)."""

    peer: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None

    def body(self) -> dict[str, Any]:
        """The JSON Honcho's `MessageCreate` expects: the text cut to the longest Honcho
        keeps, the time in Honcho's own form (left out, so Honcho's clock gives it, when it
        is no time), so that one message never makes Honcho refuse its whole batch."""
        out: dict[str, Any] = {"peer_id": self.peer, "content": self.content[:MAX_CONTENT]}
        if self.metadata:
            out["metadata"] = self.metadata
        created_at = None if self.created_at is None else honcho_time(self.created_at)
        if created_at is not None:
            out["created_at"] = created_at
        return out


@dataclass(frozen=True)
class Message:
    """A message as Honcho gives it back (search results and listings)."""

    id: str
    content: str
    peer: str
    session: str
    metadata: dict[str, Any]
    created_at: str

    @classmethod
    def of(cls, raw: Any) -> Message:
        """The message in one JSON object of Honcho's answer."""
        metadata = raw.get("metadata")
        return cls(
            id=_text(raw, "id"),
            content=_text(raw, "content"),
            peer=_text(raw, "peer_id"),
            session=_text(raw, "session_id"),
            metadata=metadata if isinstance(metadata, dict) else {},
            created_at=_text(raw, "created_at"),
        )


@dataclass(frozen=True)
class ConclusionIn:
    """A conclusion to create: its text, who holds it and about whom."""

    content: str
    observer: str
    observed: str

    def body(self) -> dict[str, Any]:
        """The JSON Honcho's conclusion create expects."""
        return {"content": self.content, "observer_id": self.observer, "observed_id": self.observed}


@dataclass(frozen=True)
class Conclusion:
    """A conclusion as Honcho gives it back."""

    id: str
    content: str
    observer: str
    observed: str
    created_at: str

    @classmethod
    def of(cls, raw: Any) -> Conclusion:
        """The conclusion in one JSON object of Honcho's answer."""
        return cls(
            id=_text(raw, "id"),
            content=_text(raw, "content"),
            observer=_text(raw, "observer_id"),
            observed=_text(raw, "observed_id"),
            created_at=_text(raw, "created_at"),
        )


def _text(raw: dict[str, Any], key: str) -> str:
    # A field Honcho left out or gave as no string reads as empty: a null content is not "None".
    value = raw.get(key)
    return value if isinstance(value, str) else ""


class Honcho:
    """Honcho's v3 API at `url`, with `key` as the bearer token (None: no auth header).

    `timeout` (seconds) is every call's default; each call can give its own. The client is
    safe to share between threads (httpx's pool is).
    """

    def __init__(
        self,
        url: str,
        key: str | None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.Client(
            base_url=f"{self.url}/v3",
            headers=headers,
            transport=transport or deadline.Transport(),
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"Honcho({self.url!r})"

    def __enter__(self) -> Honcho:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    # Get-or-create: Honcho answers 201 when it created, 200 when it existed.

    def workspace(self, workspace: str, *, timeout: float | None = None) -> None:
        """Make sure the workspace exists."""
        self._call("POST", "/workspaces", {"id": workspace}, timeout)

    def peer(self, workspace: str, peer: str, *, timeout: float | None = None) -> None:
        """Make sure the peer exists in the workspace."""
        self._call("POST", _path(workspace, "peers"), {"id": peer}, timeout)

    def session(
        self,
        workspace: str,
        session: str,
        peers: Sequence[str] = (),
        *,
        timeout: float | None = None,
    ) -> None:
        """Make sure the session exists, with these peers in it."""
        body: dict[str, Any] = {"id": session}
        if peers:
            body["peers"] = {peer: {} for peer in peers}
        self._call("POST", _path(workspace, "sessions"), body, timeout)

    def add_messages(
        self,
        workspace: str,
        session: str,
        messages: Sequence[MessageIn],
        *,
        timeout: float | None = None,
    ) -> list[Message]:
        """Add one batch (1 to 100 messages) to a session, in order; Honcho's copies back."""
        if not 1 <= len(messages) <= MAX_BATCH:
            raise ValueError(f"a batch holds 1 to {MAX_BATCH} messages, not {len(messages)}")
        body = {"messages": [message.body() for message in messages]}
        path = _path(workspace, "sessions", session, "messages")
        return [Message.of(raw) for raw in self._list(self._call("POST", path, body, timeout))]

    def list_messages(
        self,
        workspace: str,
        session: str,
        metadata: dict[str, Any],
        *,
        timeout: float | None = None,
    ) -> list[Message]:
        """Every message of a session whose metadata holds `metadata` (e.g. a `key` with
        `{"in": [...]}`), oldest first, all pages read; each page its own call."""
        path = _path(workspace, "sessions", session, "messages", "list")
        items = self._pages(path, {"filters": {"metadata": metadata}}, timeout)
        return [Message.of(raw) for raw in items]

    def create_conclusions(
        self,
        workspace: str,
        conclusions: Sequence[ConclusionIn],
        *,
        timeout: float | None = None,
    ) -> list[Conclusion]:
        """Create 1 to 100 conclusions (Honcho needs its embedding provider for this)."""
        if not 1 <= len(conclusions) <= MAX_BATCH:
            raise ValueError(f"a batch holds 1 to {MAX_BATCH} conclusions")
        body = {"conclusions": [conclusion.body() for conclusion in conclusions]}
        answer = self._call("POST", _path(workspace, "conclusions"), body, timeout)
        return [Conclusion.of(raw) for raw in self._list(answer)]

    def list_conclusions(
        self, workspace: str, filters: dict[str, Any], *, timeout: float | None = None
    ) -> list[Conclusion]:
        """Every conclusion of the workspace that `filters` (e.g. `observer_id` and
        `observed_id`) select, newest first, all pages read; each page its own call."""
        path = _path(workspace, "conclusions", "list")
        items = self._pages(path, {"filters": filters}, timeout)
        return [Conclusion.of(raw) for raw in items]

    def _pages(self, path: str, body: dict[str, Any], timeout: float | None) -> list[Any]:
        """The items of every page a list route answers, in order: each page its own call."""
        found: list[Any] = []
        page = 1
        while True:
            answer = self._call("POST", f"{path}?page={page}&size={PAGE_SIZE}", body, timeout)
            if not isinstance(answer, dict):
                raise HonchoError("server", 200)
            found.extend(self._list(answer.get("items")))
            pages = answer.get("pages")
            if not isinstance(pages, int) or page >= pages:
                return found
            if page >= MAX_PAGES:
                raise HonchoError("server", 200)
            page += 1

    def delete_conclusion(
        self, workspace: str, conclusion: str, *, timeout: float | None = None
    ) -> None:
        """Delete one conclusion (204; HonchoError `missing` when it is not there)."""
        self._call("DELETE", _path(workspace, "conclusions", conclusion), None, timeout)

    def delete_session(self, workspace: str, session: str, *, timeout: float | None = None) -> None:
        """Delete a session and its messages (202: Honcho deletes them in the background; the
        id can never be used again). HonchoError `missing` when it is not there."""
        self._call("DELETE", _path(workspace, "sessions", session), None, timeout)

    def search(
        self, workspace: str, query: str, *, limit: int = 10, timeout: float | None = None
    ) -> list[Message]:
        """Honcho's workspace message search (no relevance cutoff: filter the results)."""
        body = {"query": query, "limit": limit}
        answer = self._call("POST", _path(workspace, "search"), body, timeout, limit * ONE_RESULT)
        return [Message.of(raw) for raw in self._list(answer)]

    def query_conclusions(
        self,
        workspace: str,
        query: str,
        *,
        observer: str,
        observed: str,
        top_k: int = 10,
        timeout: float | None = None,
    ) -> list[Conclusion]:
        """The conclusions `observer` holds about `observed` nearest to `query`."""
        body = {
            "query": query,
            "top_k": top_k,
            "filters": {"observer_id": observer, "observed_id": observed},
        }
        path = _path(workspace, "conclusions", "query")
        answer = self._call("POST", path, body, timeout, top_k * ONE_RESULT)
        return [Conclusion.of(raw) for raw in self._list(answer)]

    def _call(
        self, method: str, path: str, body: Any, timeout: float | None, most: int = MAX_ANSWER
    ) -> Any:
        """One request, its failure classified, its answer at most `most` bytes; never retried
        here."""
        seconds = self.timeout if timeout is None else timeout
        # httpx's timeout bounds each read, not the whole answer: one sent a byte at a time
        # would hold the call (a recall's thread, a sync past its deadline) for ever.
        ends = time.monotonic() + seconds
        try:
            with (
                deadline.until(ends),
                self._http.stream(method, path, json=body, timeout=seconds) as response,
            ):
                status = response.status_code
                # An error's body is read too (and dropped): a connection left mid-answer is
                # closed, not kept for the next call.
                data = _read(response, ends, most)
        except httpx.ConnectTimeout:
            raise HonchoError("timeout") from None
        except httpx.TimeoutException:
            raise HonchoError("timeout", ambiguous=True) from None
        except httpx.ConnectError:
            raise HonchoError("unreachable") from None
        except httpx.TransportError:
            # The connection broke after the request went out (or while it did).
            raise HonchoError("unreachable", ambiguous=True) from None
        if status == 204:
            return None
        if status < 300:
            try:
                return json.loads(data)
            except (ValueError, RecursionError):
                # RecursionError: nested deeper than the parser reads.
                raise HonchoError("server", status) from None
        raise HonchoError(_kind(status), status)

    @staticmethod
    def _list(answer: Any) -> list[dict[str, Any]]:
        """A list of JSON objects, as Honcho answers; anything else is a server fault."""
        if not isinstance(answer, list) or not all(isinstance(raw, dict) for raw in answer):
            raise HonchoError("server", 200)
        return answer


def _read(response: httpx.Response, deadline: float, most: int) -> bytes:
    """The answer's body, as long as it comes by `deadline` and holds at most `most` bytes
    (decoded); HonchoError `timeout` or `server` otherwise."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > most:
            raise HonchoError("server", response.status_code)
        if time.monotonic() > deadline:
            raise HonchoError("timeout", ambiguous=True)
        chunks.append(chunk)
    return b"".join(chunks)


def _kind(status: int) -> str:
    """The kind of an HTTP error status."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "missing"
    if status == 429 or status >= 500:
        return "server"
    return "rejected"
