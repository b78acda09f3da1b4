"""Every field is input, on the newest surfaces: `memoryd mcp` bridged to a daemon, the daemon's
MCP route, the catch-up's reading of the sessions folder, the connectors' transcripts and the
window. Each test here failed before the fix it names (the holes of an attacker's pass)."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from logs import AT, turn, write_log
from memoryd.connect import claude_code
from memoryd.connect.fold import Fold
from memoryd.connect.follow import Follower
from memoryd.errors import ConnectError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.logs.logfiles import read_from
from memoryd.logs.records import Kind
from memoryd.serve.guard import BODY_MAX
from memoryd.typed import loaded
from sparse import bytes_read
from test_mcp_bridge import bridge, call, running
from test_serve_daemon import Daemon
from test_serve_mcp_http import INITIALIZE
from transcripts import SESSION, Claude, write
from window_home import csrf, link, opened

NAMES = Names(agent="agent", owner="owner")
PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}


@pytest.fixture
def daemon(home: Home) -> Iterator[Daemon]:
    """A daemon serving the test's home, stopped after the test."""
    running = Daemon(home)
    running.wait_ready()
    yield running
    running.stop()


def _strict(stdout: str) -> list[dict[str, Any]]:
    """Each line of stdout as JSON, which has no NaN or Infinity (an MCP client's parser
    refuses them, and with them the session)."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant} in {stdout!r}")

    return [json.loads(line, parse_constant=refuse) for line in stdout.splitlines()]


# A message with an id no request has (JSON-RPC's ids are strings and integers, as the SDK's):
# the SDK takes it for no request (202, no body) and the in-process server writes nothing.
NO_REQUEST_IDS = [b"1e400", b"NaN", b"-Infinity", b"13.5", b"null", b"true", b'{"a": 1}', b"[1]"]


def _with_id(raw: bytes) -> bytes:
    return b'{"jsonrpc": "2.0", "id": ' + raw + b', "method": "ping"}'


def test_a_message_whose_id_is_no_requests_gets_a_null_ids_error_never_a_non_json_line(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    lines = [json.dumps(m).encode() for m in (INITIALIZE, PING)]
    lines[1:1] = map(_with_id, NO_REQUEST_IDS)
    status, stdout, stderr = bridge(home, tmp_path, lines)
    assert status == 0, stderr
    answers = _strict(stdout)
    assert [a["id"] for a in answers] == [1, *[None] * len(NO_REQUEST_IDS), 3], stdout
    assert {a["error"]["code"] for a in answers[1:-1]} == {-32600}


def test_while_the_daemon_is_away_an_id_no_request_has_is_refused_as_ever(
    home: Home, daemon: Daemon
) -> None:
    bridged = running(home)
    assert bridged.stdin is not None and bridged.stdout is not None
    try:
        bridged.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        bridged.stdin.flush()
        assert json.loads(bridged.stdout.readline())["id"] == 1
        assert daemon.stop() == 0
        sent = [*map(_with_id, NO_REQUEST_IDS), json.dumps(PING).encode()]
        stdout, stderr = bridged.communicate(b"".join(line + b"\n" for line in sent), timeout=30)
    finally:
        if bridged.poll() is None:
            bridged.kill()
    assert bridged.returncode == 0, stderr
    away = _strict(stdout.decode())
    # Refused by the bridge, as with the daemon there; only the ping was the daemon's to answer.
    assert [a["id"] for a in away] == [*[None] * len(NO_REQUEST_IDS), 3], stdout
    assert "memoryd serve" in away[-1]["error"]["message"]
    assert all("memoryd serve" not in a["error"]["message"] for a in away[:-1])


# A key, built from pieces, put in every field of a message the bridge passes on.
KEY = "sk-ant-" + "api03-" + "Pz4" * 20
MARKER = KEY[13:40]


def test_a_key_in_any_field_of_a_message_reaches_no_answer_line_log_or_file_of_the_home(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    write_log(home, "mcp", turn("the kestrel hovers", "noted"))
    fields = [
        call(2, KEY, {}),
        call(3, "recall", {"query": KEY, "k": KEY, "session": KEY}),
        call(4, "memory", {"op": KEY, "file": KEY, "text": KEY}),
        call(5, "memory", {"op": "add", "file": "notes.md", "text": f"the key is {KEY}"}),
        call(6, "recall", {"query": "kestrel"}, _meta={"progressToken": KEY, "session": KEY}),
        call(14, "recall", {"query": f"heron {KEY}"}),
        {"jsonrpc": "2.0", "id": 7, "method": KEY, "params": {KEY: KEY}},
        {"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": KEY}},
        {"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": KEY}},
        {"jsonrpc": "2.0", "id": 10, "method": "prompts/get", "params": {"name": KEY}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": KEY}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": KEY}},
        {"jsonrpc": "2.0", "id": 11, "error": {"code": KEY, "message": KEY}},
    ]
    lines = [json.dumps(m).encode() for m in (INITIALIZE, *fields)]
    lines += [KEY.encode(), b'{"jsonrpc": "2.0", "id": 12, "params": ' + KEY.encode() + b"}"]
    lines.append(json.dumps(call(13, "recall", {"query": KEY + " " * BODY_MAX})).encode())
    status, stdout, stderr = bridge(home, tmp_path, lines)
    assert status == 0, stderr
    answers = _strict(stdout)
    # The client's error answer whose code is no integer, the key alone and the body holding it
    # bare are no messages: each a null id's error.
    ids = [1, 2, 3, 4, 5, 6, 14, 7, 8, 9, 10, None, None, None, 13]
    assert [a["id"] for a in answers] == ids, stdout
    assert "kestrel hovers" in answers[5]["result"]["content"][0]["text"]
    daemon.stop()
    for text in (stdout, stderr, daemon.output()):
        assert MARKER not in text
    looked = [path for path in home.root.rglob("*") if path.is_file()]
    assert len(looked) >= 3
    for path in looked:
        assert MARKER.encode() not in path.read_bytes(), path


def test_a_line_far_over_the_daemons_limit_is_refused_as_too_large_not_as_the_daemon_gone(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    # The daemon answers 413 and closes before it has read the rest: the bridge's send breaks.
    big = json.dumps(call(2, "recall", {"query": "x" * (4 * BODY_MAX)})).encode()
    status, stdout, stderr = bridge(
        home, tmp_path, [json.dumps(INITIALIZE).encode(), big, json.dumps(PING).encode()]
    )
    assert status == 0, stderr
    answers = _strict(stdout)
    assert [a["id"] for a in answers] == [1, 2, 3], stdout
    assert answers[1]["error"]["message"] == f"the body is over {BODY_MAX} bytes: send less"
    assert "not answering" not in stderr, stderr


def _peak() -> int:
    """This process's peak memory so far, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10


def test_a_sparse_log_of_a_huge_size_is_caught_up_without_reading_its_holes(
    home: Home, index: Index
) -> None:
    # `truncate -s 1T` costs nothing to make; reading its zeros held a catch-up for an hour.
    hole = 2 << 30
    path = write_log(home, "s", turn("the first turn", "noted"))
    with path.open("r+b") as f:  # a line of holes with a byte every 8 MiB, then a turn
        for _ in range(hole >> 23):
            f.seek(8 << 20, os.SEEK_END)
            f.write(b"x")
        f.write(b"\n")
    write_log(home, "s", turn("after the hole", "noted"))
    split = write_log(home, "u", [])
    with split.open("r+b") as f:  # a small hole is zeros in the line as well
        start = b'{"type": "user", "at": "2026-01-01T00:00:00Z", "text": "'
        f.write(start.ljust(4096, b"a"))  # a whole block: the hole's zeros are not read
        f.seek(64 << 10, os.SEEK_END)
        f.write(b'b"}\n')
    ended = write_log(home, "t", turn("a turn before a hole", "noted"))
    os.truncate(ended, ended.stat().st_size + 4 * hole)  # a last line being written, of holes
    before, peak = bytes_read(), _peak()
    done = catch_up(index, home.sessions, NAMES)
    assert bytes_read() - before < 16 << 20 and _peak() - peak < 256 << 20
    assert "line 3: a line longer than 1 MiB" in done.damaged["s"]
    assert "line 1: not JSON" in done.damaged["u"]
    found = index.conn.execute("SELECT text, tag FROM items WHERE kind = 'said' ORDER BY id")
    assert found.fetchall() == [
        ("the first turn", "memory"),
        ("after the hole", "memory-tainted"),
        ("a turn before a hole", "memory"),
    ]
    state = index.log_state("t")
    assert state is not None and json.loads(state.progress)["tainted"] is True


def test_a_log_cut_short_while_it_is_read_is_not_taken_for_one_with_a_hole(
    home: Home,
) -> None:
    path = write_log(home, "s", turn("a whole turn", "noted"))
    whole = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"a" * (2 << 20))  # a long line being written
    size, lines = read_from(path)  # nothing is read until asked
    os.truncate(path, whole + 10)  # written anew meanwhile, shorter
    read = list(lines)
    assert size == whole + (2 << 20)
    assert [line.record.kind for line in read] == [Kind.USER, Kind.FINAL], read


def test_a_sparse_transcript_of_a_huge_size_is_connected_without_reading_its_holes(
    home: Home, tmp_path: Path
) -> None:
    hole = 2 << 30
    c = Claude()
    path = write(tmp_path / "projects" / "p" / f"{SESSION}.jsonl", [c.prompt("before", 1)])
    with path.open("r+b") as f:  # a line of holes with a byte every 8 MiB, then a turn
        for _ in range(hole >> 23):
            f.seek(8 << 20, os.SEEK_END)
            f.write(b"x")
        f.write(b"\n")
    write(path, [c.prompt("after", 2)])
    os.truncate(path, path.stat().st_size + 4 * hole)  # a last line being written, of holes
    split = tmp_path / "projects" / "p" / f"{OTHER}.jsonl"
    with split.open("wb") as f:  # a small hole is zeros in the line as well
        start, end = json.dumps(Claude(OTHER).prompt("ab", 1)).encode().split(b"ab")
        f.write(start.ljust(4096, b"a"))  # a whole block: the hole's zeros are not read
        f.seek(64 << 10, os.SEEK_END)
        f.write(b"b" + end + b"\n")
    before, peak = bytes_read(), _peak()
    follower = Follower(home, claude_code.HOST, tmp_path / "projects", frozenset())
    with follower.locked():
        follower.once()
    assert bytes_read() - before < 16 << 20 and _peak() - peak < 256 << 20
    damage = ("tool_result", "memoryd-connect", True)
    assert _written(home, SESSION) == [
        ("session", None, None),
        ("user", None, None),
        damage,
        ("user", None, None),
    ]
    assert _written(home, OTHER) == [("session", None, None), damage]


OTHER = "5d2e8f1a-9b3c-4e7d-8a6f-1c0b2d4e6f80"


def _written(home: Home, session: str) -> list[tuple[str, str | None, bool | None]]:
    lines = (home.sessions / f"claude-code-{session}" / "0.jsonl").read_text().splitlines()
    return [(r["type"], r.get("name"), r.get("untrusted")) for r in map(json.loads, lines)]


def test_the_windows_undo_and_forget_say_what_is_wrong_with_any_number_of_anything(
    served: Daemon,
) -> None:
    with opened(link(served)) as client:
        token = csrf(client.get("/memory").text)
        # `²` is a digit to `isdigit` but not to `int`; 5000 digits are past `int`'s limit.
        for line in ("²", "9" * 5000):
            undone = client.post("/memory/undo", data={"csrf": token, "line": line})
            assert undone.status_code == 422, undone.text
            assert "Say which journal line to undo." in undone.text
        # Each key was looked for among those before it: 20,000 took 17 s of the daemon's.
        keys = "\n".join(f"s{n}:{n}:user" for n in range(10_001))
        refused = client.post("/forget", data={"csrf": token, "keys": keys})
        assert refused.status_code == 422, refused.text
        assert "10,001 keys: forget at most 10,000 at once" in refused.text
    assert "Traceback" not in served.output()


def test_a_file_named_like_no_epoch_beside_a_connected_log_stops_no_connect(
    home: Home, tmp_path: Path
) -> None:
    c = Claude()
    path = write(tmp_path / "projects" / "p" / f"{SESSION}.jsonl", [c.prompt("first", 1)])
    follower = Follower(home, claude_code.HOST, tmp_path / "projects", frozenset())
    with follower.locked():
        follower.once()
    folder = home.sessions / f"claude-code-{SESSION}"
    with (folder / "0.jsonl").open("a") as f:  # as after a crash between a write and its mark
        f.write(json.dumps({"type": "user", "text": "past the kept size", "at": AT}) + "\n")
    # `²` is a digit to `isdigit` but not to `int`; `01` names no epoch.
    strays = [folder / "²3.jsonl", folder / "01.jsonl"]
    for stray in strays:
        stray.write_text("")
    write(path, [c.prompt("second", 2)])
    with follower.locked():
        done = follower.once()
    assert done.problems == []
    assert _written(home, SESSION) == [("session", None, None), *[("user", None, None)] * 2]
    assert "past the kept size" not in (folder / "0.jsonl").read_text()
    assert all(stray.exists() for stray in strays)


# The connector's own state, edited by hand or damaged on disk: each field of another type
# than `_save` writes made a TypeError traceback in every connect (every Stop hook).
BAD_POSITIONS: list[dict[str, Any]] = [
    {"offset": "316"},
    {"offset": -5},
    {"log_size": 1.5},
    {"line": True},
    {"identity": "x"},
    {"marked": "no"},
    {"fold": "x"},
    {"fold": {"host": 5}},
    {"fold": {"host": "claude-code", "epoch": "1"}},
    {"fold": {"host": "claude-code", "epoch": -1}},
    {"fold": {"host": "claude-code", "epoch": 10**12}},
    {"fold": {"host": "claude-code", "calls": [1]}},
    {"fold": {"host": "claude-code", "pending": [1, 2]}},
    {"unknown": 1},
]


def test_the_connectors_own_state_of_another_shape_is_said_unreadable_never_a_traceback(
    home: Home, tmp_path: Path
) -> None:
    c = Claude()
    write(tmp_path / "projects" / "p" / f"{SESSION}.jsonl", [c.prompt("first", 1)])
    follower = Follower(home, claude_code.HOST, tmp_path / "projects", frozenset())
    with follower.locked():
        follower.once()
    state = follower.state_path
    kept = json.loads(state.read_text())
    ((key, position),) = kept["transcripts"].items()
    bad = [{"transcripts": {key: {**position, **change}}} for change in BAD_POSITIONS]
    for raw in [*bad, {"transcripts": [position]}, {"transcripts": {key: 5}}]:
        state.write_text(json.dumps(raw))
        with pytest.raises(ConnectError, match="cannot be read"):
            Follower(home, claude_code.HOST, tmp_path / "projects", frozenset())
    state.write_text(json.dumps(kept))
    assert Follower(home, claude_code.HOST, tmp_path / "projects", frozenset()).positions


def test_a_kept_object_missing_a_field_or_with_one_more_is_no_instance() -> None:
    assert loaded(Fold, {"host": "codex", "calls": {"a": "b"}, "pending": None}) == Fold(
        "codex", calls={"a": "b"}
    )
    for raw in ({"epoch": 1}, {"host": "codex", "more": 1}, ["codex"], {"host": None}):
        with pytest.raises(ValueError):
            loaded(Fold, raw)
