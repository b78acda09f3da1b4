"""A long text holds the query's words, for recall's tiers, as far as one passage of it does
(`ranking.PASSAGE`): a message of thousands of words holds most words of any query somewhere."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.search.parts import search, terms
from memoryd.search.ranking import PASSAGE, Query, score
from memoryd.text.stems import stem

WORDS = ["blue", "kayak", "mill", "harbour"]
QUERY = Query.of([*WORDS, "the"], WORDS)
IDF = {s: 1.0 for s in QUERY.stems}


def apart(words: list[str], n: int) -> str:
    """A text of `words`, each a passage and more from the next, among filler words."""
    filler = " ".join(f"f{n}x{i}" for i in range(PASSAGE // 5))
    return f" {filler} ".join(words)


def test_a_long_text_holding_every_word_far_apart_holds_them_as_one_passage_does() -> None:
    held, whole, _ = score(apart(["blue kayak", "mill", "harbour the"], 0), QUERY, IDF, 10.0)
    assert (held, whole) == (frozenset({"blue", "kayak"}), False)
    near = apart(["the blue kayak mill harbour", "mill"], 0)
    assert score(near, QUERY, IDF, 10.0)[:2] == (frozenset(WORDS), True)
    # A word is found whole, not inside another.
    inside = apart(["blue kayak mill xharbour harboury", "harbour"], 0)
    assert score(inside, QUERY, IDF, 10.0)[0] == {"blue", "kayak", "mill"}
    # A function word says nothing of what a passage is about: held anywhere, it is held.
    assert score(apart(["blue kayak mill harbour", "the"], 0), QUERY, IDF, 10.0)[1] is True
    assert score(apart(["blue kayak mill harbour", "mill"], 0), QUERY, IDF, 10.0)[1] is False
    # A query of function words alone is about nothing a passage could hold.
    function = Query.of(["the", "of", "was"], ["the", "of", "was"])
    weights = {s: 1.0 for s in function.stems}
    assert score(apart(["the", "of", "was"], 0), function, weights, 10.0)[:2] == (
        frozenset({"the", "of", "wa"}),
        True,
    )
    # Words a passage apart stand in one passage; a character more, they do not.
    gap = "y" * (PASSAGE - len("blue  "))
    assert score(f"blue {gap} kayak", QUERY, IDF, 10.0)[0] == {"blue", "kayak"}
    assert len(score(f"blue {gap}y kayak", QUERY, IDF, 10.0)[0]) == 1
    # A text no longer than a passage holds what it holds anywhere in it.
    short = "blue " + "x" * (PASSAGE - 20) + " harbour"
    assert len(short) <= PASSAGE
    assert score(short, QUERY, IDF, 10.0)[:2] == (frozenset({"blue", "harbour"}), False)


def _best_passage(text: str) -> tuple[int, bool]:
    # Every passage starting at a content word of the query, from the text's own words.
    places: list[tuple[int, str]] = []
    at = 0
    for word in text.split(" "):
        if stem(word) in QUERY.content:
            places.append((at, stem(word)))
        at += len(word) + 1
    most = max(
        (len({w for p, w in places if start <= p <= start + PASSAGE}) for start, _ in places),
        default=0,
    )
    every = {stem(w) for w in text.split(" ")} >= set(QUERY.forms)
    return most, every and most == len(QUERY.content)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*WORDS, "the"]),
            # Other forms of the words, and words holding them whole.
            st.sampled_from(["kayaking", "mills", "theory", "windmill", "bluebell"]),
            # Filler tokens of up to a passage's length: texts of one passage and of several.
            st.integers(1, PASSAGE).map(lambda n: "y" * n),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_passage_is_the_one_holding_the_most_words(words: list[str]) -> None:
    text = " ".join(words)
    held, whole, _ = score(text, QUERY, IDF, 10.0)
    if len(text) <= PASSAGE:
        found = frozenset(stem(w) for w in words) & set(QUERY.forms)
        assert (held, whole) == (found & QUERY.content, found == set(QUERY.forms))
    else:
        assert (len(held), whole) == _best_passage(text)
        assert held <= {stem(w) for w in words}


def test_a_known_item_lacking_one_word_comes_before_long_texts_holding_every_word_apart(
    home: Home, index: Index
) -> None:
    # Three long messages hold every word, each far from the others: without passages they
    # come first, as the only items holding every word.
    for n in range(3):
        write_log(home, f"long{n}", turn(apart(WORDS, n), "-"))
    write_log(home, "target", turn("the blue kayak is moored by the old mill", "-"))
    for n in range(30):
        write_log(home, f"f{n}", turn(f"filler words {n}", "-"))
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    found = [hit.item.key for hit in search(index, terms("blue kayak mill harbour"), 5)]
    assert found[0] == "target:1:user"
