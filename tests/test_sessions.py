"""Session logs on real files: records, damage, epochs, turns, taint, class and progress."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import DamagedLogError
from memoryd.labels import DataClass
from memoryd.logs.logfiles import epoch_logs, read_from, read_records, read_session
from memoryd.logs.records import Kind, Record, parse_line
from memoryd.logs.sessions import Progress, Turn, turns

AT = "2026-09-28T23:19:00Z"
LATER = "2026-09-28T23:20:00.000Z"


def session(data_class: str | None = None) -> dict[str, Any]:
    return {"type": "session", "channel": "cli"} | (
        {} if data_class is None else {"class": data_class}
    )


def user(text: str, at: str = AT, **more: Any) -> dict[str, Any]:
    return {"type": "user", "text": text, "at": at, **more}


def final(text: str, at: str = LATER) -> dict[str, Any]:
    return {"type": "final", "text": text, "at": at}


def tool_result(untrusted: bool | None, text: str = "a page") -> dict[str, Any]:
    record: dict[str, Any] = {"type": "tool_result", "name": "web_fetch", "text": text, "at": AT}
    if untrusted is not None:
        record["untrusted"] = untrusted
    return record


ASSISTANT = {"type": "assistant", "text": "let me look", "at": AT}
TOOL_CALL = {"type": "tool_call", "name": "web_fetch", "args": {"url": "https://x"}, "at": AT}
COMPACTION = {"type": "compaction", "summary": "they talked about plants", "at": AT}


def lines(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write_log(sessions: Path, n: int, text: str, sid: str = "s1") -> Path:
    folder = sessions / sid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{n}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def records(*raw: dict[str, Any]) -> list[Record]:
    parsed = [parse_line(json.dumps(r)) for r in raw]
    assert all(r is not None for r in parsed)
    return [r for r in parsed if r is not None]


# --- parse_line ---------------------------------------------------------------------------

VALID: dict[Kind, dict[str, Any]] = {
    Kind.SESSION: session("secret"),
    Kind.USER: user("hello", speaker="alice"),
    Kind.ASSISTANT: ASSISTANT,
    Kind.TOOL_CALL: TOOL_CALL,
    Kind.TOOL_RESULT: tool_result(True),
    Kind.FINAL: final("bye"),
    Kind.COMPACTION: COMPACTION,
    Kind.FORGOTTEN: {"type": "forgotten", "key": "s1:1:user"},
}

# The string fields each type must have (the `_REQUIRED` table of sessions.py).
REQUIRED = [
    (Kind.USER, "text"),
    (Kind.USER, "at"),
    (Kind.ASSISTANT, "text"),
    (Kind.TOOL_CALL, "name"),
    (Kind.TOOL_RESULT, "name"),
    (Kind.TOOL_RESULT, "text"),
    (Kind.FINAL, "text"),
    (Kind.FINAL, "at"),
    (Kind.COMPACTION, "summary"),
]


@pytest.mark.parametrize("kind", list(Kind))
def test_a_valid_line_of_each_type_is_its_record_with_every_field_kept(kind: Kind) -> None:
    data = VALID[kind] | {"extra": [1, 2]}
    record = parse_line(json.dumps(data))
    assert record == Record(kind, data)


def test_a_session_record_needs_no_field() -> None:
    assert parse_line('{"type": "session"}') == Record(Kind.SESSION, {"type": "session"})


@pytest.mark.parametrize(
    "line",
    ["not json", "{", '{"type": "user", "text": "hi", "at": ', "", "   "],
    ids=["words", "brace", "cut", "empty", "spaces"],
)
def test_a_line_that_is_not_json_is_damage(line: str) -> None:
    with pytest.raises(ValueError, match="not JSON"):
        parse_line(line)


@pytest.mark.parametrize("line", ["[1, 2]", '"user"', "3", "null", "true"])
def test_a_line_that_is_not_an_object_is_damage(line: str) -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_line(line)


@pytest.mark.parametrize(
    "line", ["{}", '{"text": "hi"}', '{"type": 3}', '{"type": null}', '{"type": ["user"]}']
)
def test_a_record_without_a_string_type_is_damage(line: str) -> None:
    with pytest.raises(ValueError, match="type"):
        parse_line(line)


@pytest.mark.parametrize(("kind", "key"), REQUIRED)
def test_a_record_missing_a_required_field_is_damage(kind: Kind, key: str) -> None:
    data = dict(VALID[kind])
    del data[key]
    with pytest.raises(ValueError, match=f'"{key}"'):
        parse_line(json.dumps(data))


@pytest.mark.parametrize(("kind", "key"), REQUIRED)
@pytest.mark.parametrize("value", [None, 5, ["x"], {"a": "b"}])
def test_a_required_field_that_is_not_a_string_is_damage(kind: Kind, key: str, value: Any) -> None:
    data = VALID[kind] | {key: value}
    with pytest.raises(ValueError, match=f'"{key}"'):
        parse_line(json.dumps(data))


@pytest.mark.parametrize("kind", [Kind.USER, Kind.FINAL])
@pytest.mark.parametrize("at", ["yesterday", "2026-09-28T23:19:00", "2026-09-28", ""])
def test_a_bad_time_is_damage(kind: Kind, at: str) -> None:
    with pytest.raises(ValueError, match='"at"'):
        parse_line(json.dumps(VALID[kind] | {"at": at}))


@pytest.mark.parametrize("data_class", ["Secret", "PRIVATE", "confidential", "", 3, None, True])
def test_a_session_record_with_a_bad_class_is_damage(data_class: Any) -> None:
    with pytest.raises(ValueError, match="public, private or secret"):
        parse_line(json.dumps({"type": "session", "class": data_class}))


@pytest.mark.parametrize("untrusted", ["true", 1, 0, None, "false", []])
def test_a_tool_result_whose_untrusted_is_not_a_bool_is_damage(untrusted: Any) -> None:
    with pytest.raises(ValueError, match="untrusted"):
        parse_line(json.dumps(tool_result(True) | {"untrusted": untrusted}))


@pytest.mark.parametrize("speaker", [5, ["alice"], {"name": "alice"}])
def test_a_user_whose_speaker_is_not_a_string_is_damage(speaker: Any) -> None:
    with pytest.raises(ValueError, match="speaker"):
        parse_line(json.dumps(user("hi", speaker=speaker)))


@pytest.mark.parametrize("kind_name", ["thinking", "image", "x-user", "usr", ""])
def test_a_record_of_an_unknown_type_has_no_kind(kind_name: str) -> None:
    record = parse_line(json.dumps({"type": kind_name, "text": "whatever"}))
    assert record.kind is None
    assert not record.untrusted


@pytest.mark.parametrize(
    "kind_name", ["USER", "Final", "TOOL_RESULT", "tool-result", "toolresult", "Tool-Call"]
)
def test_a_type_spelled_like_a_known_one_is_damage(kind_name: str) -> None:
    with pytest.raises(ValueError, match='"type" must be written exactly'):
        parse_line(json.dumps({"type": kind_name, "text": "t", "name": "n", "at": AT}))


def test_a_lone_surrogate_in_a_line_becomes_the_replacement_character() -> None:
    record = parse_line('{"type": "user", "text": "a\\ud800b", "at": "' + AT + '"}')
    assert record is not None
    assert record.text() == "a\ufffdb"
    record.text().encode("utf-8")


# --- read_from and read_records -----------------------------------------------------------


def test_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    text = "\n" + json.dumps(user("one")) + "\n   \n\n" + json.dumps(final("two")) + "\n"
    path = write_log(tmp_path, 0, text)
    size, read = read_from(path)
    got = list(read)
    assert size == len(text.encode())
    assert [line.number for line in got] == [2, 5]
    assert [line.record.kind for line in got if line.record] == [Kind.USER, Kind.FINAL]
    assert [r.text() for r in read_records(path)] == ["one", "two"]


def test_a_line_ends_where_the_next_read_starts(tmp_path: Path) -> None:
    path = write_log(tmp_path, 0, lines(user("one"), ASSISTANT, final("two")))
    first = next(read_from(path)[1])
    assert first.number == 1
    assert first.end == len((json.dumps(user("one")) + "\n").encode())
    rest = list(read_from(path, first.end, first.number)[1])
    assert [line.number for line in rest] == [2, 3]
    assert [line.record.kind for line in rest if line.record] == [Kind.ASSISTANT, Kind.FINAL]


def test_a_record_of_an_unknown_type_is_read_with_no_kind(tmp_path: Path) -> None:
    path = write_log(tmp_path, 0, lines(user("one"), {"type": "reasoning"}, final("two")))
    assert [line.record.kind for line in read_from(path)[1]] == [Kind.USER, None, Kind.FINAL]
    assert [t.reply for t in turns(read_records(path))] == ["two"]


def test_a_last_line_without_a_newline_is_left_for_a_later_read(tmp_path: Path) -> None:
    path = write_log(tmp_path, 0, lines(user("one")) + json.dumps(final("two")))
    assert [r.text() for r in read_records(path)] == ["one"]
    with path.open("a", encoding="utf-8") as f:
        f.write("\n")
    assert [r.text() for r in read_records(path)] == ["one", "two"]


def test_a_half_written_last_line_is_not_damage(tmp_path: Path) -> None:
    whole = json.dumps(final("two"))
    path = write_log(tmp_path, 0, lines(user("one")) + whole[:9])
    assert [r.text() for r in read_records(path)] == ["one"]
    with path.open("a", encoding="utf-8") as f:
        f.write(whole[9:] + "\n")
    assert [r.text() for r in read_records(path)] == ["one", "two"]


def test_a_damaged_line_names_the_file_and_the_line_number(tmp_path: Path) -> None:
    path = write_log(tmp_path, 0, lines(user("one"), final("two")) + "{oops\n" + lines(ASSISTANT))
    with pytest.raises(DamagedLogError) as caught:
        read_records(path)
    assert caught.value.path == path
    assert caught.value.line == 3
    assert str(path) in str(caught.value)
    assert "line 3" in str(caught.value)


def test_a_damaged_line_is_given_with_its_damage_and_the_reading_goes_on(tmp_path: Path) -> None:
    path = write_log(
        tmp_path, 0, lines(user("one"), final("two")) + '{"type": "user"}\n' + lines(user("3"))
    )
    got = list(read_from(path)[1])
    assert [(line.number, line.record.kind) for line in got] == [
        (1, Kind.USER),
        (2, Kind.FINAL),
        (3, None),
        (4, Kind.USER),
    ]
    damage = got[2].damage
    assert damage is not None and damage.line == 3 and 'needs a string "text"' in str(damage)
    assert got[2].record.untrusted  # fed to a Progress, it taints what follows
    assert [line.damage for line in got if line is not got[2]] == [None, None, None]


def test_a_line_counts_blank_lines_before_it_in_its_number(tmp_path: Path) -> None:
    path = write_log(tmp_path, 0, lines(user("one")) + "\n\n[]\n")
    with pytest.raises(DamagedLogError) as caught:
        read_records(path)
    assert caught.value.line == 4


def test_a_line_that_is_not_utf8_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "0.jsonl"
    path.write_bytes(lines(user("one")).encode() + b'{"type": "user", "text": "\xff"}\n')
    with pytest.raises(DamagedLogError, match="line 2"):
        read_records(path)


# --- epochs -------------------------------------------------------------------------------


def test_epochs_are_in_numeric_order_and_other_files_are_ignored(tmp_path: Path) -> None:
    for n in (10, 2, 0, 1):
        write_log(tmp_path, n, "")
    folder = tmp_path / "s1"
    for name in ("x.jsonl", "1.json", "+1.jsonl", "notes.txt", "-1.jsonl", "1.jsonl.bak"):
        (folder / name).write_text(lines(user("no")), encoding="utf-8")
    assert epoch_logs(tmp_path, "s1") == [(n, folder / f"{n}.jsonl") for n in (0, 1, 2, 10)]


def test_a_missing_session_folder_has_no_logs_and_no_records(tmp_path: Path) -> None:
    assert epoch_logs(tmp_path, "nobody") == []
    assert read_session(tmp_path, "nobody") == []
    assert epoch_logs(tmp_path / "no-sessions-dir", "s1") == []
    assert read_session(tmp_path / "no-sessions-dir", "s1") == []


def test_a_session_reads_as_one_log_across_epochs(tmp_path: Path) -> None:
    write_log(tmp_path, 0, lines(session(), user("a"), final("ra"), user("b"), final("rb")))
    write_log(tmp_path, 1, lines(COMPACTION, user("c"), final("rc")))
    found = turns(read_session(tmp_path, "s1"))
    assert [(t.number, t.text, t.reply) for t in found] == [
        (1, "a", "ra"),
        (2, "b", "rb"),
        (3, "c", "rc"),
    ]


def test_epoch_ten_is_read_after_epoch_two(tmp_path: Path) -> None:
    for n in range(11):
        write_log(tmp_path, n, lines(COMPACTION, user(f"epoch {n}"), final("ok")))
    found = turns(read_session(tmp_path, "s1"))
    assert [t.text for t in found] == [f"epoch {n}" for n in range(11)]
    assert [t.number for t in found] == list(range(1, 12))


def test_damage_in_a_later_epoch_names_that_file(tmp_path: Path) -> None:
    write_log(tmp_path, 0, lines(user("a"), final("ra")))
    bad = write_log(tmp_path, 1, lines(COMPACTION) + '{"type": "final"}\n')
    with pytest.raises(DamagedLogError) as caught:
        read_session(tmp_path, "s1")
    assert caught.value.path == bad
    assert caught.value.line == 2
    assert "1.jsonl" in str(caught.value)
    assert "0.jsonl" not in str(caught.value)


# --- turns --------------------------------------------------------------------------------


def test_a_user_followed_by_a_user_leaves_the_first_turn_unfinished() -> None:
    found = turns(records(user("first"), user("second"), final("reply")))
    assert [(t.number, t.text, t.reply) for t in found] == [
        (1, "first", None),
        (2, "second", "reply"),
    ]
    assert not found[0].finished
    assert found[1].finished


def test_a_last_turn_without_a_final_is_given_unfinished() -> None:
    found = turns(records(user("a"), final("ra"), user("b"), ASSISTANT, TOOL_CALL))
    assert [(t.text, t.reply) for t in found] == [("a", "ra"), ("b", None)]


def test_a_turn_holds_its_speaker_and_times() -> None:
    found = turns(records(user("hi", speaker="alice"), final("hello", at=LATER), user("x")))
    assert found[0] == Turn(1, "hi", "alice", AT, False, "hello", LATER, False)
    assert found[1].speaker is None


def test_a_final_without_a_turn_is_no_turn() -> None:
    assert turns(records(session(), final("orphan"), ASSISTANT)) == []


def test_text_said_before_an_untrusted_result_is_clean_but_the_reply_after_it_is_tainted() -> None:
    found = turns(
        records(
            user("a"),
            final("ra"),
            user("read this page"),
            TOOL_CALL,
            tool_result(True),
            final("the page says"),
            user("and then?"),
            tool_result(False),
            final("more"),
            user("last"),
            final("bye"),
        )
    )
    assert [(t.tainted, t.reply_tainted) for t in found] == [
        (False, False),
        (False, True),
        (True, True),
        (True, True),
    ]


def test_taint_lasts_across_epochs(tmp_path: Path) -> None:
    write_log(tmp_path, 0, lines(user("a"), tool_result(True), final("ra")))
    write_log(tmp_path, 1, lines(COMPACTION, user("b"), final("rb")))
    found = turns(read_session(tmp_path, "s1"))
    assert [(t.tainted, t.reply_tainted) for t in found] == [(False, True), (True, True)]


@pytest.mark.parametrize("untrusted", [False, None])
def test_a_trusted_tool_result_taints_nothing(untrusted: bool | None) -> None:
    found = turns(records(user("a"), tool_result(untrusted), final("ra"), user("b"), final("rb")))
    assert [(t.tainted, t.reply_tainted) for t in found] == [(False, False), (False, False)]


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        ([], DataClass.PRIVATE),
        ([session()], DataClass.PRIVATE),
        ([session("public")], DataClass.PUBLIC),
        ([session("private")], DataClass.PRIVATE),
        ([session("secret")], DataClass.SECRET),
    ],
)
def test_the_session_class_comes_from_its_session_record(
    first: list[dict[str, Any]], expected: DataClass
) -> None:
    progress = Progress()
    for record in records(*first, user("a"), final("ra")):
        progress.feed(record)
    assert progress.data_class is expected


def test_a_session_record_that_is_not_first_is_refused() -> None:
    progress = Progress()
    progress.feed(records(user("a"))[0])
    with pytest.raises(ValueError, match="first"):
        progress.feed(records(session("secret"))[0])


def test_a_session_record_at_the_start_of_a_later_epoch_is_refused(tmp_path: Path) -> None:
    write_log(tmp_path, 0, lines(session(), user("a"), final("ra")))
    write_log(tmp_path, 1, lines(session("public"), user("b")))
    with pytest.raises(ValueError, match="first"):
        turns(read_session(tmp_path, "s1"))


def test_feed_gives_the_turns_each_record_closes() -> None:
    progress = Progress()
    a, ra, b, c = records(user("a"), final("ra"), user("b"), user("c"))
    assert progress.feed(a) == []
    assert [t.reply for t in progress.feed(ra)] == ["ra"]
    assert progress.feed(b) == []
    assert [(t.text, t.reply) for t in progress.feed(c)] == [("b", None)]
    assert progress.turns == 3
    assert progress.records == 4


def test_progress_survives_a_round_trip_through_json_mid_turn() -> None:
    head = records(session("secret"), user("a"), final("ra"), user("b", speaker="bo"))
    tail = records(tool_result(True), final("rb"), user("c"), final("rc"))
    straight = Progress()
    for record in head:
        straight.feed(record)
    assert straight.pending is not None

    saved = straight.to_json()
    json.loads(saved)
    restored = Progress.from_json(saved)
    assert restored == straight
    restored.feed(tail[0])
    assert Progress.from_json(restored.to_json()) == restored

    closed_straight = [t for r in tail for t in straight.feed(r)]
    closed_restored = [t for r in tail[1:] for t in restored.feed(r)]
    assert closed_restored == closed_straight
    assert restored == straight
    assert [(t.number, t.speaker, t.tainted, t.reply_tainted) for t in closed_straight] == [
        (2, "bo", False, True),
        (3, None, True, True),
    ]
    assert restored.data_class is DataClass.SECRET


def test_a_fresh_progress_survives_a_round_trip_through_json() -> None:
    assert Progress.from_json(Progress().to_json()) == Progress()


def test_a_progress_kept_before_forgotten_records_were_counted_is_never_forgotten_whole() -> None:
    # An index written by an earlier version: its records are taken as kept, as they were read.
    old = json.loads(Progress(turns=2, records=4).to_json())
    del old["forgotten"], old["kept"]
    restored = Progress.from_json(json.dumps(old))
    assert (restored.forgotten, restored.kept) == (0, 4) and not restored.forgotten_whole
