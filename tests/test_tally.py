"""`tally`: a search counts each row's tokens of its query once, for every part and the ranking,
and each use scores the row as counting it again would (long texts, forms of one stem, words
inside others, texts that fold to ASCII and texts that do not)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from memoryd.ranking import LENGTH, STEM_ONLY, Query, scored
from memoryd.relevance import LONG, bm25, fold, tokens
from memoryd.stems import stem
from memoryd.stopwords import content
from memoryd.tally import Tallies
from memoryd.weights import Weights

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
    tallies = Tallies(query.sought)
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
    tallies = Tallies(query.sought)
    text = "walking to the tea shop, walks at noon"
    assert tallies.of(1, fold(text)).tokens == {"walking": 1, "walks": 1}
    wider = Weights({"walk": 1.0, "tea": 2.0}, 5.0, tallies)
    assert wider.row_score(1, fold(text), 8) == Weights(wider.idf, 5.0).score(fold(text), 8)
    assert wider.row_score(1, fold(text), 8) > Weights({"walk": 1.0}, 5.0).score(fold(text), 8)


def test_a_row_is_counted_once_a_search() -> None:
    query = Query.of(["walk"], ["walk"])
    tallies = Tallies(query.sought)
    first = tallies.of(7, fold("walk walks"))
    assert tallies.of(7, fold("walk walks")) is first
    assert tallies.of(8, fold("a walk")).tokens == {"walk": 1}
