"""The daemon on a failing disk: a full disk is 507 and writes nothing, a damaged index is
rebuilt while it serves, a memory file that is not UTF-8 is listed without its text.

A full disk is an OSError raised at the OS edge (`os.write`, for the session logs only), and a
real small tmpfs where the test may mount one (root); the index is damaged by writing bytes
into its file under a running `Service`, whose threads each hold a connection to it.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from damage import damage_pages
from logs import turn, write_log
from memoryd import reindex as reindex_module
from memoryd.errors import IndexFullError, IndexStoreError, JournalFullError, NoSpaceError
from memoryd.home import Home
from memoryd.serve import indexes as indexes_module
from memoryd.serve import service as service_module
from memoryd.serve.app import create_app, status_of
from memoryd.serve.guard import Guard
from memoryd.serve.memory_files import NOT_UTF8
from memoryd.serve.service import Service
from test_serve_api import error_of, serving
from tmpfs import Mount, fill

RECORDS = "/v1/sessions/{}/records"


@pytest.fixture
def api(home: Home) -> Iterator[TestClient]:
    """The daemon's app over the test's home."""
    with serving(home) as client:
        yield client


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder)."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


Write = Callable[[int, Any], int]


def failing_writes(home: Home, fail_at: int, number: int = errno.ENOSPC, chunk: int = 16) -> Write:
    """An `os.write` that writes at most `chunk` bytes to a session log at a time and raises
    OSError(`number`) on its `fail_at`-th call (counted from 1); any other file is written."""
    real = os.write
    calls = 0

    def write(fd: int, data: Any) -> int:
        nonlocal calls
        target = os.readlink(f"/proc/self/fd/{fd}")
        if not target.startswith(str(home.sessions)):
            return real(fd, data)
        calls += 1
        if calls == fail_at:
            raise OSError(number, os.strerror(number))
        return real(fd, bytes(data[:chunk]))

    return write


# A full disk: 507, and nothing of the batch is left.


def test_an_append_on_a_full_disk_is_507_and_leaves_no_file(
    home: Home, api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "write", failing_writes(home, 1))
    answer = api.post(RECORDS.format("s9"), json={"records": turn("otter", "reply")})
    assert error_of(answer) == (507, "no_space")
    message = answer.json()["error"]["message"]
    assert "no space left on the device holding" in message and "nothing was appended" in message
    assert tree(home.sessions) == {}, "neither the log nor its folder is left"
    monkeypatch.undo()
    assert api.post(RECORDS.format("s9"), json={"records": turn("otter", "reply")}).json() == {
        "appended": 2
    }


def test_a_batch_that_fails_at_any_write_takes_back_every_byte_it_wrote(
    home: Home, api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two files (a compaction starts the next epoch), written 16 bytes at a time: whichever
    # write fails, the first file is cut back to its size and the second is removed.
    write_log(home, "s1", turn("heron", "first reply"))
    records = [
        *turn("otter one", "a reply"),
        {"type": "compaction", "summary": "so far", "at": "2026-01-01T00:00:00Z"},
        *turn("otter two", "another reply"),
    ]
    before = tree(home.sessions)
    size = sum(len(b) for b in tree(home.sessions).values() if b)
    writes = 0
    for fail_at in range(1, 60):
        monkeypatch.setattr(os, "write", failing_writes(home, fail_at))
        answer = api.post(RECORDS.format("s1"), json={"records": records})
        monkeypatch.undo()
        if answer.status_code == 200:
            writes = fail_at - 1
            break
        assert error_of(answer) == (507, "no_space"), fail_at
        assert tree(home.sessions) == before, fail_at
    assert writes > 2, "the batch was written in several writes, to two files"
    after = tree(home.sessions)
    assert set(after) == {"s1", "s1/0.jsonl", "s1/1.jsonl"}
    assert sum(len(b) for b in after.values() if b) > size
    assert "otter two" in api.post("/v1/recall", json={"query": "otter two"}).json()["text"]
    status = api.get("/v1/status").json()
    assert status["turns"] == 3, "every turn once: no failed attempt left a line"


@pytest.mark.parametrize(
    ("number", "status", "code", "said"),
    [
        (errno.EDQUOT, 507, "no_space", "no space left"),
        (errno.EIO, 503, "unavailable", "an I/O error"),
        (errno.EROFS, 503, "unavailable", "read-only file system"),
    ],
)
def test_an_append_the_os_refuses_says_why_and_writes_nothing(
    home: Home,
    api: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    number: int,
    status: int,
    code: str,
    said: str,
) -> None:
    write_log(home, "s1", turn("heron", "reply"))
    before = tree(home.sessions)
    monkeypatch.setattr(os, "write", failing_writes(home, 2, number))
    answer = api.post(RECORDS.format("s1"), json={"records": turn("otter", "reply")})
    assert error_of(answer) == (status, code)
    assert said in answer.json()["error"]["message"]
    assert tree(home.sessions) == before


def test_no_space_for_the_index_or_the_journal_is_507_not_503(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both are a NoSpaceError and an IndexStoreError or a JournalError: the first case wins.
    def index_full(*_: Any, **__: Any) -> Any:
        raise IndexFullError("no space left on the device holding the index: free some space")

    def journal_full(*_: Any, **__: Any) -> Any:
        raise JournalFullError("no space left on the device holding the journal: free some")

    monkeypatch.setattr(service_module, "begin_recall", index_full)
    monkeypatch.setattr(service_module, "edit", journal_full)
    assert error_of(api.post("/v1/recall", json={"query": "otter"})) == (507, "no_space")
    edit = {"op": "add", "file": "notes.md", "text": "x", "as": "owner"}
    assert error_of(api.post("/v1/memory", json=edit)) == (507, "no_space")
    assert status_of(NoSpaceError("full")) == (507, "no_space")


def test_a_real_full_disk_is_507_and_the_logs_are_as_they_were(home: Home, mount: Mount) -> None:
    mount(home.sessions, "64k")
    write_log(home, "s1", turn("heron", "reply"))
    big = [r for n in range(40) for r in turn(f"otter {n} " + "words " * 20, f"reply {n}")]
    with serving(home) as api:
        # One page left: the first write is short, the next one finds the disk full.
        filler = fill(home.sessions, leave=4096)
        before = tree(home.sessions)
        for session in ("s1", "s2"):
            answer = api.post(RECORDS.format(session), json={"records": big})
            assert error_of(answer) == (507, "no_space"), answer.text
            assert "no space left" in answer.json()["error"]["message"]
            assert tree(home.sessions) == before, session
        filler.unlink()
        assert api.post(RECORDS.format("s2"), json={"records": big}).json() == {"appended": 80}
        assert "otter 7" in api.post("/v1/recall", json={"query": "otter 7"}).json()["text"]


# A damaged index while the daemon serves: rebuilt, and every thread reads the new one.


def until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def threads() -> Iterator[list[ThreadPoolExecutor]]:
    """Four threads that live as long as the test: each keeps its own index connection."""
    pools = [ThreadPoolExecutor(max_workers=1) for _ in range(4)]
    yield pools
    for pool in pools:
        pool.shutdown()


def found(service: Service, pool: ThreadPoolExecutor, query: str) -> str:
    return pool.submit(lambda: service.begin_recall(query, 20, None)().text).result()


@pytest.fixture
def go(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The daemon's reindex held until the event is set: the test sees the readers refused
    while the index is rebuilt."""
    event = threading.Event()
    real = indexes_module.reindex

    def held(*args: Any, **kwargs: Any) -> Any:
        assert event.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(indexes_module, "reindex", held)
    yield event
    event.set()


@pytest.mark.parametrize("replaced", [False, True], ids=["copied into", "replaced"])
def test_a_damaged_index_is_rebuilt_while_serving_and_every_thread_reads_the_new_one(
    home: Home,
    threads: list[ThreadPoolExecutor],
    go: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
    replaced: bool,
) -> None:
    records = [r for n in range(300) for r in turn(f"boat {n} sails from harbour{n}", f"ok {n}")]
    write_log(home, "s1", records)
    service = Service.open(home)
    if replaced:
        # The reindex's copy finds the live file damaged: it is set aside and the new file
        # renamed into its place, so every connection open before is to the old file.
        def copy(fresh: sqlite3.Connection, live: sqlite3.Connection) -> None:
            error = sqlite3.DatabaseError("database disk image is malformed")
            error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
            raise error

        monkeypatch.setattr(reindex_module, "_copy", copy)
    with TestClient(Guard(create_app(service)), base_url="http://memoryd") as api:
        for pool in threads:
            assert "boat 250 sails" in found(service, pool, "harbour250")
        damage_pages(home.index)
        # A thread whose connection is open reads the damaged pages: refused, and rebuilt.
        with pytest.raises(IndexStoreError) as refused:
            found(service, threads[0], "harbour250")
        assert status_of(refused.value) == (503, "unavailable")
        message = str(refused.value)
        assert "is damaged" in message and "rebuilding it" in message
        assert "in the background" in message and "delete" not in message
        assert service.indexes.progress.running
        for answer in (api.post("/v1/recall", json={"query": "harbour250"}), api.get("/v1/status")):
            assert error_of(answer) == (503, "unavailable")
            assert "rebuilding it" in answer.json()["error"]["message"]
        # An append is written, and answered: the rebuild reads it from the log.
        appended = api.post(RECORDS.format("s2"), json={"records": turn("heron", "ok")})
        assert appended.json() == {"appended": 2}
        go.set()
        assert until(lambda: not service.indexes.progress.running)
        assert service.indexes.progress.error is None
        assert api.get("/v1/status").json()["items"] == 602
        assert "boat 250 sails" in api.post("/v1/recall", json={"query": "harbour250"}).text
        # A turn appended after the rebuild, read from every thread: none reads the old file.
        appended = api.post(RECORDS.format("s3"), json={"records": turn("kingfisher", "ok")})
        assert appended.json() == {"appended": 2}
        for pool in threads:
            assert "kingfisher" in found(service, pool, "kingfisher")
            assert "heron" in found(service, pool, "heron")
            assert "boat 250 sails" in found(service, pool, "harbour250")
    aside = home.index.with_name("index.sqlite.damaged")
    assert aside.exists() == replaced
    for pool in threads:
        pool.submit(service.close).result()
    service.close()


def test_a_thread_that_sets_a_damaged_file_aside_makes_the_others_open_the_new_one(
    home: Home, threads: list[ThreadPoolExecutor], go: threading.Event
) -> None:
    write_log(home, "s1", turn("heron by the river", "ok"))
    service = Service.open(home)
    for pool in threads[1:]:
        assert "heron" in found(service, pool, "heron")
    service.close()
    # Not a database any more: the next connection opened sets it aside and makes a new one.
    conn = sqlite3.connect(home.index)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with home.index.open("r+b") as f:
        f.write(b"x" * 100)
    # The thread that opens it reads a new, empty index: it is refused, not answered "no
    # matches", and so is every reader until the reindex has filled it.
    with pytest.raises(IndexStoreError, match="rebuilding it") as refused:
        found(service, threads[0], "heron")
    assert status_of(refused.value) == (503, "unavailable")
    assert home.index.with_name("index.sqlite.damaged").exists()
    for pool in threads[1:]:
        with pytest.raises(IndexStoreError, match="rebuilding it"):
            found(service, pool, "heron")
    go.set()
    assert until(lambda: not service.indexes.progress.running)
    assert service.indexes.progress.error is None
    service.append("s2", turn("kingfisher", "ok"))
    for pool in threads:
        assert "kingfisher" in found(service, pool, "kingfisher")
        pool.submit(service.close).result()
    service.close()


# A memory file that is not UTF-8: listed without its text, as the block leaves it out.


def test_a_memory_file_that_is_not_utf8_is_listed_without_its_text(
    home: Home, api: TestClient
) -> None:
    notes = home.memory / "notes.md"
    notes.write_bytes(b"caf\xe9 au lait\n")
    files = {
        f["file"]: f for f in api.get("/v1/memory/files", params={"as": "owner"}).json()["files"]
    }
    shown = files["notes.md"]
    assert shown["problem"] == NOT_UTF8 and shown["text"] == ""
    assert "not UTF-8" in shown["usage"]
    assert "\ufffd" not in json.dumps(files, ensure_ascii=False)
    assert all(f["problem"] is None for name, f in files.items() if name != "notes.md")
    block = api.get("/v1/block").json()["text"]
    assert "## notes.md (left out: not UTF-8, so it fails the check" in block


def test_an_append_or_edit_written_is_answered_though_the_index_then_fails(
    home: Home, api: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Refused, it would be sent again and written twice: the next catch-up indexes it.
    def index_full(*_: Any, **__: Any) -> Any:
        raise IndexFullError("no space left on the device holding the index: free some space")

    monkeypatch.setattr(service_module, "catch_up_session", index_full)
    monkeypatch.setattr(service_module, "index_dropped", index_full)
    appended = api.post(RECORDS.format("s1"), json={"records": turn("otter", "reply")})
    assert appended.json() == {"appended": 2}
    edit = {"op": "add", "file": "notes.md", "text": "the otter swims", "as": "owner"}
    assert api.post("/v1/memory", json=edit).status_code == 200
    said = [r.getMessage() for r in caplog.records if r.name == "memoryd.serve"]
    assert any("the append to session s1 is written" in m for m in said), said
    assert any("the edit (journal line 1) is written" in m for m in said), said
    assert "otter" in (home.sessions / "s1" / "0.jsonl").read_text()
    monkeypatch.undo()
    assert "otter" in api.post("/v1/recall", json={"query": "otter", "session": "s1"}).text
