"""`tally`: a search counts each row's tokens of its query once, for every part and the ranking,
and each use scores the row as counting it again would (long texts, forms of one stem, words
inside others, texts that fold to ASCII and texts that do not)."""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.index.relevance import LONG, bm25, fold, tokens
from memoryd.search.parts import search, terms
from memoryd.search.profiles import PROFILED, PROFILES, Profile, Profiles
from memoryd.search.ranking import LENGTH, STEM_ONLY, Query, scored
from memoryd.search.tally import Tallies, profiled
from memoryd.search.weights import Weights
from memoryd.text.stems import stem
from memoryd.text.stopwords import content

AT = "2026-09-28T23:19:00Z"

# Words whose cores stand inside others (`at` in `that`), forms of one stem, one-letter words,
# function words, words that fold to ASCII and words that do not.
WORDS = ["at", "that", "so", "also", "walk", "walks", "walking", "t", "the", "to", "on"]
WORDS += ["Café", "cafés", "straße", "x²", "aਨed", "aਨing"]
FILLER = [f"f{n}" for n in range(8)] + ["one", "only", "today", "tea"]


def counted_one_token_at_a_time(text: str, stems: dict[str, float]) -> dict[str, int]:
    """Each weighed stem's count in `text`, a token at a time, in the order it first stands."""
    counts: dict[str, int] = {}
    for token in tokens(text):
        if stem(token) in stems:
            counts[stem(token)] = counts.get(stem(token), 0) + 1
    return counts


def ranked_one_token_at_a_time(
    text: str, query: Query, idf: dict[str, float]
) -> tuple[frozenset[str], bool, float]:
    """`ranking.score`'s stems held and score, a token at a time (short texts: no passage)."""
    counts: dict[str, float] = {}
    for token in tokens(text):
        written = query.forms.get(stem(token))
        if written is not None:
            s = stem(token)
            counts[s] = counts.get(s, 0.0) + (1.0 if token in written else STEM_ONLY)
    held = query.content.intersection(counts)
    whole = len(counts) == len(query.forms)
    return held, whole, bm25(counts, len(tokens(text)), idf, 9.0, LENGTH)


texts = st.lists(
    st.lists(st.sampled_from(WORDS + FILLER * 3), max_size=120).map(" ".join)
    | st.lists(st.sampled_from(WORDS + FILLER * 3), min_size=LONG // 4, max_size=400).map(" ".join),
    min_size=1,
    max_size=8,
)


@given(
    texts,
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=8, unique=True),
    st.lists(st.booleans(), min_size=8, max_size=8),
    st.randoms(use_true_random=False),
)
def test_each_use_of_a_shared_tally_scores_a_row_as_counting_it_again(
    rows: list[str], asked: list[str], parts: list[bool], rng: random.Random
) -> None:
    words = list(dict.fromkeys(t for w in asked for t in tokens(w)))
    query = Query.of(words, content(words))
    idf = {s: 1.0 + n / 3 for n, s in enumerate(query.stems)}
    tallies = Tallies(query.sought, query.forms)
    # Two parts, of every stem and of some, and the ranking, asking in a random order.
    some = {s: w for (s, w), keep in zip(idf.items(), parts, strict=False) if keep} or idf
    uses = [("every", n) for n in range(len(rows))] + [("some", n) for n in range(len(rows))]
    uses += [("ranked", n) for n in range(len(rows))]
    rng.shuffle(uses)
    for use, n in uses:
        text, folded, length = rows[n], fold(rows[n]), len(tokens(rows[n]))
        if use == "ranked":
            held, whole, score = scored(tallies.of(n, folded), query, idf, 9.0)
            expected = ranked_one_token_at_a_time(text, query, idf)
            if len(text) <= 1_000:  # a longer text holds, for the tiers, what a passage does
                assert (held, whole) == expected[:2], text
            assert score == expected[2], text
            continue
        weighed = idf if use == "every" else some
        shared = Weights(weighed, 9.0, tallies).row_score(n, folded, length)
        alone = Weights(weighed, 9.0).score(folded, length)
        counts = counted_one_token_at_a_time(text, weighed)
        assert shared == alone == bm25(counts, length, weighed, 9.0), text


def test_a_weighing_of_a_stem_the_tallies_do_not_count_counts_the_row_itself() -> None:
    query = Query.of(["walk"], ["walk"])
    tallies = Tallies(query.sought, query.forms)
    text = "walking to the tea shop, walks at noon"
    assert tallies.of(1, fold(text)).counts == {"walk": 2}
    wider = Weights({"walk": 1.0, "tea": 2.0}, 5.0, tallies)
    assert wider.row_score(1, fold(text), 8) == Weights(wider.idf, 5.0).score(fold(text), 8)
    assert wider.row_score(1, fold(text), 8) > Weights({"walk": 1.0}, 5.0).score(fold(text), 8)


def test_a_row_is_counted_once_a_search() -> None:
    query = Query.of(["walk"], ["walk"])
    tallies = Tallies(query.sought, query.forms)
    first = tallies.of(7, fold("walk walks"))
    assert tallies.of(7, fold("walk walks")) is first
    assert tallies.of(8, fold("a walk")).counts == {"walk": 1}
    assert tallies.known(9, fold("a walk")) is None  # not counted yet, and short: no profile


long_texts = st.lists(st.sampled_from(WORDS + FILLER * 3), min_size=PROFILED // 3, max_size=900)


@given(
    long_texts.map(" ".join),
    st.lists(st.sampled_from([*WORDS, "absent", "tea", "fx"]), min_size=1, max_size=8),
)
def test_a_text_counted_from_its_profile_is_counted_as_reading_it(
    text: str, asked: list[str]
) -> None:
    words = list(dict.fromkeys(t for w in asked for t in tokens(w)))
    query = Query.of(words, content(words))
    folded = fold(text)
    if not folded.isascii():
        folded = folded.encode("ascii", "replace").decode().replace("?", " ")
    read = query.sought.tally(folded)
    counted = profiled(folded, Profile(folded), query.forms)
    # The same counts in the same order (a score adds them so), the same words as written.
    assert list(counted.counts.items()) == list(read.counts.items())
    assert counted.written == read.written
    assert counted.length == len(tokens(folded))
    idf = {s: 1.0 + n / 7 for n, s in enumerate(query.stems)}
    assert scored(counted, query, idf, 9.0) == scored(read, query, idf, 9.0)


def test_a_long_text_is_profiled_the_second_time_it_is_read() -> None:
    profiles = Profiles()
    long = "walk " * (PROFILED // 5) + "tea"
    assert profiles.of(fold(long)) is None  # counted once: only marked
    assert profiles.get(fold(long)) is None
    profile = profiles.of(fold(long))
    assert profile is not None and profiles.of(fold(long)) is profile
    assert profiles.get(fold(long)) is profile
    assert profile.counts(["walk", "tea", "absent"]) == {"walk": PROFILED // 5, "tea": 1}
    assert profiles.of(fold(long + " more")) is None  # another text
    twin = long[:-1] + "e"  # as long, another text
    assert profiles.of(twin) is None
    found = profiles.of(twin)
    assert found is not None and found.counts(["tea", "tee"]) == {"tee": 1}
    short, other = "walk " * 10, "café " * PROFILED  # too short, and not ASCII
    for text in (short, short, other, other):
        assert profiles.of(text) is None
    assert len(profiles) == 2


def test_the_profiles_keep_at_most_their_size_the_most_recent_first() -> None:
    profiles = Profiles(most=3_000)
    texts = [" ".join(f"w{n}x{i}" for i in range(PROFILED // 4)) for n in range(12)]
    for text in texts:
        profiles.of(text)
        profiles.of(text)
        assert profiles.size <= 3_000
    assert len(profiles) == 6  # 250 tokens and 250 stems each: six fit, the oldest went
    assert profiles.of(texts[-1]) is not None
    assert profiles.of(texts[0]) is None  # gone: read, and marked again


def test_a_profile_holds_no_text() -> None:
    secret = "zq7vbkx3rwp"
    profile = Profile(fold(f"the gate code is {secret} " * (PROFILED // 20)))
    held = b"".join(
        getattr(profile, name).tobytes() for name in Profile.__slots__ if name != "length"
    )
    assert profile.counts([secret]) == {secret: PROFILED // 20}
    assert secret.encode() not in held and b"gate" not in held


def test_profiles_made_by_threads_at_once_count_alike() -> None:
    profiles = Profiles(most=20_000)
    texts = [" ".join(f"t{n % 7}y{i % 90}" for i in range(PROFILED // 3)) for n in range(40)]
    found: list[dict[str, int]] = []

    def read(start: int) -> None:
        for n in range(start, start + 200):
            at = n % len(texts)
            profile = profiles.of(texts[at])
            if profile is not None:
                found.append(profile.counts([f"t{at % 7}y{m}" for m in range(90)]))

    threads = [threading.Thread(target=read, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) > 600 and profiles.size <= 20_000
    assert all(len(counts) == 90 and set(counts.values()) <= {3, 4} for counts in found)


def random_home(index: Index, rng: random.Random, sessions: int) -> None:
    """Sessions of short turns and long ones (their words among filler, function words many
    times over): the long texts of a home that most searches of common words read."""
    items = []
    for session in range(sessions):
        for n in range(1, rng.randint(2, 5)):
            for side in ("user", "reply"):
                size = rng.choice([3, 8, 20, PROFILED // 3, PROFILED // 2, PROFILED])
                vocabulary = rng.choice([WORDS, [w for w in WORDS if w.isascii()]])
                words = rng.choices(vocabulary + FILLER * 2, k=size)
                key = f"s{session}x{rng.randint(0, 10**9)}:{n}:{side}"
                items.append(Item(key, "memory", "private", "said", side, AT, " ".join(words)))
    index.add(items)


@pytest.mark.parametrize("seed", range(3))
def test_a_search_answers_alike_reading_its_long_texts_and_from_their_profiles(
    index: Index, seed: int
) -> None:
    rng = random.Random(seed)
    before = len(PROFILES)
    for _ in range(4):
        random_home(index, rng, 25)  # appended between searches: new rows, new texts
        for _ in range(12):
            found = terms(" ".join(rng.sample(WORDS + FILLER, rng.randint(2, 8))))
            read = [hit.id for hit in search(index, found, 5)]  # each long text read or marked
            assert [hit.id for hit in search(index, found, 5)] == read, found  # profiled
            assert [hit.id for hit in search(index, found, 5)] == read, found  # from profiles
    assert len(PROFILES) > before
