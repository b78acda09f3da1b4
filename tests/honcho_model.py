"""The fake Honcho's data and answers: what a normal Honcho 3.0.12 keeps and gives back.

`HonchoModel.answer` is one request's status and JSON, in the shapes a real server gave
(`tests/fixtures/honcho/`), refusing what a real server refuses (`honcho_rules.py`); the HTTP
server around it, and its misbehaviours, are `honcho_fake.py`'s.

A deleted session is gone at once (Honcho marks it inactive and deletes it in the background),
and its id is dead: creating it again or posting to it answers 404, as a real Honcho does;
deleting it again, or one never created, answers 404 too. Creating a workspace, peer or session
answers 201, or 200 when it was there; posting messages makes their session and peers; a
conclusion names peers that exist (else 404). Search gives the messages holding every word of
the query (lowercase substrings), newest first, and with `semantic` the workspace's other
messages after them up to `limit` (nearest neighbours have no cutoff); conclusion query gives
the pair's conclusions, most shared words first. A workspace never written to answers `[]` to
both, as Honcho does. A listing's `pages` is 0 when it is empty.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from honcho_rules import (
    NO_PROVIDER_CREATE,
    NO_PROVIDER_QUERY,
    PAIR_NEEDED,
    check_body,
    check_id,
    check_limit,
    check_list,
    conclusion_refusal,
    invalid,
    message_refusal,
    pair,
    refused,
    stored_time,
)

FIXTURES = Path(__file__).parent / "fixtures" / "honcho"


def fixture(name: str) -> Any:
    """A recorded answer, parsed."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


@dataclass
class _State:
    messages: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    conclusions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sessions: set[tuple[str, str]] = field(default_factory=set)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    workspaces: set[str] = field(default_factory=set)
    peers: set[tuple[str, str]] = field(default_factory=set)
    batches: dict[str, int] = field(default_factory=dict)
    """Each conclusion's batch: a listing gives the newest batch first, each in its order."""


class HonchoModel:
    """What the fake Honcho keeps, and its answers; safe to share between threads.

    `key`: the one bearer token taken (None: auth off, as `AUTH_USE_AUTH=false`);
    `embeddings`: whether Honcho has its embedding provider (without it, conclusions are
    refused with 422, as phase A's server did); `semantic`: whether search also gives nearest
    neighbours (as phase B's server did).
    """

    def __init__(
        self, *, key: str | None = None, embeddings: bool = True, semantic: bool = False
    ) -> None:
        self.key = key
        self.embeddings = embeddings
        self.semantic = semantic
        self._state = _State()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

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
            made = self._store_conclusion(
                workspace, {"content": content, "observer_id": observer, "observed_id": observed}
            )
            self._state.batches[made["id"]] = next(self._ids)

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
            "created_at": stored_time(raw.get("created_at") or created_at),
            "workspace_id": workspace,
            "token_count": len(str(raw.get("content", "")).split()),
        }
        self._state.messages.setdefault((workspace, session), []).append(message)
        self._state.sessions.add((workspace, session))
        self._state.peers.add((workspace, str(raw.get("peer_id"))))
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

    @staticmethod
    def _gone(workspace: str, session: str) -> dict[str, Any]:
        return {"detail": f"Session {session} not found in workspace {workspace}"}

    @staticmethod
    def _page(shape: Any, found: list[Any], query: dict[str, list[str]]) -> dict[str, Any]:
        """One page of `found`, as Honcho pages a listing (`?page=&size=`, default 50;
        `pages` is 0 when there is nothing)."""
        size = int(query.get("size", ["50"])[0])
        page = int(query.get("page", ["1"])[0])
        return {
            **shape,
            "items": found[(page - 1) * size : page * size],
            "total": len(found),
            "page": page,
            "size": size,
            "pages": -(-len(found) // size),
        }

    def _made(self, kind: str, key: Any, shape: dict[str, Any]) -> tuple[int, Any]:
        """Get-or-create: 201 when `key` is new to `kind`'s set, 200 when it was there."""
        known: set[Any] = getattr(self._state, kind)
        status = 200 if key in known else 201
        known.add(key)
        return status, shape

    def answer(
        self, method: str, path: str, body: Any, authorization: str | None = None
    ) -> tuple[int, Any]:
        """The status and JSON a normal Honcho gives."""
        if self.key is not None and authorization != f"Bearer {self.key}":
            return 401, {"detail": "Invalid JWT" if authorization else "No access token provided"}
        url = urlsplit(path)
        parts = url.path.strip("/").split("/")[1:]  # after "v3"
        query = parse_qs(url.query)
        with self._lock:
            if method == "POST" and (refusal := check_body(body)) is not None:
                return refusal
            match parts:
                case ["workspaces"] if method == "POST":
                    if refusal := check_id(body.get("id"), ["body", "id"]):
                        return refusal
                    shape = {**fixture("workspace"), "id": body["id"], "metadata": {}}
                    return self._made("workspaces", body["id"], shape)
                case ["workspaces", ws, "peers"] if method == "POST":
                    if refusal := check_id(body.get("id"), ["body", "id"]):
                        return refusal
                    self._state.workspaces.add(ws)
                    shape = {**fixture("peer"), "id": body["id"], "workspace_id": ws}
                    return self._made("peers", (ws, body["id"]), shape)
                case ["workspaces", ws, "sessions"] if method == "POST":
                    return self._session(ws, body)
                case ["workspaces", ws, "sessions", s] if method == "DELETE":
                    # An unknown session, or one already deleted, is not found (the router
                    # reads it with include_inactive=False before it marks it).
                    if (ws, s) not in self._state.sessions:
                        return 404, self._gone(ws, s)
                    self._state.sessions.discard((ws, s))
                    self._state.messages.pop((ws, s), None)
                    self._state.deleted.append((ws, s))
                    return 202, fixture("session_delete")
                case ["workspaces", ws, "sessions", s, "messages"] if method == "POST":
                    return self._messages(ws, s, body)
                case ["workspaces", ws, "sessions", s, "messages", "list"] if method == "POST":
                    wanted = (body.get("filters") or {}).get("metadata") or {}
                    found = [
                        m
                        for m in self._state.messages.get((ws, s), [])
                        if _holds(m["metadata"], wanted)
                    ]
                    return 200, self._page(fixture("messages_list"), found, query)
                case ["workspaces", ws, "search"] if method == "POST":
                    return self._search(ws, body)
                case ["workspaces", ws, "conclusions"] if method == "POST":
                    return self._conclude(ws, body)
                case ["workspaces", ws, "conclusions", "list"] if method == "POST":
                    filters = body.get("filters") or {}
                    stored = self._state.conclusions.get(ws, [])
                    batch = self._state.batches
                    newest = sorted(stored, key=lambda c: -batch.get(c["id"], 0))
                    found = [c for c in newest if all(c.get(k) == v for k, v in filters.items())]
                    return 200, self._page(fixture("conclusions_list"), found, query)
                case ["workspaces", ws, "conclusions", "query"] if method == "POST":
                    return self._query(ws, body)
                case ["workspaces", ws, "conclusions", c] if method == "DELETE":
                    stored = self._state.conclusions.get(ws, [])
                    kept = [x for x in stored if x["id"] != c]
                    if len(kept) == len(stored):
                        detail = f"Document {c} not found or does not belong to workspace {ws}"
                        return 404, {"detail": detail}
                    self._state.conclusions[ws] = kept
                    return 204, None
        return 405, {"detail": "Method Not Allowed"}

    def _session(self, ws: str, body: dict[str, Any]) -> tuple[int, Any]:
        if refusal := check_id(body.get("id"), ["body", "id"]):
            return refusal
        if (ws, body["id"]) in self._state.deleted:
            return 404, self._gone(ws, body["id"])
        self._state.workspaces.add(ws)
        for peer in body.get("peers") or {}:
            self._state.peers.add((ws, peer))
        shape = {**fixture("session"), "id": body["id"], "workspace_id": ws}
        return self._made("sessions", (ws, body["id"]), shape)

    def _messages(self, ws: str, s: str, body: dict[str, Any]) -> tuple[int, Any]:
        batch = body.get("messages")
        if refusal := check_list(batch, ["body", "messages"]):
            return refusal
        assert isinstance(batch, list)
        for n, raw in enumerate(batch):
            if refusal := message_refusal(raw, n):
                return refusal
        if (ws, s) in self._state.deleted:
            return 404, self._gone(ws, s)
        self._state.workspaces.add(ws)
        now = "2026-11-29T20:39:34.902158Z"  # one server time for the whole batch
        return 201, [self._store_message(ws, s, raw, now) for raw in batch]

    def _search(self, ws: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Full-text search as Honcho without embeddings does it (every word, here as a
        lowercase substring), newest first; with `semantic`, the rest of the workspace's
        messages fill up to `limit` as nearest neighbours do (no relevance cutoff)."""
        if not isinstance(body.get("query"), str):
            return invalid("missing", ["body", "query"], "Field required", body)
        limit = body.get("limit", 10)
        if refusal := check_limit(limit, ["body", "limit"]):
            return refusal
        words = body["query"].lower().split()
        stored = [m for (w, _), ms in self._state.messages.items() if w == ws for m in ms]
        newest = list(reversed(stored))
        hits = [m for m in newest if all(w in m["content"].lower() for w in words)]
        if self.semantic:
            hits += [m for m in newest if m not in hits]
        return 200, hits[:limit]

    def _conclude(self, ws: str, body: dict[str, Any]) -> tuple[int, Any]:
        raws = body.get("conclusions", body.get("observations"))
        if refusal := check_list(raws, ["body", "conclusions"]):
            return refusal
        assert isinstance(raws, list)
        for n, raw in enumerate(raws):
            if refusal := conclusion_refusal(raw, n):
                return refusal
        for raw in raws:
            for peer in (raw["observer_id"], raw["observed_id"]):
                if (ws, peer) not in self._state.peers:
                    return refused(f"Peer {peer} not found in workspace {ws}", 404)
        if not self.embeddings:
            return refused(NO_PROVIDER_CREATE)
        batch = next(self._ids)
        made = [self._store_conclusion(ws, raw) for raw in raws]
        self._state.batches.update((c["id"], batch) for c in made)
        return 201, made

    def _query(self, ws: str, body: dict[str, Any]) -> tuple[int, Any]:
        """The pair's conclusions, most words shared with the query first (the nearest)."""
        if not isinstance(body.get("query"), str):
            return invalid("missing", ["body", "query"], "Field required", body)
        top_k = body.get("top_k", 10)
        if refusal := check_limit(top_k, ["body", "top_k"]):
            return refusal
        named = pair(body.get("filters"))
        if named is None:
            return refused(PAIR_NEEDED)
        if not self.embeddings:
            return refused(NO_PROVIDER_QUERY)
        words = set(body["query"].lower().split())
        found = [
            c
            for c in self._state.conclusions.get(ws, [])
            if (c["observer_id"], c["observed_id"]) == named
        ]
        found.sort(key=lambda c: -len(words & set(c["content"].lower().split())))
        return 200, found[:top_k]


def _holds(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Honcho's metadata filter: each key equal, or `{"in": [...]}` holding the value."""
    for key, value in wanted.items():
        if isinstance(value, dict) and "in" in value:
            if metadata.get(key) not in value["in"]:
                return False
        elif metadata.get(key) != value:
            return False
    return True
