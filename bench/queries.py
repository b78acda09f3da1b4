"""Benchmark queries for `bench/recall.py`: deterministic, drawn from the indexed corpus itself.

Every query has 1, 3 or 8 terms (as `memoryd.search.parts.terms` counts them: distinct,
case-insensitive) and one of these kinds:

- `rare`: words held by at most `RARE_SHARE` of the items;
- `mixed`: half common words, half rare or mid-frequency words (one word: a mid-frequency one);
- `common`: words among the `COMMON_TOP` held by the most items (`i`, `the`, `you`, ...);
- `natural`: a question from a template, with a speaker name found in the index and a
  mid-frequency content word ("what did Paul say about the pizza again"); 3 and 8 words;
- `known`: 3 or 8 distinct words of 4+ letters from one message, that message being the answer.

Words are alphabetic ASCII terms from the index's own FTS5 vocabulary (through `fts5vocab`), so
their frequencies are the ones SQLite sees.

Known-item targets: the corpus repeats itself past 133,706 items, each copy differing only in
digits (and in speaker names, which are not in the text), and short chat lines repeat within a
copy too. Every item whose text equals the target's once digits are ignored is counted as a hit
(`same_text`): a ranker given words of 4+ letters cannot tell such copies apart (same words,
same length, same bm25), so demanding one key would measure tie-breaking by row id, not
quality; and keeping only targets with unique text would, at 1M items, keep only messages
holding digits.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from dataclasses import dataclass

from memoryd.search.parts import terms

KINDS = ("rare", "mixed", "common", "natural", "known")
WORDS = (1, 3, 8)

RARE_SHARE = 0.0002
"""A rare word is held by at least one and at most this share of the items (20 per 100k)."""

MID_SHARE = 0.01
"""A mid-frequency word is held by more than `RARE_SHARE` and at most this share of the items."""

COMMON_TOP = 100
"""The common words: this many alphabetic terms held by the most items."""

KNOWN_LETTERS = 4
"""Known-item queries take words of at least this many letters."""

# How many queries each (words, kind) cell gets, relative to the others. Known-item queries get
# twice the weight: they carry the quality figure (R@5). Natural and known-item queries of one
# word make no sense (a one-word "question", a word unique to one message), so there are none.
WEIGHTS: dict[tuple[int, str], int] = {
    (1, "rare"): 1,
    (1, "mixed"): 1,
    (1, "common"): 1,
    (3, "rare"): 1,
    (3, "mixed"): 1,
    (3, "common"): 1,
    (3, "natural"): 1,
    (3, "known"): 2,
    (8, "rare"): 1,
    (8, "mixed"): 1,
    (8, "common"): 1,
    (8, "natural"): 1,
    (8, "known"): 2,
}

# Templates: `{name}` is a speaker, `{word}` a content word. Each gives 3 or 8 terms when the
# name and the word are not among its own words (checked when a query is made).
TEMPLATES: dict[int, tuple[str, ...]] = {
    3: (
        "{name} about {word}?",
        "{name} mentioned {word}",
        "what about {word}?",
        "{name}'s {word}",
        "remember {name} {word}",
    ),
    8: (
        "what did {name} say about the {word} again?",
        "when did {name} and I talk about {word}?",
        "do you remember what {name} thought of {word}",
        "what was that {word} thing {name} told me?",
        "did {name} ever mention {word} to you before?",
    ),
}

_DIGITS = str.maketrans("0123456789", "0000000000")


@dataclass(frozen=True)
class Query:
    """A benchmark query: its text, how many terms it has, its kind, and for a known-item query
    the key of the message it was taken from and that message's text with digits ignored."""

    text: str
    words: int
    kind: str
    key: str | None = None
    target: str | None = None


@dataclass(frozen=True)
class Vocabulary:
    """The index's alphabetic terms by frequency band, and the speakers' names."""

    rare: list[str]
    mid: list[str]
    common: list[str]
    names: list[str]


def same_text(text: str) -> str:
    """A text with every digit made `0`: copies of one corpus message become equal."""
    return text.translate(_DIGITS)


def plan(total: int) -> dict[tuple[int, str], int]:
    """How many queries each (words, kind) cell gets out of `total`, in `WEIGHTS` proportions.

    Largest remainders, so the counts add up to `total` exactly.
    """
    weight = sum(WEIGHTS.values())
    exact = {cell: total * w / weight for cell, w in WEIGHTS.items()}
    counts = {cell: int(share) for cell, share in exact.items()}
    left = total - sum(counts.values())
    by_remainder = sorted(exact, key=lambda cell: counts[cell] - exact[cell])
    for cell in by_remainder[:left]:
        counts[cell] += 1
    return counts


def fts_table(conn: sqlite3.Connection) -> str:
    """The name of the index's FTS5 table of the items' text (whatever the schema calls it;
    the speakers' names have one of their own, of no `text` column)."""
    names = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(sql) LIKE ?",
            ("%using fts5(%",),
        )
        if any(column[1] == "text" for column in conn.execute(f"PRAGMA table_info({row[0]})"))
    ]
    if len(names) != 1:
        raise RuntimeError(f"expected one FTS5 table in the index, found {names}")
    return names[0]


def vocabulary(conn: sqlite3.Connection) -> Vocabulary:
    """The alphabetic ASCII terms of the index by frequency band, and the names of its speakers.

    Document counts come from an `fts5vocab` table over the index's FTS5 table, made in the
    connection's `temp` schema: the index file is not changed.
    """
    items = int(conn.execute("SELECT count(*) FROM items").fetchone()[0])
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.bench_vocab "
        f"USING fts5vocab(main, {fts_table(conn)}, 'row')"
    )
    rows = conn.execute("SELECT term, doc FROM temp.bench_vocab").fetchall()
    words = sorted(
        ((str(term), int(doc)) for term, doc in rows if term.isascii() and term.isalpha()),
        key=lambda row: (-row[1], row[0]),
    )
    common = [term for term, _ in words[:COMMON_TOP]]
    rest = words[COMMON_TOP:]
    rare = [t for t, doc in rest if doc <= RARE_SHARE * items and len(t) >= 3]
    mid = [t for t, doc in rest if RARE_SHARE * items < doc <= MID_SHARE * items and len(t) >= 4]
    names = sorted(
        str(row[0]) for row in conn.execute("SELECT DISTINCT who FROM items WHERE kind = 'said'")
    )
    return Vocabulary(sorted(rare), sorted(mid), common, names)


def _distinct(rng: random.Random, pool: list[str], n: int, taken: set[str]) -> list[str]:
    chosen: list[str] = []
    while len(chosen) < n:
        word = rng.choice(pool)
        if word not in taken:
            taken.add(word)
            chosen.append(word)
    return chosen


def _words_query(rng: random.Random, vocab: Vocabulary, words: int, kind: str) -> Query:
    taken: set[str] = set()
    if kind == "rare":
        chosen = _distinct(rng, vocab.rare, words, taken)
    elif kind == "common":
        chosen = _distinct(rng, vocab.common, words, taken)
    elif words == 1:  # mixed, one word: a mid-frequency word
        chosen = _distinct(rng, vocab.mid, 1, taken)
    else:  # mixed: half common, the other half rare or mid-frequency
        chosen = _distinct(rng, vocab.common, words // 2, taken)
        for _ in range(words - words // 2):
            pool = vocab.rare if rng.random() < 0.5 else vocab.mid
            chosen += _distinct(rng, pool, 1, taken)
        rng.shuffle(chosen)
    return Query(" ".join(chosen), words, kind)


def _natural(rng: random.Random, vocab: Vocabulary, words: int) -> Query:
    while True:
        template = rng.choice(TEMPLATES[words])
        text = template.format(name=rng.choice(vocab.names), word=rng.choice(vocab.mid))
        if len(terms(text)) == words:
            return Query(text, words, "natural")


def _known(
    rng: random.Random,
    conn: sqlite3.Connection,
    items: int,
    words: int,
    wrong: list[str] | None = None,
) -> Query:
    """A known-item query of `words` words from one message; with `wrong`, one of the words is
    instead a word from that pool which the message does not hold."""
    taken = words - 1 if wrong else words
    while True:
        row = conn.execute(
            "SELECT key, text FROM items WHERE id = ?", (rng.randint(1, items),)
        ).fetchone()
        if row is None:
            continue
        key, text = str(row[0]), str(row[1])
        found = terms(text)
        candidates = [t for t in found if len(t) >= KNOWN_LETTERS and t.isascii() and t.isalpha()]
        if len(candidates) < taken:
            continue
        picked = [candidates[i] for i in sorted(rng.sample(range(len(candidates)), taken))]
        if wrong:
            word = rng.choice(wrong)
            if word in {t.casefold() for t in found}:
                continue
            picked.insert(rng.randrange(len(picked) + 1), word)
        query = " ".join(picked)
        if len(terms(query)) == words:
            return Query(query, words, "wrong" if wrong else "known", key, same_text(text))


def make(
    conn: sqlite3.Connection,
    vocab: Vocabulary,
    total: int,
    seed: str,
) -> list[Query]:
    """`total` queries in `plan(total)` proportions, the same for the same index and seed.

    The queries come out shuffled, so no kind runs all at once (while, say, the cache is cold).
    """
    rng = random.Random(seed)
    items = int(conn.execute("SELECT max(id) FROM items").fetchone()[0])
    out: list[Query] = []
    for (words, kind), count in plan(total).items():
        for _ in range(count):
            if kind == "natural":
                out.append(_natural(rng, vocab, words))
            elif kind == "known":
                out.append(_known(rng, conn, items, words))
            else:
                out.append(_words_query(rng, vocab, words, kind))
    rng.shuffle(out)
    return out


def one_wrong(conn: sqlite3.Connection, vocab: Vocabulary, total: int, seed: str) -> list[Query]:
    """Known-item queries with one word wrong, half of 3 words and half of 8: all but one of the
    words come from the target message, one is a mid-frequency word it does not hold.

    No item holds every term of such a query (but by chance), so they measure the part of a
    search that ranks items holding only some of the terms, which exact known-item queries
    never reach: their target always holds every term.
    """
    rng = random.Random(seed)
    items = int(conn.execute("SELECT max(id) FROM items").fetchone()[0])
    return [_known(rng, conn, items, 3 if n % 2 == 0 else 8, vocab.mid) for n in range(total)]


def copies(conn: sqlite3.Connection, queries: list[Query]) -> Counter[str]:
    """How many items hold each known-item target's text (digits ignored): one pass over texts."""
    targets = {q.target for q in queries if q.target is not None}
    lengths = {len(t) for t in targets}
    found: Counter[str] = Counter()
    for (text,) in conn.execute("SELECT text FROM items"):
        if len(text) in lengths:
            normal = same_text(text)
            if normal in targets:
                found[normal] += 1
    return found
