"""`memoryd forget`: keys as input, placeholders in the logs, and the text in no byte of the home.

The grep-everything test runs the real daemon on the test's home, a loop appending to the same
log the whole time, and the CLI forgetting an item, a turn, a session, an entry and a query.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logs import AT, turn, write_log
from memoryd.errors import ForgetError, MemoryEditError
from memoryd.forget import logs, record, run
from memoryd.forget.run import Asked, Place, forget, plan, resume
from memoryd.forget.targets import Dropped, Part, Target, parse, parse_all
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.logs.records import Kind, Role, parse_line
from memoryd.logs.sessions import Progress
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit, undo
from memoryd.memory.files import Memory
from memoryd.memory.journal import Op, read
from memoryd.memory.recovery import consistency
from memoryd.recall import recall, searched
from memoryd.reindex import reindex
from memoryd.text.stems import stem
from test_cli import memoryd
from test_serve_daemon import Daemon

NAMES = Names("agent", "owner")
KEY = "glpat-" + "Abcdefghij0123456789xyz"
CANARY = "zebra hunter2 canary"


def now() -> datetime:
    return datetime.now(UTC)


def memory_of(home: Home) -> Memory:
    return Memory(home.memory, home.root / "memoryd.lock", home.sessions)


def place(home: Home, index: Index) -> Place:
    catch_up(index, home.sessions, NAMES)
    index_dropped(index, memory_of(home).journal)
    return Place(home, memory_of(home), NAMES, lambda: index)


def needles(*words: str) -> list[bytes]:
    """A word, its stem (the index holds stems) and their case forms, as bytes."""
    found = set()
    for word in words:
        for form in (word, stem(word.casefold())):
            found |= {form.encode(), form.casefold().encode(), form.upper().encode()}
    return sorted(found)


def traces(home: Home, *words: str) -> list[tuple[str, bytes]]:
    """Every file of the home holding any form of `words`, with the form."""
    found = []
    looked = 0
    for path in home.root.rglob("*"):
        if path.is_file() and not path.is_socket():
            data = path.read_bytes()
            looked += 1
            found += [(str(path), n) for n in needles(*words) if n in data]
    assert looked >= 3
    return found


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("s1:3:user", Target("s1", 3, Part.USER)),
        ("s1:3:reply", Target("s1", 3, Part.REPLY)),
        ("s1:3", Target("s1", 3)),
        ("s1", Target("s1")),
        ("s1:0", Target("s1", 0)),
        ("dropped:12:1", Dropped(12, 1)),
        ("dropped:3:user", Target("dropped", 3, Part.USER)),
        ("s1:03:user", None),
        ("s1:3:final", None),
        ("s1:3:user:x", None),
        ("s1:x", None),
        ("s1:1234567890", None),
        ("..", None),
        ("../etc", None),
        ("", None),
        (KEY, None),
        (f"{KEY}:1:user", None),
        (CANARY, None),
    ],
)
def test_a_key_is_parsed_exactly_or_not_at_all(key: str, expected: Target | None) -> None:
    assert parse(key) == expected


def test_a_key_that_is_not_one_is_refused_by_position_never_echoed() -> None:
    for bad in (KEY, f"{KEY}:1:user", CANARY, "../s1:1", "s1:1:" + CANARY):
        with pytest.raises(ForgetError) as e:
            parse_all(["s1:1", bad])
        assert "key 2 of 2" in str(e.value)
        assert KEY not in str(e.value) and "hunter2" not in str(e.value)


def test_a_forged_or_unknown_key_names_nothing_and_is_not_echoed(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("the boat is blue", "noted"))
    at = place(home, index)
    for key in ("s1:9:user", "hunter2canary:1:user", "s1:1:reply:", "dropped:99:1"):
        with pytest.raises(ForgetError) as e:
            plan(at, Asked(keys=(key,)))
        assert "hunter2" not in str(e.value) and "99" not in str(e.value)
    assert "boat is blue" in recall(index, "boat", 5, None, now(), home.recalls).text
    assert "forgotten" not in (home.sessions / "s1" / "0.jsonl").read_text()


def test_a_placeholder_keeps_the_offsets_the_turn_numbers_and_the_taint(
    home: Home, index: Index
) -> None:
    path = write_log(home, "s1", turn("first zebraquux", "one"))
    write_log(
        home, "s1", [{"type": "tool_result", "name": "web", "text": "a page", "untrusted": True}]
    )
    write_log(home, "s1", turn("second words", "two") + turn("third words", "three"))
    size = path.stat().st_size
    at = place(home, index)
    forget(at, Asked(keys=("s1:1",)))
    forget(at, Asked(keys=("s1:2:reply",)))
    assert path.stat().st_size == size
    records = [parse_line(line) for line in path.read_text().splitlines()]
    assert [r.kind for r in records].count(Kind.FORGOTTEN) == 4
    # The forgotten tool result still taints; turn 3 keeps its number; turn 2 is its text alone.
    found = {h.item.key: h.item for h in index.by_keys(["s1:2:user", "s1:2:reply", "s1:3:user"])}
    assert set(found) == {"s1:2:user", "s1:3:user"}
    assert found["s1:3:user"].tag == "memory-tainted"
    assert "zebraquux" not in path.read_text()


def test_a_reindex_from_the_logs_brings_nothing_back(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("hello", "hi") + turn("the zebraquux code", "kept zebraquux"))
    write_log(home, "s1", turn("later words", "fine"))
    at = place(home, index)
    forget(at, Asked(keys=("s1:2",)))
    before = sorted(
        h.item.key for h in index.by_keys([f"s1:{n}:{p}" for n in (1, 2, 3) for p in Part])
    )
    reindex(home.index, home.sessions, NAMES, journal=memory_of(home).journal)
    with Index(home.index) as fresh:
        after = sorted(
            h.item.key for h in fresh.by_keys([f"s1:{n}:{p}" for n in (1, 2, 3) for p in Part])
        )
        assert "no matches" in recall(fresh, "zebraquux", 5, None, now(), home.recalls).text
    assert before == after == ["s1:1:reply", "s1:1:user", "s1:3:reply", "s1:3:user"]


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["user", "final", "assistant", "tool_result", "x-note"]),
    text=st.text(max_size=40),
    untrusted=st.booleans(),
    session=st.from_regex(r"[a-z][a-z0-9_.\-]{0,99}", fullmatch=True),
    number=st.integers(1, 999_999_999),
)
def test_a_placeholder_is_exactly_as_long_and_keeps_role_and_taint(
    kind: str, text: str, untrusted: bool, session: str, number: int
) -> None:
    data = {"type": kind, "text": text, "at": AT, "name": "n"}
    if untrusted:
        data["untrusted"] = True
    raw = json.dumps(data, ensure_ascii=False).encode()
    record = parse_line(raw.decode())
    role = {Kind.USER: Role.USER, Kind.FINAL: Role.REPLY}.get(record.kind, Role.OTHER)  # type: ignore[arg-type]
    line = logs.LogLine(Path("0.jsonl"), 0, 0, raw, number, role, record)
    made = logs.placeholder(session, line)
    assert len(made) == len(raw)
    if not made.strip():
        assert not untrusted
        return
    try:
        again = parse_line(made.decode())
    except ValueError:
        assert untrusted  # too short for a placeholder: damage, which taints as it did
        return
    assert again.kind is Kind.FORGOTTEN and again.untrusted == untrusted
    progress = Progress()
    progress.feed(again)
    assert progress.turns == (1 if role.value == "user" else 0)


def test_undo_of_a_line_that_held_a_forgotten_entry_says_so(home: Home, index: Index) -> None:
    memory = memory_of(home)
    edit(memory, Request(Op.ADD, "notes.md", text="the gate code is tundrapike"), OWNER, now())
    edit(memory, Request(Op.ADD, "notes.md", text="likes tea"), OWNER, now())
    forget(place(home, index), Asked(entry=("notes.md", "tundrapike")))
    with pytest.raises(MemoryEditError) as e:
        undo(memory, 1, OWNER, now())
    assert "forgotten" in str(e.value)
    assert undo(memory, 2, OWNER, now()).line.op is Op.UNDO
    assert [line.forgotten for line in read(memory.journal).lines][:3] == [1, 0, 1]
    assert consistency(memory, read(memory.journal)) == []  # `memoryd check` still passes
    assert traces(home, "tundrapike") == []


def test_status_says_how_many_items_were_forgotten_and_when(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("one zebraquux", "two") + turn("three", "four"))
    forget(place(home, index), Asked(keys=("s1:1",)))
    with (home.memory / "forgotten.jsonl").open("a") as f:  # lines edited by hand: passed over
        f.write('not json\n[1]\n{"id": 7, "at": "' + KEY + '", "items": 5}\n')
        f.write('{"id": 8, "at": "2026-01-01T00:00:00Z", "items": -3}\n')
    done = memoryd("status", home=home)
    assert done.returncode == 0, done.stderr
    assert "forgotten 2 items, last on 20" in done.stdout and KEY not in done.stdout
    status = json.loads(memoryd("status", "--json", home=home).stdout)
    assert status["forgotten"]["items"] == 2 and status["forgotten"]["forgets"] == 1
    done_line = json.loads((home.memory / "forgotten.jsonl").read_text().splitlines()[0])
    assert done_line["keys"] == ["s1:1:user", "s1:1:reply"] and done_line["kind"] == "turn"
    assert os.stat(home.memory / "forgotten.jsonl").st_mode & 0o777 == 0o600
    assert not (home.memory / "forgetting.json").exists()


def test_off_a_terminal_forget_needs_yes_and_forgets_nothing_without(home: Home) -> None:
    write_log(home, "s1", turn("the zebraquux", "ok"))
    done = memoryd("forget", "s1:1", home=home)
    assert done.returncode == 2 and "--yes" in done.stderr
    assert "zebraquux" in (home.sessions / "s1" / "0.jsonl").read_text()


class Loop:
    """An agent loop appending turns to a session's log until stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            for made in turn(f"loop turn {n} heron", f"loop reply {n}"):
                line = json.dumps(made)
                with self.path.open("a") as f:
                    f.write(line + "\n")
                self.written.append(line)
            time.sleep(0.002)

    def __enter__(self) -> Loop:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def test_forget_through_the_daemon_leaves_no_byte_of_the_text_while_a_loop_appends(
    home: Home,
) -> None:
    log = write_log(home, "s1", turn("hello there", "hi"))
    # Eight digits, one token: a shorter number turned up by chance in the recall log's
    # microseconds (`4417`).
    write_log(home, "s1", turn("the alarm code is glimmerfox 44170392", "I will keep it safe"))
    write_log(home, "s1", turn("my ssn is quillbrook 123-45-6789", "noted quillbrook"))
    write_log(home, "s1", turn("the vortexlime tasted odd", "a vortexlime indeed"))
    write_log(home, "s2", turn("all about marrowdent", "marrowdent it is") + turn("more", "yes"))
    write_log(home, "s3", turn("vortexlime again", "sure"))
    memory = memory_of(home)
    edit(memory, Request(Op.ADD, "notes.md", text="the gate code is tundrapike"), OWNER, now())
    edit(memory, Request(Op.ADD, "notes.md", text="likes tea"), OWNER, now())
    # Copies a crash left: a reindex killed half-way, a damaged index set aside, a journal
    # replace killed before its rename. Each holds the text too.
    (home.memory / "index.sqlite.new").write_text("the alarm code is glimmerfox 44170392")
    (home.memory / "index.sqlite.new-wal").write_text("my ssn is quillbrook 123-45-6789")
    (home.memory / "index.sqlite.damaged").write_text("all about marrowdent")
    (home.memory / ".journal.jsonl.tmp").write_text("my ssn is quillbrook 123-45-6789")
    (home.memory / ".notes.md.tmp").write_text("the alarm code is glimmerfox 44170392")
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as api:
            for word in ("glimmerfox", "quillbrook", "marrowdent", "tundrapike", "vortexlime"):
                found = api.post("/v1/recall", json={"query": word}).json()["text"]
                assert word in found, (word, found)
            with Loop(log) as loop:
                for args, words in (
                    (("s1:2:user",), ("glimmerfox", "44170392")),
                    (("s1:3",), ("quillbrook", "123-45-6789")),
                    (("s2",), ("marrowdent",)),
                    (("--entry", "notes.md", "tundrapike"), ("tundrapike",)),
                    (("--query", "vortexlime"), ("vortexlime",)),
                ):
                    done = memoryd("forget", *args, "--yes", home=home)
                    assert done.returncode == 0, done.stderr
                    assert "forgot " in done.stdout
                    assert traces(home, *words) == [], args
                    with Index(home.index) as index:  # searched: no recall log line of its own
                        assert searched(index, words[0], 5).items == []
            status = api.get("/v1/status").json()
            assert status["forgotten"]["forgets"] == 5
            # Every line the loop wrote is there, whole, in order, and its turns are recalled.
            kept = [
                line
                for line in log.read_text().splitlines()
                if "heron" in line or "loop reply" in line
            ]
            assert kept == loop.written and len(kept) > 10
            last = json.loads(kept[-2])["text"]  # `loop turn N heron`: N is found once
            asked = {"query": last.split()[2], "session": "s1"}
            assert last in api.post("/v1/recall", json=asked).json()["text"]
            assert "hello there" in api.post("/v1/recall", json={"query": "hello"}).json()["text"]
        assert "likes tea" in (home.memory / "notes.md").read_text()
    finally:
        daemon.stop()
    assert traces(home, "glimmerfox", "quillbrook", "marrowdent", "tundrapike", "vortexlime") == []


def test_a_forget_carried_out_after_a_crash_keeps_what_the_loop_wrote_since(
    home: Home, index: Index
) -> None:
    log = write_log(home, "s1", turn("the marrowdent plan", "marrowdent noted"))
    at = place(home, index)
    begun = run._begun(at, plan(at, Asked(keys=("s1",))), now())
    record.begin(home.memory, begun)  # and then the process died
    write_log(home, "s1", turn("a new turn after", "still here"))
    assert resume(at)
    assert "marrowdent" not in log.read_text() and "still here" in log.read_text()
    assert "a new turn after" in recall(index, "after", 5, None, now(), home.recalls).text
    assert not (home.memory / "forgetting.json").exists()


def test_bytes_an_earlier_write_freed_are_purged_too(home: Home, index: Index) -> None:
    # Each unanswered turn's text was kept in its session's read state, then that row was
    # rewritten once the reply came: the old rows' bytes were freed, not zeroed.
    for n in range(30):
        said = f"the quillbrook{chr(97 + n)}z number"
        write_log(home, f"s{n}", [{"type": "user", "text": said, "at": AT}])
    catch_up(index, home.sessions, NAMES)
    for n in range(30):
        write_log(home, f"s{n}", [{"type": "final", "text": "noted", "at": AT}])
    catch_up(index, home.sessions, NAMES)
    forget(place(home, index), Asked(keys=("s3:1",)))
    assert traces(home, "quillbrookdz") == []


def test_a_line_that_changed_since_it_was_read_is_not_written_over(home: Home) -> None:
    path = write_log(home, "s1", turn("the zebraquux code", "noted"))
    read_before = [line for line in logs.lines(home.sessions, "s1") if line.role is Role.USER]
    changed = path.read_bytes().replace(b"zebraquux", b"something")
    path.write_bytes(changed)  # the owner edited the log by hand meanwhile
    assert logs.overwrite("s1", read_before) == 0
    assert path.read_bytes() == changed


def test_an_entry_is_forgotten_from_a_file_whose_other_entries_fail_the_check(
    home: Home, index: Index
) -> None:
    notes = home.memory / "notes.md"
    notes.write_text("likes tea\n\nlikes tea\n\nthe gate code is tundrapike\n")  # by hand
    forget(place(home, index), Asked(entry=("notes.md", "tundrapike")))
    assert notes.read_text() == "likes tea\n\nlikes tea\n"
    assert traces(home, "tundrapike") == []


def on_a_terminal(home: Home, answer: bytes, *args: str) -> tuple[int, str]:
    """Run `memoryd forget ARGS` with a terminal as its input, answering its question."""
    import pty

    main, other = pty.openpty()
    env = dict(os.environ, MEMORYD_HOME=str(home.root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "forget", *args],
        stdin=other,
        stdout=other,
        stderr=other,
        env=env,
    )
    os.close(other)
    said = b""
    deadline = time.monotonic() + 30
    while b"for good?" not in said and time.monotonic() < deadline:
        if select.select([main], [], [], 1)[0]:
            try:
                said += os.read(main, 4096)
            except OSError:  # the command ended without asking
                break
    os.write(main, answer)
    code = proc.wait(timeout=60)
    with contextlib.suppress(OSError):
        while chunk := os.read(main, 4096):
            said += chunk
    os.close(main)
    return code, said.decode(errors="replace")


def test_on_a_terminal_forget_shows_each_item_with_its_key_and_asks(home: Home) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted") + turn("zebraquux again", "ok"))
    code, said = on_a_terminal(home, b"n\n", "--query", "zebraquux")
    assert code == 1 and "nothing was forgotten" in said
    assert "key: s1:1:user" in said and "key: s1:2:user" in said and "[1] memory · " in said
    assert "Forget these 2 for good?" in said and "zebraquux" in log.read_text()
    code, said = on_a_terminal(home, b"y\n", "s1:1:user")
    assert code == 0 and "forgot s1:1:user" in said
    assert "zebraquux code" not in log.read_text() and "zebraquux again" in log.read_text()


def test_turns_are_counted_across_epochs_and_a_compaction_goes_only_with_its_session(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", turn("first", "one") + turn("second", "two"))
    summary = {"type": "compaction", "summary": "they spoke of quillbrook", "at": AT}
    later = write_log(home, "s1", [summary, *turn("the quillbrook plan", "quillbrook ok")], epoch=1)
    at = place(home, index)
    assert [s.key for s in plan(at, Asked(keys=("s1:3",))).shown] == ["s1:3:user", "s1:3:reply"]
    forget(at, Asked(keys=("s1:2",)))  # the compaction came after turn 2's reply
    forget(at, Asked(keys=("s1:3",)))
    assert "they spoke of quillbrook" in later.read_text()  # the loop's summary of many turns
    assert "quillbrook plan" not in later.read_text()
    forget(at, Asked(keys=("s1",)))
    assert traces(home, "quillbrook") == []
    assert {line.kind for line in logs.lines(home.sessions, "s1")} == {Kind.FORGOTTEN}


def test_a_forgotten_turn_leaves_no_byte_of_its_speaker_name(home: Home, index: Index) -> None:
    # The names are a full-text table of their own (`index.speakers`): its segments are merged
    # too, or the name's token stays in the file after its row went.
    write_log(home, "s1", turn("the weir at dusk", "noted", speaker="Quillanor"))
    for n in range(3):
        write_log(home, f"s{n + 2}", turn(f"the weir {n}", "noted", speaker="Mirren"))
    catch_up(index, home.sessions, NAMES)
    forget(place(home, index), Asked(keys=("s1:1",)))
    assert traces(home, "Quillanor") == []
