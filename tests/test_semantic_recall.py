"""The semantic tier's recall path (issue 27): a recall never waits for the model's load nor for
the worker's batch, reads no vector itself, never fuses vectors of items that are gone, keeps
the hidden turn out of the tier's own nearest, and the encoder serves two threads at once. The
daemon on its socket and the real all-MiniLM-L6-v2 from its package.
"""

from __future__ import annotations

import errno
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd import answering
from memoryd.home import Home
from memoryd.labels import DataClass
from memoryd.semantic import models, store, worker
from memoryd.semantic.held import _CLASS, BLOCK, Snapshot, _Block, _merged, quantised
from memoryd.semantic.tier import NEAREST
from memoryd.serve.service import Service
from test_semantic import ON, TURNS, embedded, hiking_forgotten, served, written
from test_serve_daemon import Daemon, until

ADOPTION = TURNS[0][0]


def installed() -> Path:
    """The folder of the installed all-MiniLM-L6-v2."""
    return models.find("all-MiniLM-L6-v2").folder


def held_at_load(home: Home) -> Path:
    """A model folder the owner names: MiniLM's files, but its `sentence_bert_config.json` a
    FIFO, so that the worker's load of the model waits until the test writes it; the FIFO."""
    folder = home.root.parent / "held-model"
    folder.mkdir()
    for name in models.FILES:
        (folder / name).symlink_to(installed() / name)
    fifo = folder / "sentence_bert_config.json"
    os.mkfifo(fifo)
    home.config.write_text(f'[semantic]\nenabled = true\nmodel = "{folder}"\n')
    return fifo


def release(fifo: Path) -> bool:
    """Let the load waiting on `fifo` go on; False when nothing reads it yet."""
    try:
        out = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return False
        raise
    with os.fdopen(out, "w") as f:
        f.write('{"max_seq_length": 256, "do_lower_case": false}')
    return True


def test_a_recall_answers_lexically_while_the_model_loads(home: Home) -> None:
    written(home, config=None)
    queries = ["adoption", "E4521", "hiking mountains", "orphanage paperwork"]
    plain = Service.open(home)
    lexical = [plain.begin_recall(q, 5, None)().text for q in queries]
    plain.close()
    fifo = held_at_load(home)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as c:
            answers = [c.post("/v1/recall", json={"query": q}).json()["text"] for q in queries]
            semantic = c.get("/v1/status").json()["semantic"]
            # Every answer came while the load waited: nothing was released before them.
            assert answers == lexical
            assert (semantic["embedded"], semantic["pending"]) == (0, 6), semantic
            assert "error" not in semantic
            assert until(lambda: release(fifo), 60), daemon.output()

            def caught_up() -> bool:
                return bool(c.get("/v1/status").json()["semantic"]["pending"] == 0)

            assert until(caught_up, 120), daemon.output()
            meant = c.post("/v1/recall", json={"query": "orphanage paperwork"}).json()["text"]
        assert ADOPTION in meant
    finally:
        release(fifo)
        daemon.stop()


# 320 items of some 60 tokens, in five batches of the worker's 64: a batch takes seconds of the
# model's work, a recall's query a few milliseconds.
FILLER = (
    "we talked about the garden the weather the neighbours the long drive home the price of "
    "bread and whether the old bridge would ever be repaired before the winter came back"
)
MANY = 160


def test_a_recall_answers_between_two_batches_of_the_worker(home: Home) -> None:
    home.config.write_text(ON)
    records = [r for text, reply in TURNS for r in turn(text, reply)]
    for n in range(MANY - len(TURNS)):
        records += turn(f"note {n} {FILLER}", f"reply {n} {FILLER}")
    write_log(home, "s1", records)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as c:

            def embedded_now() -> int:
                return int(c.get("/v1/status").json()["semantic"]["embedded"])

            # The first batch holds the three turns (the lowest row ids): then the worker is on
            # the next batch, with the model loaded.
            assert until(lambda: embedded_now() > 0, 120), daemon.output()
            before = embedded_now()
            answers = [
                c.post("/v1/recall", json={"query": q, "session": "s1"}).json()["text"]
                for q in ["E4521", "orphanage paperwork", "hiking mountains", "E4521 cache"] * 2
            ]
            after = embedded_now()
        # Eight recalls answered while at most one batch was stored: none waited for one.
        assert after - before <= worker.BATCH, (before, after)
        assert after < 2 * MANY
        assert answers[0].splitlines()[1].strip() == TURNS[1][0]
        assert ADOPTION in answers[1]
        assert TURNS[2][0] in answers[2]
    finally:
        daemon.stop()


def test_a_recall_reads_no_vector_and_fuses_none_of_an_item_gone(home: Home) -> None:
    service = served(home)
    tier = service.semantic
    assert tier is not None
    hiking = TURNS[2][0]
    assert hiking in service.begin_recall("hiking mountains", 5, None)().text
    # The vectors held under the boiler's row ids are the hiking turn's.
    gone = hiking_forgotten(home, service)
    index = service.indexes.index
    held = tier.held.now
    assert gone <= {int(i) for block in held.blocks for i in block.ids}
    tier.due.clear()
    answer = service.begin_recall("hiking mountains", 5, None)().text
    assert "boiler" not in answer and hiking not in answer, answer
    assert tier.held.now is held  # the recall read no vector: the worker is asked to
    assert tier.due.is_set()
    worker.held(service, tier)
    assert tier.held.now.generation == store.generation(index)
    assert "boiler" not in service.begin_recall("hiking mountains", 5, None)().text
    assert embedded(service) == 6
    assert ADOPTION in service.begin_recall("orphanage paperwork", 5, None)().text
    service.close()


def test_a_hidden_item_takes_no_place_among_the_tiers_nearest(home: Home) -> None:
    # 25 items of other words, and the waiting message: the nearest of all to the query.
    for n in range(12):
        write_log(home, f"s{n + 10}", turn(f"topic {n}: recipes for soup number {n}", f"ok {n}"))
    written(home)
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    waiting = "orphanage paperwork for the little one, still unsigned"
    write_log(home, "s4", [{"type": "user", "text": waiting, "at": now}])
    service = Service.open(home)
    embedded(service)
    tier = service.semantic
    assert tier is not None
    index = service.indexes.index
    query = "orphanage paperwork unsigned"
    hidden = answering.hidden(index, "s4", datetime.now(UTC), 3600)
    assert hidden == {"s4:1:user"}
    fusing = tier.fusing(index, query, None, hidden)
    nearest = [i for i, _ in fusing.nearest()]
    assert len(nearest) == NEAREST  # the hidden one took none of the nearest's places
    assert index.by_keys(sorted(hidden))[0].id not in nearest
    assert waiting not in [hit.item.text for hit in fusing.fused([], NEAREST)]
    unhidden = tier.fusing(index, query, None, frozenset()).fused([], 5)
    assert waiting in [hit.item.text for hit in unhidden]
    assert waiting not in service.begin_recall(query, 5, "s4")().text
    service.close()


def test_the_encoder_used_from_two_threads_at_once_gives_what_it_gives_alone(home: Home) -> None:
    written(home)
    service = Service.open(home)
    tier = service.semantic
    assert tier is not None
    encoder = tier.loaded()
    batch = [f"{FILLER} {n}" for n in range(8)]
    queries = [text for text, _ in TURNS] + ["orphanage paperwork", "E4521"]
    alone_batch, alone_queries = encoder.embed(batch), encoder.embed(queries)
    found: list[np.ndarray] = []
    worker_thread = threading.Thread(target=lambda: found.append(encoder.embed(batch)))
    worker_thread.start()
    together = [encoder.embed([q])[0] for q in queries * 3]
    worker_thread.join()
    np.testing.assert_allclose(found[0], alone_batch, atol=1e-5)
    np.testing.assert_allclose(np.array(together), np.tile(alone_queries, (3, 1)), atol=1e-5)
    service.close()


# --- the vectors held: their nearest, exact -----------------------------------------------


def exact(
    vectors: np.ndarray,
    classes: list[DataClass],
    query: np.ndarray,
    n: int,
    highest: DataClass | None,
    hidden: frozenset[int],
) -> list[int]:
    """The row ids (from 1) of the `n` int8 vectors most like `query`, by a plain float64 dot
    product over those allowed; ties by row id."""
    scores = vectors.astype(np.float64) @ query.astype(np.float64)
    allowed = [
        i
        for i in range(len(vectors))
        if (highest is None or classes[i] <= highest) and i + 1 not in hidden
    ]
    return [i + 1 for i in sorted(allowed, key=lambda i: (-scores[i], i))[:n]]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 300),
    split=st.integers(1, 300),
    highest=st.sampled_from([None, *DataClass]),
    hidden_share=st.floats(0, 0.5),
    n=st.integers(1, 30),
)
def test_the_nearest_held_are_the_exact_nearest_of_those_the_session_may_see(
    seed: int, size: int, split: int, highest: DataClass | None, hidden_share: float, n: int
) -> None:
    rng = np.random.default_rng(seed)
    floats = rng.normal(size=(size, 32)).astype(np.float32)
    floats /= np.linalg.norm(floats, axis=1, keepdims=True)
    vectors = np.frombuffer(b"".join(quantised(floats)), np.int8).reshape(size, 32)
    classes = [list(DataClass)[c] for c in rng.integers(0, len(DataClass), size)]
    hidden = frozenset(int(i) + 1 for i in np.nonzero(rng.random(size) < hidden_share)[0])
    blocks = tuple(
        _Block(
            np.arange(s + 1, min(s + split, size) + 1, dtype=np.int64),
            np.array([_CLASS[c.value] for c in classes[s : s + split]], dtype=np.int8),
            vectors[s : s + split],
        )
        for s in range(0, size, split)
    )
    query = rng.normal(size=32).astype(np.float32)
    query /= np.linalg.norm(query)
    found = Snapshot(None, blocks).nearest(query, n, highest, hidden)
    # Float32 and float64 sums may order two scores within 1e-6 either way: those are ties.
    expected = exact(vectors, classes, query, n, highest, hidden)
    assert len(found) == len(expected)
    scores = vectors.astype(np.float64) @ query.astype(np.float64) / 127
    for (got, similarity), want in zip(found, expected, strict=True):
        assert abs(scores[got - 1] - scores[want - 1]) < 1e-5
        assert abs(similarity - scores[got - 1]) < 1e-5
    assert {i for i, _ in found}.isdisjoint(hidden)
    assert all(highest is None or classes[i - 1] <= highest for i, _ in found)


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.sampled_from([1, 7, 64, 4_000, BLOCK - 1, BLOCK]), max_size=24))
def test_a_merge_keeps_every_vector_and_copies_no_full_block(sizes: list[int]) -> None:
    assume(any(size < BLOCK for size in sizes))  # as `refresh` merges: some block not full
    blocks, start = [], 1
    for size in sizes:
        ids = np.arange(start, start + size, dtype=np.int64)
        start += size
        # Each vector holds its own row id's low bytes: a vector moved from its id would show.
        vectors = np.repeat((ids % 251).astype(np.int8)[:, None], 4, axis=1)
        blocks.append(_Block(ids, np.zeros(size, dtype=np.int8), vectors))
    merged = _merged(blocks)
    full = [b for b in blocks if len(b.ids) == BLOCK]
    assert all(any(m is b for m in merged) for b in full)
    assert sum(len(b.ids) < BLOCK for b in merged) <= 1
    ids = np.concatenate([b.ids for b in merged])
    assert sorted(ids.tolist()) == list(range(1, start))
    for b in merged:
        assert len(b.ids) <= BLOCK
        assert (b.vectors[:, 0] == (b.ids % 251).astype(np.int8)).all()
