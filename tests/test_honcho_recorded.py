"""The fake Honcho against a real one: every recorded exchange on a route memoryd uses, sent
again to the fake in the order it was recorded, must get the same status and the same answer
(`tests/fixtures/honcho/exchanges.json`, copied from `../shared/honcho/recorded/`).

Phase A's server had no embedding provider, B's (and E's, run on it) one, C's auth on, F's
messages listed by metadata. What differs by nature is not compared: ids and server times, and
which messages a search with embeddings fills its `limit` with (there only the count).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from honcho_fake import FakeHoncho

EXCHANGES = json.loads(
    (Path(__file__).parent / "fixtures" / "honcho" / "exchanges.json").read_text(encoding="utf-8")
)
KEY = "fake-admin-jwt"
AUTH = {"admin": KEY, "workspace ws-auth": KEY, "garbage": "garbage"}


def _fake(phase: str) -> FakeHoncho:
    """A fake configured as the phase's server was."""
    if phase == "phaseA":
        return FakeHoncho(embeddings=False)
    if phase == "phaseC":
        return FakeHoncho(key=KEY)
    fake = FakeHoncho(semantic=True)
    if phase == "phaseF":  # the messages phase F listed, as its worker had sent them
        for key, peer, text in (
            ("sx:1:user", "kyle", "tea time"),
            ("sx:1:reply", "agent", "ok tea"),
        ):
            fake.seed_message("ws-meta", "sx", peer, text, {"key": key, "turn": 1})
    return fake


def _ids(recorded: Any, got: Any, into: dict[str, str]) -> None:
    """Pair the ids a real answer and the fake's gave, position by position."""
    if isinstance(recorded, list) and isinstance(got, list):
        for a, b in zip(recorded, got, strict=False):
            _ids(a, b, into)
    elif isinstance(recorded, dict) and isinstance(got, dict) and "id" in recorded:
        into[str(recorded["id"])] = str(got.get("id"))


@pytest.fixture(scope="module")
def replayed() -> Iterator[dict[tuple[str, str], tuple[int, Any]]]:
    """Every exchange sent again, in order, each phase to its own fake (E to B's): the
    status and JSON the fake answered, by (phase, file)."""
    answers: dict[tuple[str, str], tuple[int, Any]] = {}
    fakes: dict[str, FakeHoncho] = {}
    ids: dict[str, str] = {}
    http = httpx.Client(timeout=5.0)
    try:
        for exchange in EXCHANGES:
            phase = "phaseB" if exchange["phase"] == "phaseE" else exchange["phase"]
            if phase not in fakes:
                fakes[phase] = _fake(phase).start()
            path = exchange["path"]
            for real, ours in ids.items():
                path = path.replace(f"/{real}", f"/{ours}")
            headers = {}
            if exchange["auth"] is not None:
                headers["Authorization"] = f"Bearer {AUTH[exchange['auth']]}"
            try:
                response = http.request(
                    exchange["method"],
                    fakes[phase].url + path,
                    params=exchange["params"],
                    json=exchange["body"],
                    headers=headers,
                )
            except httpx.TransportError:  # the fake broke on it: that exchange fails alone
                answers[(exchange["phase"], exchange["file"])] = (0, None)
                continue
            got = response.json() if response.content else None
            _ids(exchange["response"], got, ids)
            answers[(exchange["phase"], exchange["file"])] = (response.status_code, got)
        yield answers
    finally:
        http.close()
        for fake in fakes.values():
            fake.stop()


def _errors(detail: Any) -> Any:
    """An error body's detail without what it echoes: Honcho's text, or each validation
    error's type, place and message."""
    if isinstance(detail, list):
        return [(e["type"], e["loc"], e["msg"]) for e in detail]
    return detail


def _items(items: list[Any], exchange: dict[str, Any]) -> list[Any]:
    """What must agree in a list of messages or conclusions: the fields, and each one's text
    and peers (and its time where the request gave it)."""
    given = [m.get("created_at") for m in (exchange["body"] or {}).get("messages", [])]
    out = []
    for n, item in enumerate(items):
        seen = [sorted(item), item.get("content"), item.get("peer_id"), item.get("observer_id")]
        if n < len(given) and given[n] is not None:
            seen.append(item.get("created_at"))
        out.append(seen)
    return out


def _view(answer: Any, exchange: dict[str, Any]) -> Any:
    """The part of an answer a fake must give as the real server did."""
    if answer is None:
        return None
    if isinstance(answer, list):
        if exchange["phase"] != "phaseA" and exchange["path"].endswith("/search"):
            return len(answer)  # nearest neighbours fill the limit: which ones is the model's
        return _items(answer, exchange)
    if "detail" in answer:
        return _errors(answer["detail"])
    if "items" in answer:
        paging = {k: answer[k] for k in ("total", "page", "size", "pages")}
        return [sorted(answer), paging, _items(answer["items"], exchange)]
    return [sorted(answer), answer.get("id") if exchange["method"] == "POST" else None]


@pytest.mark.parametrize(
    "exchange", EXCHANGES, ids=[f"{e['phase']}/{e['file'][:-5]}" for e in EXCHANGES]
)
def test_the_fake_answers_as_the_real_server_did(
    replayed: dict[tuple[str, str], tuple[int, Any]], exchange: dict[str, Any]
) -> None:
    status, got = replayed[(exchange["phase"], exchange["file"])]
    assert status == exchange["status"]
    assert _view(got, exchange) == _view(exchange["response"], exchange)
