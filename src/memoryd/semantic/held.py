"""The vectors a daemon holds in memory, read from the index as they are written, and the
items nearest to a query among them (each vector's dot product with the query).

The worker reads them (`Held.refresh`) into a `Snapshot` that is never changed: a recall
searches the one it finds, with no lock, while the next is read.

Held in blocks of at most `BLOCK` vectors: new ones are a block of their own (no copy of the
others), merged into their neighbours' once more than `BLOCKS` are not full; a query is scored
`SCORED` rows at a time, each slice's int8 turned to float32 as it is (never the whole matrix).

Past `APPROXIMATE` vectors, the search is approximate: the worker puts the vectors in the lists
of an inverted file (`ivf.Partition`), and a query is compared with those of its nearest lists
only, and exactly with the vectors read since (fewer than `RECENT`, in blocks), so a new item is
found at once. Below it, every vector is compared, as a small home always was.
"""

from __future__ import annotations

import mmap
import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memoryd.index.db import Index
from memoryd.labels import DataClass
from memoryd.semantic import ivf, store

SCALE = 127.0
"""An int8 component is the float one times this, rounded."""

BLOCK = 65_536
"""The most vectors in one block of those held."""

SCORED = 4_096
"""The rows scored in one product: 6 MB of float32 at 384 components, which stays in the
cache (100k vectors scored in 6.5 ms a query in slices of 4,096, 47 ms in slices of 65,536)."""

BLOCKS = 16
"""The most blocks smaller than `BLOCK` held before they are merged."""

APPROXIMATE = 200_000
"""The vectors held from which the search is approximate (decisions.md, "An approximate search
for the semantic tier": below it the exact search costs a few milliseconds)."""

RECENT = 16_384
"""The most vectors read since the partition was made that are compared exactly; past them, the
next refresh puts them in their lists."""

_CLASS = {c.value: n for n, c in enumerate(DataClass)}


def quantised(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    """Each normalised vector as the int8 bytes the index keeps."""
    rounded = np.clip(np.rint(vectors * SCALE), -127, 127).astype(np.int8)
    return [row.tobytes() for row in rounded]


@dataclass
class _Block:
    ids: npt.NDArray[np.int64]
    classes: npt.NDArray[np.int8]
    vectors: npt.NDArray[np.int8]


@dataclass(frozen=True)
class Snapshot:
    """The vectors held as one refresh left them: never changed, so a recall reads them with
    no lock while the worker reads the next ones."""

    generation: tuple[int, int] | None = None
    """The index's `store.generation` when they were read (None: never read)."""
    blocks: tuple[_Block, ...] = ()
    """The vectors compared exactly (with a partition: those read since it was made)."""
    partition: ivf.Partition | None = None
    """The vectors searched approximately, in lists (None: every vector is in `blocks`)."""

    def __len__(self) -> int:
        return sum(len(b.ids) for b in self.blocks) + len(self.partition or ())

    def nearest(
        self,
        query: npt.NDArray[np.float32],
        n: int,
        highest: DataClass | None,
        hidden: frozenset[int] = frozenset(),
    ) -> list[tuple[int, float]]:
        """The `n` items most like `query` (with `highest`, of that class or a lower one; never
        the row ids `hidden`), each row id with its cosine similarity, best first; ties by row
        id. Exact, but among the partition's vectors those of the query's nearest lists only."""
        ceiling = None if highest in (None, max(DataClass)) else _CLASS[highest.value]
        left_out = np.fromiter(hidden, np.int64, len(hidden))
        found = [
            _best(b.ids, _scores(b.vectors, query), n, _shown(b.ids, b.classes, ceiling, left_out))
            for b in self.blocks
        ]
        if self.partition is not None:
            found.append(_probed(self.partition, query, n, ceiling, left_out))
        if not found:
            return []
        ids = np.concatenate([f[0] for f in found])
        scores = np.concatenate([f[1] for f in found])
        order = np.lexsort((ids, -scores))[:n]
        return [(int(ids[i]), float(scores[i])) for i in order]

    def similarity(self, query: npt.NDArray[np.float32], ids: list[int]) -> dict[int, float]:
        """The cosine similarity to `query` of each of the items `ids` that has a vector."""
        wanted = np.asarray(ids, dtype=np.int64)
        held = [(b.ids, b.vectors, np.nonzero(np.isin(b.ids, wanted))[0]) for b in self.blocks]
        if self.partition is not None and len(wanted):
            p = self.partition
            held.append((p.ids, p.vectors, p.found(wanted)))
        found: dict[int, float] = {}
        for row_ids, vectors, rows in held:
            if len(rows):
                scores = _scores(vectors[rows], query)
                found.update(zip(row_ids[rows].tolist(), scores.tolist(), strict=True))
        return found


@dataclass
class Held:
    """The vectors of one model, as the index last had them: `now`, replaced whole by each
    refresh (the worker's), read by recalls as it is."""

    model: str
    dimensions: int
    approximate_from: int = APPROXIMATE
    """The vectors held from which the search is approximate."""
    recent: int = RECENT
    """The most vectors compared exactly beside the partition."""
    now: Snapshot = field(default_factory=Snapshot)
    _seq: int = 0
    _refreshing: threading.Lock = field(default_factory=threading.Lock)

    def __len__(self) -> int:
        return len(self.now)

    def refresh(self, index: Index) -> None:
        """Read the vectors written since the last refresh; all of them again when some were
        deleted or the index's file is another (a reindex's). The vectors held meanwhile stay
        as they were: the new ones replace them at once, when read, and then again once they
        are partitioned (past `approximate_from`), the recalls in between searching them
        exactly."""
        with self._refreshing:
            generation = store.generation(index)
            blocks, seq = list(self.now.blocks), self._seq
            partition = self.now.partition
            if generation != self.now.generation:
                # The partition is made again too: its centroids hold the vectors of items gone.
                blocks, seq, partition = [], 0, None
            rows = store.since(index, self.model, seq)
            blocks += [
                block(rows[start : start + BLOCK], self.dimensions)
                for start in range(0, len(rows), BLOCK)
            ]
            if sum(len(b.ids) < BLOCK for b in blocks) > BLOCKS:
                blocks = _merged(blocks)
            self._seq = rows[-1].seq if rows else seq
            self.now = Snapshot(generation, tuple(blocks), partition)
            if len(self.now) >= max(1, self.approximate_from) and (
                partition is None or len(self.now) - len(partition) > self.recent
            ):
                self.now = partitioned(self.now)


def block(rows: list[store.Row], dimensions: int) -> _Block:
    """The vectors `rows` as one block, in memory of their own (`mapped`)."""
    vectors = mapped(len(rows), dimensions)
    vectors[:] = np.frombuffer(b"".join(r.vector for r in rows), np.int8).reshape(vectors.shape)
    return _Block(
        np.fromiter((r.id for r in rows), np.int64, len(rows)),
        np.fromiter((_CLASS[r.data_class] for r in rows), np.int8, len(rows)),
        vectors,
    )


def mapped(rows: int, dimensions: int) -> npt.NDArray[np.int8]:
    """An int8 matrix in an anonymous map of its own, given back to the system whole when let
    go. From the heap, the blocks a partition replaced stayed the process's: glibc keeps freed
    chunks under 32 MB once a larger one was freed (at 1M vectors, 1,274 MB of RSS against 864
    read, and 474 against 418 in a process that had freed none; decisions.md)."""
    if not rows * dimensions:
        return np.empty((rows, dimensions), dtype=np.int8)
    return np.frombuffer(mmap.mmap(-1, rows * dimensions), np.int8).reshape(rows, dimensions)


def partitioned(held: Snapshot) -> Snapshot:
    """`held` with every vector in the lists of a partition: the one held (the new vectors put in
    their lists), or one made anew when there is none or it was made for less than half as
    many vectors."""
    old = held.partition
    parts: list[ivf.Part] = [(b.ids, b.classes, b.vectors) for b in held.blocks]
    labels: list[npt.NDArray[np.int32] | None] = [None] * len(parts)
    if old is not None:
        parts.insert(0, (old.ids, old.classes, old.vectors))
        labels.insert(0, old.labels())
    if old is None or len(held) > 2 * old.trained_on:
        centroids, trained_on = ivf.trained(parts, ivf.lists_for(len(held))), len(held)
        labels = [None] * len(parts)
    else:
        centroids, trained_on = old.centroids, old.trained_on
    return Snapshot(held.generation, (), ivf.Partition.of(centroids, trained_on, parts, labels))


def _shown(
    ids: npt.NDArray[np.int64],
    classes: npt.NDArray[np.int8],
    ceiling: int | None,
    left_out: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_] | None:
    """Which rows a recall may show: none of a class above `ceiling`, none of the row ids
    `left_out` (None: every row)."""
    if ceiling is None and not len(left_out):
        return None
    shown = np.ones(len(ids), dtype=np.bool_) if ceiling is None else classes <= ceiling
    if len(left_out):
        shown &= ~np.isin(ids, left_out)
    return shown


def _best(
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float32],
    n: int,
    shown: npt.NDArray[np.bool_] | None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The (at most) `n` best of the rows scored that a recall may show (`shown`, as `_shown`
    gives it), in no order."""
    if shown is not None:
        scores[~shown] = -np.inf
    take = min(n, len(scores))
    chosen = np.argpartition(-scores, take - 1)[:take] if take else np.empty(0, np.int64)
    chosen = chosen[np.isfinite(scores[chosen])]
    return ids[chosen], scores[chosen]


def _probed(
    partition: ivf.Partition,
    query: npt.NDArray[np.float32],
    n: int,
    ceiling: int | None,
    left_out: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The (at most) `n` best of the vectors of the query's nearest lists (`ivf.probes`); of
    twice as many lists, and so on, while fewer than `n` of them may be shown."""
    order = partition.probed(query)
    ids: list[npt.NDArray[np.int64]] = []
    scores: list[npt.NDArray[np.float32]] = []
    # Each list's mask, made once: it counts the rows that may be shown, then hides the others.
    masks: list[npt.NDArray[np.bool_]] = []
    done, upto, allowed = 0, ivf.probes(len(order)), 0
    while done < len(order) and allowed < n:
        for at in order[done:upto]:
            start, end = partition.starts[at], partition.starts[at + 1]
            ids.append(partition.ids[start:end])
            scores.append(_scores(partition.vectors[start:end], query))
            shown = _shown(ids[-1], partition.classes[start:end], ceiling, left_out)
            if shown is None:
                allowed += end - start
            else:
                masks.append(shown)
                allowed += int(np.count_nonzero(shown))
        done, upto = upto, 2 * upto
    # `_shown` gives None for every list or for none (it depends on the recall alone).
    mask = np.concatenate(masks) if masks else None
    return _best(np.concatenate(ids), np.concatenate(scores), n, mask)


def _scores(
    vectors: npt.NDArray[np.int8], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each int8 vector's cosine similarity to `query`, `SCORED` rows at a time."""
    found = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), SCORED):
        part = vectors[start : start + SCORED].astype(np.float32)
        found[start : start + SCORED] = part @ query
    found /= np.float32(SCALE)
    return found


def _merged(blocks: list[_Block]) -> list[_Block]:
    """The blocks smaller than `BLOCK` joined, then cut again into blocks of `BLOCK`; the full
    ones as they are (at 1M vectors, a batch's refresh copied all 384 MB of them)."""
    full = [b for b in blocks if len(b.ids) == BLOCK]
    small = [b for b in blocks if len(b.ids) < BLOCK]
    ids = np.concatenate([b.ids for b in small])
    classes = np.concatenate([b.classes for b in small])
    vectors = np.concatenate(
        [b.vectors for b in small], out=mapped(len(ids), small[0].vectors.shape[1])
    )
    return full + [
        _Block(ids[s : s + BLOCK], classes[s : s + BLOCK], vectors[s : s + BLOCK])
        for s in range(0, len(ids), BLOCK)
    ]
