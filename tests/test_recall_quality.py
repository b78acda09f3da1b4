"""Recall that finds what a person means: word forms, function words, the conversation around
a message, each text once, one word wrong; and the index's move to stems."""

from __future__ import annotations

import random
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logs import AT, turn, write_log
from memoryd.home import Home
from memoryd.index import common, schema
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.items import Hit, Item
from memoryd.index.relevance import LONG, Sought, bm25, fold, stems, tokens
from memoryd.labels import DataClass
from memoryd.recall import recall
from memoryd.search.expressions import all_but_one, either, most_of
from memoryd.search.parts import DEPTH, Costs, only_common, search, terms
from memoryd.search.ranking import LENGTH, STEM_ONLY, Query, Scored, core, ranked, score
from memoryd.text.answer import parse_time
from memoryd.text.stems import stem
from memoryd.text.stopwords import content

NAMES = Names("boxmaker", "kyle")
NOW = datetime(2026, 10, 1, tzinfo=UTC)


def keys(index: Index, query: str, k: int = 5) -> list[str]:
    return [hit.item.key for hit in search(index, terms(query), k)]


def indexed(home: Home, index: Index) -> Index:
    catch_up(index, home.sessions, NAMES)
    return index


def test_python_stems_equal_fts5s_on_a_large_random_vocabulary() -> None:
    rng = random.Random(5)
    letters = "aeiouybcdlmnrstgzxwhkp" + "eiy" * 3 + "é"
    suffixes = [
        "ational",
        "ization",
        "iveness",
        "fulness",
        "ing",
        "ed",
        "eed",
        "ies",
        "sses",
        "s",
        "y",
        "e",
        "ll",
        "ate",
        "ment",
        "ent",
        "ion",
        "ous",
        "ive",
        "ize",
        "bl",
        "at",
    ]
    words = {"".join(rng.choices(letters, k=rng.randint(1, 12))) for _ in range(15_000)}
    words |= {
        "".join(rng.choices(letters, k=rng.randint(0, 6))) + rng.choice(suffixes)
        for _ in range(15_000)
    }
    words |= {"a" * 64 + "ing", "aing", "eed", "ies", "xes"}
    listed = sorted(w for w in words if len(tokens(w)) == 1)
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", enumerate(listed, 1))
    fts5 = dict(conn.execute("SELECT doc, term FROM v"))
    differ = [w for n, w in enumerate(listed, 1) if fts5[n] != stem(tokens(w)[0])]
    assert differ == []
    # `ranking` looks a token up only when its first letter starts a stem of the query.
    assert all(stem(tokens(w)[0])[:1] == tokens(w)[0][:1] for w in listed)
    assert len(listed) > 20_000


def test_a_word_finds_its_other_forms(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("I travel to Tokyo every spring", "nice"))
    write_log(home, "s2", turn("she travels light", "ok"))
    write_log(home, "s3", turn("my cat is named Miso", "cute"))
    indexed(home, index)
    assert set(keys(index, "travelled", 2)) == {"s1:1:user", "s2:1:user"}
    assert keys(index, "name") == ["s3:1:user", "s3:1:reply"]


def test_the_word_as_written_ranks_above_its_other_forms(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("we travel there", "a"))
    write_log(home, "s2", turn("we travelled there", "b"))
    indexed(home, index)
    assert keys(index, "travelled")[0] == "s2:1:user"
    assert keys(index, "travel")[0] == "s1:1:user"


def test_function_words_are_never_the_only_reason_an_item_is_shown(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", turn("I just started a company", "Nice! What kind of startup is it?"))
    indexed(home, index)
    answer = recall(index, "What is the user's salary?", 5, None, NOW, home.recalls)
    assert answer.text.startswith("(no matches")


def test_function_words_are_not_required_by_the_every_term_part(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("Calvin flew to Tokyo in May", "fun"))
    write_log(home, "s2", turn("when did you go", "did it"))
    indexed(home, index)
    assert keys(index, "When did Calvin first travel to Tokyo?")[0] == "s1:1:user"


def test_a_query_of_function_words_only_still_searches_them(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("to be or not to be", "that is the question"))
    indexed(home, index)
    assert "s1:1:user" in keys(index, "to be")


def test_a_neighbour_lifts_a_message(home: Home, index: Index) -> None:
    # Both user messages hold `boat` alike; only the first's reply speaks of the harbour.
    # The lifted one is indexed last, so that a tie would put it second.
    write_log(home, "s1", turn("the boat ride", "fine"))
    indexed(home, index)
    write_log(home, "s2", turn("the boat trip", "it left the harbour at dawn"))
    indexed(home, index)
    found = keys(index, "boat harbour", k=3)
    assert found.index("s2:1:user") < found.index("s1:1:user")


@given(
    words=st.lists(
        st.text("bcdfgkmpqvxz", min_size=5, max_size=8), min_size=3, max_size=3, unique=True
    ),
    copies=st.integers(1, 4),
)
def test_the_item_holding_every_word_best_is_not_passed_by_one_whose_neighbours_repeat_them(
    words: list[str], copies: int
) -> None:
    # The bench's known item "again hows going" ("hey again! hows it going?") fell to rank 7
    # under longer messages holding the words whose replies repeated some of them.
    a, b, c = words
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        write_log(home, "target", turn(f"{a} {b} {c}", "fine"))
        for n in range(copies):
            write_log(home, f"s{n}", turn(f"so {a} then {b} with {c} at {n}", f"{a} {b} {a} {b}"))
        for n in range(10):
            write_log(home, f"f{n}", turn(f"filler {n} of the day", f"reply {n}"))
        with Index(home.index) as index:
            indexed(home, index)
            assert keys(index, f"{a} {b} {c}", 1) == ["target:1:user"]


def test_the_same_text_from_the_same_speaker_is_shown_once(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("the walrus sleeps", "a"))
    write_log(home, "s2", turn("the walrus sleeps", "b"))
    write_log(home, "s3", turn("the walrus sleeps", "c", speaker="ann"))
    indexed(home, index)
    assert keys(index, "walrus", 2) == ["s1:1:user", "s3:1:user"]


def test_an_item_with_one_query_word_missing_comes_before_one_word_matches(
    home: Home, index: Index
) -> None:
    for n in range(6):
        write_log(home, f"d{n}", turn("harbour harbour harbour", "-"))
    write_log(home, "target", turn("the blue kayak is moored by the old mill", "-"))
    for n in range(30):
        write_log(home, f"f{n}", turn(f"filler blue kayak mill words {n}", "-"))
    indexed(home, index)
    assert keys(index, "blue kayak mill harbour", k=1) != []
    top = keys(index, "old kayak mill harbour", k=3)
    assert top[0] == "target:1:user"


def test_the_old_index_moves_to_stems_on_open(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
    with Index(home.index) as old:
        # Its items as a catch-up made them (a catch-up now keeps read states it had no
        # columns for).
        private = ("memory", "private")
        old.add(
            [
                Item("s1:1:user", *private, "said", "kyle", AT, "I travelled to Lisbon"),
                Item("s1:1:reply", *private, "reply", "boxmaker", AT, "Lisbon is lovely"),
            ]
        )
        # What an index before stems kept: a count for each token as written.
        old.conn.execute("DELETE FROM terms")
        old.conn.execute("INSERT INTO terms VALUES ('travelled', 1), ('lisbon', 2)")
    monkeypatch.undo()
    with Index(home.index) as opened:
        counted = dict(opened.conn.execute("SELECT term, documents FROM terms").fetchall())
        assert counted == {s: 1 for s in stems("I travelled to Lisbon")} | {
            s: 1 for s in stems("Lisbon is lovely")
        } | {"lisbon": 2}
        assert [h.item.key for h in search(opened, ["travel"], 1)] == ["s1:1:user"]


def test_an_item_text_is_as_written(home: Home, index: Index, tmp_path: Path) -> None:
    write_log(
        home,
        "s1",
        [
            {"type": "user", "text": "Travelled!", "at": AT},
            {"type": "final", "text": "ok", "at": AT},
        ],
    )
    indexed(home, index)
    assert recall(index, "travel", 1, None, NOW, home.recalls).text.endswith("  Travelled!")


def test_an_item_holding_the_function_words_too_comes_first(home: Home, index: Index) -> None:
    for n in range(3):
        write_log(home, f"s{n}", turn("sold boat", "-"))
    write_log(home, "whole", turn("we sold the boat that leaked badly", "-"))
    indexed(home, index)
    for k in (1, 5):
        assert keys(index, "the boat that we sold", k)[0] == "whole:1:user"


def test_function_words_weigh_a_little_among_items_a_content_word_found(
    home: Home, index: Index
) -> None:
    for n in range(20):
        write_log(home, f"f{n}", turn("filler words here", "-"))
    write_log(home, "s1", turn("boat xx yy", "-"))
    write_log(home, "s2", turn("boat the yy", "-"))
    write_log(home, "s3", turn("boat boat yy", "-"))
    indexed(home, index)
    # `the` lifts s2 over s1, its equal but older; `boat` twice outweighs it.
    assert keys(index, "the boat with", 3) == ["s3:1:user", "s2:1:user", "s1:1:user"]


def test_the_reply_to_a_message_that_matched_is_shown(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("what do you cook in your slow cooker?", "honey garlic chicken"))
    for n in range(5):
        write_log(home, f"f{n}", turn(f"a slow day number {n}", "-"))
    indexed(home, index)
    assert keys(index, "slow cooker meal")[:2] == ["s1:1:user", "s1:1:reply"]


def test_a_one_word_query_shows_the_reply_as_the_word_with_a_function_word_does(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", turn("where did you leave the boat?", "in the harbour by the pier"))
    for n in range(8):
        write_log(home, f"f{n}", turn(f"a filler message {n} about the day", "ok then"))
    indexed(home, index)
    assert keys(index, "boat") == keys(index, "the boat") == ["s1:1:user", "s1:1:reply"]


@given(
    word=st.text("bcdfgkmpqvxz", min_size=5, max_size=8),
    asked=st.integers(1, 2),
    fillers=st.integers(0, 6),
)
def test_a_one_word_query_shows_each_reply_to_the_few_questions_holding_it(
    word: str, asked: int, fillers: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        for n in range(asked):
            write_log(home, f"q{n}", turn(f"where is the {word} number {n}", f"answer {n} here"))
        for n in range(fillers):
            write_log(home, f"f{n}", turn(f"filler {n} of the day", f"reply {n}"))
        with Index(home.index) as index:
            indexed(home, index)
            one, two = keys(index, word), keys(index, f"the {word}")
    questions = {f"q{n}:1:user" for n in range(asked)}
    replies = {f"q{n}:1:reply" for n in range(asked)}
    assert set(one) == set(two) == questions | replies
    assert set(one[:asked]) == questions  # the words themselves first


def test_an_item_whose_conversation_holds_every_word_comes_before_one_holding_some(
    home: Home, index: Index
) -> None:
    # `kayak kayak kayak` is bm25's best for both words; the message whose reply holds
    # `harbour` is the one the query is about.
    write_log(home, "s1", turn("kayak kayak kayak", "-"))
    write_log(home, "s2", turn("a long story of a trip in my kayak last summer", "by the harbour"))
    for n in range(5):
        write_log(home, f"f{n}", turn(f"filler text {n}", "-"))
    indexed(home, index)
    assert set(keys(index, "kayak harbour", 2)) == {"s2:1:user", "s2:1:reply"}


def test_an_item_holding_no_word_comes_after_those_whose_conversation_holds_every_word(
    home: Home, index: Index
) -> None:
    # s2 lacks `the`: its conversation holds every word the query is about, not every word.
    write_log(home, "s1", turn("the kayak harbour", "ok"))
    long = "kayak by a harbour " + " ".join(f"w{n}" for n in range(60))
    write_log(home, "s2", turn(long, "-"))
    indexed(home, index)
    found = keys(index, "the kayak harbour", 3)
    assert found.index("s2:1:user") < found.index("s1:1:reply")


TIMES = [AT, "2026-09-28T23:18Z", "2026-09-29T01:19:00+02:00"]
"""Times of one instant written two ways, and one before it."""


def _tied(home: Home, order: list[int], times: list[str]) -> None:
    # The same message from a speaker of its own in each session (so none is shown once for
    # another): every one holds the word as often, in as many words.
    for n in order:
        at = times[n]
        write_log(home, f"s{n}", turn("the kayak is red", f"reply {n}", at=at, speaker=f"p{n}"))


@given(
    order=st.permutations(list(range(9))),
    times=st.lists(st.sampled_from(TIMES), min_size=9, max_size=9),
    query=st.sampled_from(["kayak", "red kayak", "the kayak"]),
    k=st.sampled_from([1, 3, 5, 20]),
)
def test_ties_are_shown_in_the_same_order_whatever_order_the_index_took_them_in(
    order: list[int], times: list[str], query: str, k: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        with Index(Path(folder) / "as-written.sqlite") as written:
            for n in order:  # the watcher's order: each session as it is written
                _tied(home, [n], times)
                catch_up(written, home.sessions, NAMES)
            with Index(Path(folder) / "by-name.sqlite") as by_name:  # as a reindex reads
                catch_up(by_name, home.sessions, NAMES)
                assert keys(written, query, k) == keys(by_name, query, k)
                found = search(by_name, terms(query), k)
    said = [hit for hit in found if hit.item.kind == "said"]
    placed = [(parse_time(hit.item.at), hit.item.key) for hit in said]
    assert placed == sorted(placed)  # the older first, then by key


def test_a_tie_shows_the_older_item_first_then_the_lower_key(home: Home, index: Index) -> None:
    for n in (2, 1, 0):
        _tied(home, [n], ["2026-09-28T23:19Z", AT, "2026-09-28T23:20:00+02:00"])
        catch_up(index, home.sessions, NAMES)
    assert keys(index, "kayak", 3) == ["s2:1:user", "s0:1:user", "s1:1:user"]


def hit(key: str, n: int) -> Hit:
    return Hit(n, Item(key, "memory", "private", "turn", "ann", "2026-10-01T00:00:00Z", f"t{n}"))


def test_an_item_gains_from_its_sessions_best_score() -> None:
    # Equal scores, the older first on a tie, unless its session's best lifts the other.
    held = frozenset({"kayak"})
    found = [
        Scored(hit("a:1:user", 1), held, False, 1.0),
        Scored(hit("b:1:user", 2), held, False, 1.0),
        Scored(hit("b:9:user", 3), held, False, 3.0),
    ]
    assert [h.id for h in ranked(found, {}, 1, 3)] == [3, 2, 1]


def test_a_long_message_is_weighed_down_less_than_fts5_does() -> None:
    query = Query.of(["kayak"], ["kayak"])
    idf = {"kayak": 1.0}
    twice_in_20 = "kayak kayak " + " ".join(f"w{n}" for n in range(18))
    once_in_4 = "kayak w1 w2 w3"
    assert score(twice_in_20, query, idf, 8.0)[2] > score(once_in_4, query, idf, 8.0)[2]
    # FTS5's own bm25 puts the short one first.
    assert bm25({"kayak": 2}, 20, idf, 8.0) < bm25({"kayak": 1}, 4, idf, 8.0)


def test_a_neighbour_above_the_searchs_class_is_neither_shown_nor_counted(index: Index) -> None:
    at = "2026-10-01T00:00:00Z"
    with index.writing():
        index.add(
            [
                Item("s:1:user", "memory", "public", "turn", "ann", at, "the kayak trip"),
                Item("s:1:reply", "memory", "secret", "turn", "kyle", at, "the harbour code"),
                Item("p:1:user", "memory", "public", "turn", "ann", at, "kayak"),
            ]
        )
    hits = search(index, terms("kayak harbour"), 5, DataClass.PUBLIC)
    assert [h.item.key for h in hits] == ["p:1:user", "s:1:user"]


def test_the_all_but_one_lists_leave_out_those_of_common_words_only() -> None:
    assert all_but_one(["worry", "papa", "back"], ["papa", "worry"]) == [
        ["papa", "back"],
        ["worry", "back"],
        ["worry", "papa"],
    ]
    assert all_but_one(["going", "perk", "class"], ["perk"]) == [
        ["perk", "class"],
        ["going", "perk"],
    ]
    assert all_but_one(["kayak", "mill"], ["kayak", "mill"]) == []
    assert either([["perk", "class"], ["going", "perk"]]) == (
        '("perk" AND "class") OR ("going" AND "perk")'
    )


def test_of_many_words_all_but_one_counts_the_kept_ones_in_groups() -> None:
    three = ["going", "perk", "class"]
    # Each word once for each phrase holding it: FTS5 reads its doclist for each.
    assert most_of(three, ["perk"]) == (
        '("perk" AND "class") OR ("going" AND "perk")',
        ["perk", "class", "going", "perk"],
    )
    many = ["a1", "b2", "c3", "d4", "e5", "f6"]
    # The kept words, rarest first: three of them, all but one; more, in groups.
    assert most_of(many, ["e5", "b2", "d4"]) == (
        '("b2" AND "d4") OR ("e5" AND "d4") OR ("e5" AND "b2")',
        ["b2", "d4", "e5", "d4", "e5", "b2"],
    )
    assert most_of(many, ["f6", "a1", "e5", "b2", "d4"]) == (
        '("f6" OR "a1") AND ("e5" OR "b2" OR "d4")',
        ["f6", "a1", "e5", "b2", "d4"],
    )
    assert most_of(many, ["f6", "a1", "e5", "b2"])[0] == '("f6" OR "a1") AND ("e5" OR "b2")'
    assert most_of(many, ["b2", "d4"]) == ("", [])
    assert most_of(["kayak", "mill"], ["kayak", "mill"]) == ("", [])


def test_a_known_item_asked_with_one_word_it_lacks_is_found_beside_a_common_word(
    home: Home, index: Index
) -> None:
    # `back` is common; the some-term part ranks `worry OR papa`, whose best 20 are the short
    # `papa` items: the message holding `worry` and `back` is found as all but one.
    for n in range(25):
        write_log(home, f"p{n}", turn(f"papa {n}", "-"))
    for n in range(40):
        write_log(home, f"w{n}", turn(f"worry not about the thing number {n}", "-"))
    for n in range(60):
        write_log(home, f"b{n}", turn(f"back {n}", "-"))
    write_log(home, "target", turn("do not worry, I will be back soon enough", "-"))
    indexed(home, index)
    found = [hit.item.key for hit in search(index, terms("worry papa back"), 5, floor=50)]
    assert found[0] == "target:1:user"


def test_an_item_whose_conversation_lacks_one_of_many_words_comes_before_bm25s_best() -> None:
    words = ["aa", "bb", "cc", "dd", "ee"]
    found = [
        Scored(hit("a:1:user", 1), frozenset(words[:2]), False, 5.0),
        Scored(hit("b:1:user", 2), frozenset(words[:4]), False, 1.0),
    ]
    assert [h.id for h in ranked(found, {}, len(words), 2)] == [2, 1]


def test_all_but_one_is_not_looked_for_among_common_words_only(home: Home, index: Index) -> None:
    for n in range(30):
        write_log(home, f"s{n}", turn(f"alpha beta {n}", f"gamma delta {n}"))
    write_log(home, "rare", turn("alpha zebra", "-"))
    indexed(home, index)
    executed: list[str] = []
    index.conn.set_trace_callback(executed.append)
    # Every word held by more than `floor` items is common: no AND of them is read.
    search(index, terms("alpha beta gamma"), 5, floor=5)
    assert executed and not any('") OR ("' in sql for sql in executed)
    search(index, terms("alpha beta zebra"), 5, floor=5)
    assert any('") OR ("' in sql for sql in executed)
    index.conn.set_trace_callback(None)


def test_every_token_starts_with_the_core_of_its_stem() -> None:
    # The score skips a text holding no core of the query's stems: exact only if Porter keeps
    # every token's start, which this checks on words built to end in its suffixes.
    rng = random.Random(11)
    letters = "aeiouybcdlmnrstgzvkp" + "eiy" * 3 + "é"
    ends = [
        "ational",
        "biliti",
        "bility",
        "iviti",
        "enci",
        "ency",
        "izer",
        "ation",
        "ator",
        "alli",
        "entli",
        "eli",
        "ousli",
        "ousness",
        "iveness",
        "ated",
        "bled",
        "ized",
        "hoping",
        "ies",
        "y",
        "ing",
        "ed",
        "s",
        "e",
        "ll",
        "ement",
        "ance",
        "able",
    ]
    words = {
        "".join(rng.choices(letters, k=rng.randint(1, 9))) + rng.choice(ends) for _ in range(20_000)
    }
    words |= {"".join(rng.choices(letters, k=rng.randint(1, 12))) for _ in range(10_000)}
    found = [t for w in words for t in tokens(w)]
    assert len(found) > 25_000
    assert [t for t in found if not t.startswith(core(stem(t)))] == []


# Letters whose UTF-8 ends in two bytes alike (`ਨ`, E0 A8 A8): FTS5's porter, on bytes, drops
# the last of two alike consonants left by a removed `ed` or `ing`, and cuts such a letter.
CUT_LETTERS = [
    letter
    for letter in map(chr, range(0x800, 0x3000))
    if letter.encode()[-1] == letter.encode()[-2] and letter.isalpha() and fold(letter) == letter
]


@given(
    st.text(alphabet=st.sampled_from([*"aeiouybdlnst", *CUT_LETTERS]), min_size=1, max_size=6),
    st.sampled_from(["ed", "ing", "s", "e", "", "ied", "eed"]),
    st.sampled_from(["ed", "ing", "s", ""]),
)
def test_a_token_whose_stem_cuts_a_letter_starts_with_its_core_and_is_scored(
    start: str, end: str, other: str
) -> None:
    assert len(CUT_LETTERS) > 20
    for token in tokens(start + end):
        assert token.startswith(core(stem(token))), (token, stem(token))
    # The query in one form, the text in another of the same stem: counted as FTS5 counts it.
    words = tokens(start + other)
    if words:
        query = Query.of(words, words)
        idf = {s: 1.0 for s in query.stems}
        text = f"x {start}{end} y"
        assert score(text, query, idf, 9.0) == _score_of_every_token(text, query, idf, 9.0)


def test_a_word_whose_stem_cuts_a_letter_is_indexed_and_found_in_its_other_forms(
    home: Home, index: Index
) -> None:
    # Such a stem held surrogates, which SQLite refused: the catch-up of a log holding the
    # word failed, and so did a recall asking for it.
    letters = random.Random(3).sample(CUT_LETTERS, 12)
    for n, letter in enumerate(letters):
        write_log(home, f"s{n}", turn(f"we sailed past a{letter}ed cliffs", "lovely"))
    indexed(home, index)
    for n, letter in enumerate(letters):
        assert stem(f"a{letter}ing") == stem(f"a{letter}ed")  # as FTS5 stems them alike
        assert keys(index, f"a{letter}ing cliffs")[0] == f"s{n}:1:user"
        assert keys(index, f"a{letter}ing") == [f"s{n}:1:user", f"s{n}:1:reply"]
        assert (
            f"a{letter}ed cliffs" in recall(index, f"a{letter}ing", 5, None, NOW, home.recalls).text
        )


def _score_of_every_token(
    text: str, query: Query, idf: dict[str, float], average: float
) -> tuple[frozenset[str], bool, float]:
    counts: dict[str, float] = {}
    found = tokens(text)
    for token in found:
        written = query.forms.get(stem(token))
        if written is not None:
            s = stem(token)
            counts[s] = counts.get(s, 0.0) + (1.0 if token in written else STEM_ONLY)
    held = query.content.intersection(counts)
    return held, len(counts) == len(query.forms), bm25(counts, len(found), idf, average, LENGTH)


@given(
    st.lists(
        st.sampled_from(
            [
                "travelled",
                "travels",
                "the",
                "possibility",
                "happy",
                "Émile",
                "x²",
                "is",
                "it's",
                "relational",
                "go",
            ]
        ),
        min_size=1,
        max_size=4,
    ),
    st.text(alphabet=st.sampled_from(list("aeiouytrvlsphbdnmgx ²É.'_9")), max_size=80),
)
def test_a_score_skipping_texts_without_a_core_equals_one_counting_every_token(
    asked: list[str], text: str
) -> None:
    words = list(dict.fromkeys(t for w in asked for t in tokens(w)))
    query = Query.of(words, content(words))
    idf = {s: 1.0 + n for n, s in enumerate(query.stems)}
    long = "travel happiness relate " * (LONG // 20) + text  # its tokens found by their starts
    for written in (text, text + " " + " ".join(asked), "travel happiness relate " + text, long):
        assert score(written, query, idf, 9.0) == _score_of_every_token(written, query, idf, 9.0)


_PIECES = ["abc", "abcd", "ab", "dea", "éab", "bcd", "x"]


@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES), st.text(alphabet=st.sampled_from(list(" _9².'ß")), max_size=3)
        ),
        max_size=300,
    ),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3),
)
def test_the_tokens_found_by_their_starts_are_those_of_every_token(
    parts: list[str], words: list[str]
) -> None:
    text = "".join(parts).ljust(LONG)  # long enough to be looked for by its starts
    held = {stem(t) for word in words for t in tokens(word)}
    cores = tuple(dict.fromkeys(core(s) for s in held))
    expected: dict[str, int] = {}
    for token in tokens(text):
        if stem(token) in held:
            expected[token] = expected.get(token, 0) + 1
    # In the order the text first holds them: a score adds its stems' weights in that order.
    tally = Sought(held, cores).tally(fold(text))
    assert tally.tokens is not None and list(tally.tokens.items()) == list(expected.items())


def test_the_common_words_are_read_alone_when_the_lists_leave_them_out() -> None:
    four = ["want", "balloon", "different", "used"]
    assert only_common(four, ["balloon"]) == ["want", "different", "used"]
    assert only_common(four, ["balloon", "used"]) == []  # every list holds one of the two
    assert only_common(four, []) == []  # the every-term part read them all
    assert only_common(["want", "balloon", "used"], ["balloon"]) == ["want", "used"]
    assert only_common(["want", "balloon"], ["balloon"]) == []
    many = ["yeah", "getting", "fine", "pretty", "much", "comfortable"]
    assert only_common(many, ["comfortable", "fine"]) == ["yeah", "getting", "pretty", "much"]
    assert only_common(many, ["comfortable", "fine", "pretty"]) == []  # `most_of` groups them


def test_a_known_item_lacking_its_one_uncommon_word_is_found_by_its_common_ones(
    home: Home, index: Index
) -> None:
    for n in range(8):
        write_log(home, f"a{n}", turn(f"alpha beta {n}", f"delta {n}"))
        write_log(home, f"g{n}", turn(f"gamma epsilon {n}", f"delta {n}"))
    for n in range(3):
        write_log(home, f"z{n}", turn(f"zebra {n}", f"delta {n}"))
    write_log(home, "target", turn("alpha beta gamma kiwi", "delta"))
    indexed(home, index)
    # alpha, beta, gamma are common (held by more than `floor` items); zebra is not, and the
    # target lacks it: only the items holding every common word find the target.
    found = search(index, terms("alpha zebra beta gamma"), 3, floor=5, costs=Costs(1))
    assert found[0].item.key == "target:1:user"


def test_the_items_holding_every_word_are_matched_once_and_read_by_id(
    home: Home, index: Index
) -> None:
    # More than a search looks for (`DEPTH`): the items holding every word fill it.
    for n in range(DEPTH + 2):
        write_log(home, f"s{n}", turn(f"walrus kayak {n}", f"paddle {n}"))
    indexed(home, index)
    executed: list[str] = []
    index.conn.set_trace_callback(executed.append)
    found = search(index, terms("walrus kayak"), 5, costs=Costs(1))
    index.conn.set_trace_callback(None)
    assert len(found) == 5
    # Their row ids once (FTS5 reads doclists only), then their texts by id: no `highlight()`.
    assert len([sql for sql in executed if "MATCH" in sql]) == 1
    assert not [sql for sql in executed if "highlight" in sql]


def test_a_lone_common_word_is_read_from_its_kept_rows_not_ranked_by_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common, "THRESHOLD", 15)
    monkeypatch.setattr(common, "KEPT", 60)
    monkeypatch.setattr(common, "MOST", 120)
    items = [
        Item(f"s{n}:1:user", "t", "private", "said", "u", AT, "alpha " + "filler " * (n % 7))
        for n in range(80)
    ]
    items.append(Item("t:1:user", "t", "private", "said", "u", AT, "the alpha"))
    with Index(tmp_path / "kept.sqlite") as kept, Index(tmp_path / "bare.sqlite") as bare:
        kept.add(items)
        bare.add(items)
        bare.conn.execute("DELETE FROM common_terms")  # FTS5 ranks every word there
        executed: list[str] = []
        kept.conn.set_trace_callback(executed.append)
        # `the` is a function word: the items holding `alpha` alone are read too, and when
        # every word is common the some-term part keeps `alpha` alone.
        for k in (5, 12):
            found = [h.id for h in search(kept, terms("the alpha"), k, floor=0)]
            assert found == [h.id for h in search(bare, terms("the alpha"), k, floor=0)]
        kept.conn.set_trace_callback(None)
        ranked_alone = [s for s in executed if "bm25(items_fts)" in s and "MATCH '\"alpha\"'" in s]
        assert executed and ranked_alone == []
