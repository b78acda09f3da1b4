"""The vectors a daemon holds in memory, read from the index as they are written, and the
items nearest to a query among them (every vector's dot product with the query, exact).

The worker reads them (`Held.refresh`) into a `Snapshot` that is never changed: a recall
searches the one it finds, with no lock, while the next is read.

Held in blocks of at most `BLOCK` vectors: new ones are a block of their own (no copy of the
others), merged into their neighbours' once more than `BLOCKS` are not full; a query is scored
`SCORED` rows at a time, each slice's int8 turned to float32 as it is (never the whole matrix).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memoryd.index.db import Index
from memoryd.labels import DataClass
from memoryd.semantic import store

SCALE = 127.0
"""An int8 component is the float one times this, rounded."""

BLOCK = 65_536
"""The most vectors in one block of those held."""

SCORED = 4_096
"""The rows scored in one product: 6 MB of float32 at 384 components, which stays in the
cache (100k vectors scored in 6.5 ms a query in slices of 4,096, 47 ms in slices of 65,536)."""

BLOCKS = 16
"""The most blocks smaller than `BLOCK` held before they are merged."""

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

    def __len__(self) -> int:
        return sum(len(b.ids) for b in self.blocks)

    def nearest(
        self,
        query: npt.NDArray[np.float32],
        n: int,
        highest: DataClass | None,
        hidden: frozenset[int] = frozenset(),
    ) -> list[tuple[int, float]]:
        """The `n` items most like `query` (with `highest`, of that class or a lower one; never
        the row ids `hidden`), each row id with its cosine similarity, best first; ties by row
        id."""
        top = highest is not None and highest != max(DataClass)
        left_out = np.fromiter(hidden, np.int64, len(hidden))
        best_ids: list[npt.NDArray[np.int64]] = []
        best_scores: list[npt.NDArray[np.float32]] = []
        for block in self.blocks:
            scores = _scores(block.vectors, query)
            if top:
                assert highest is not None
                scores[block.classes > _CLASS[highest.value]] = -np.inf
            if len(left_out):
                scores[np.isin(block.ids, left_out)] = -np.inf
            take = min(n, len(scores))
            chosen = np.argpartition(-scores, take - 1)[:take]
            best_ids.append(block.ids[chosen])
            best_scores.append(scores[chosen])
        if not best_ids:
            return []
        ids = np.concatenate(best_ids)
        scores = np.concatenate(best_scores)
        order = np.lexsort((ids, -scores))[:n]
        return [(int(ids[i]), float(scores[i])) for i in order if np.isfinite(scores[i])]

    def similarity(self, query: npt.NDArray[np.float32], ids: list[int]) -> dict[int, float]:
        """The cosine similarity to `query` of each of the items `ids` that has a vector."""
        wanted = np.asarray(ids, dtype=np.int64)
        found: dict[int, float] = {}
        for block in self.blocks:
            rows = np.nonzero(np.isin(block.ids, wanted))[0]
            if len(rows):
                scores = _scores(block.vectors[rows], query)
                found.update(zip(block.ids[rows].tolist(), scores.tolist(), strict=True))
        return found


@dataclass
class Held:
    """The vectors of one model, as the index last had them: `now`, replaced whole by each
    refresh (the worker's), read by recalls as it is."""

    model: str
    dimensions: int
    now: Snapshot = field(default_factory=Snapshot)
    _seq: int = 0
    _refreshing: threading.Lock = field(default_factory=threading.Lock)

    def __len__(self) -> int:
        return len(self.now)

    def refresh(self, index: Index) -> None:
        """Read the vectors written since the last refresh; all of them again when some were
        deleted or the index's file is another (a reindex's). The vectors held meanwhile stay
        as they were: the new ones replace them at once, when read."""
        with self._refreshing:
            generation = store.generation(index)
            blocks, seq = list(self.now.blocks), self._seq
            if generation != self.now.generation:
                blocks, seq = [], 0
            rows = store.since(index, self.model, seq)
            for start in range(0, len(rows), BLOCK):
                part = rows[start : start + BLOCK]
                blocks.append(
                    _Block(
                        np.fromiter((r.id for r in part), np.int64, len(part)),
                        np.fromiter((_CLASS[r.data_class] for r in part), np.int8, len(part)),
                        np.frombuffer(b"".join(r.vector for r in part), np.int8).reshape(
                            len(part), self.dimensions
                        ),
                    )
                )
            if sum(len(b.ids) < BLOCK for b in blocks) > BLOCKS:
                blocks = _merged(blocks)
            self._seq = rows[-1].seq if rows else seq
            self.now = Snapshot(generation, tuple(blocks))


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
    vectors = np.concatenate([b.vectors for b in small])
    return full + [
        _Block(ids[s : s + BLOCK], classes[s : s + BLOCK], vectors[s : s + BLOCK])
        for s in range(0, len(ids), BLOCK)
    ]
