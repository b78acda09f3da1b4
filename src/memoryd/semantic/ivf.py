"""An approximate search of the vectors held, for homes of many (`Held.approximate_from`): the
vectors partitioned into lists, each vector in the list of its nearest centroid (k-means), and a
query scored against the centroids, then exactly against the vectors of its nearest lists only
(a share `PROBED` of them: an inverted file, IVF).

Centroids and lists are derived data, made in memory by the worker from the vectors it already
holds (`Held.refresh`), never on a recall's path; a restart makes them again (decisions.md,
"An approximate search for the semantic tier").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SAMPLE = 40
"""The vectors k-means is trained on, a list (the others are only labelled with their nearest)."""

ROUNDS = 8
"""k-means's rounds: each assigns the sample to its nearest centroids and moves them."""

PROBED = 0.1
"""The share of the lists whose vectors a query is compared with, nearest centroid first."""

SLICE = 4_096
"""The rows turned to float32 and compared with the centroids at once."""

LISTS = 2.0
"""The lists made, for each square root of the vectors' count: at the same share of the vectors
compared, more lists find more of the nearest (decisions.md)."""


def lists_for(size: int) -> int:
    """How many lists `size` vectors are partitioned into (`LISTS`; never more than the
    vectors)."""
    return max(1, min(size, round(LISTS * math.sqrt(size))))


Part = tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.int8]]
"""Vectors held together: their row ids, classes and int8 components."""


def trained(parts: list[Part], lists: int, seed: int = 0) -> npt.NDArray[np.float32]:
    """`lists` unit centroids of the vectors of `parts` by spherical k-means on a sample of
    them (the same vectors give the same centroids)."""
    sizes = np.cumsum([len(p[0]) for p in parts])
    rng = np.random.default_rng(seed)
    size = min(int(sizes[-1]), SAMPLE * lists)
    chosen = np.sort(rng.choice(int(sizes[-1]), size, replace=False))
    where = np.searchsorted(sizes, chosen, side="right")
    sample = np.concatenate(
        [parts[n][2][chosen[where == n] - (sizes[n - 1] if n else 0)] for n in range(len(parts))]
    ).astype(np.float32)
    sample /= np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-12)
    centroids = sample[np.sort(rng.choice(size, min(lists, size), replace=False))]
    for _ in range(ROUNDS):
        labels = nearest_lists(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        # A centroid nothing chose stays where it was (no list is left without one).
        centroids = np.where(norms > 0, sums / np.maximum(norms, 1e-12), centroids)
    return np.ascontiguousarray(centroids, dtype=np.float32)


def nearest_lists(
    vectors: npt.NDArray[np.int8] | npt.NDArray[np.float32], centroids: npt.NDArray[np.float32]
) -> npt.NDArray[np.int32]:
    """Each vector's nearest centroid (the highest dot product; ties the lower list)."""
    found = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), SLICE):
        part = vectors[start : start + SLICE].astype(np.float32)
        found[start : start + SLICE] = np.argmax(part @ centroids.T, axis=1)
    return found


def probes(lists: int) -> int:
    """How many of `lists` lists a query's vectors are compared with (`PROBED` of them)."""
    return min(lists, max(1, math.ceil(PROBED * lists)))


@dataclass(frozen=True)
class Partition:
    """Vectors held in lists: `ids`, `classes` and `vectors` ordered by list, then by row id;
    list `l`'s rows are `starts[l]` to `starts[l + 1]`. Never changed once made."""

    centroids: npt.NDArray[np.float32]
    starts: npt.NDArray[np.int64]
    ids: npt.NDArray[np.int64]
    classes: npt.NDArray[np.int8]
    vectors: npt.NDArray[np.int8]
    trained_on: int
    """How many vectors the centroids were trained for (more than twice as many: trained again)."""
    _sorted_ids: npt.NDArray[np.int64]
    """The row ids in order, where an item's is found by bisection."""
    _by_id: npt.NDArray[np.int64]
    """The row that holds each of `_sorted_ids`."""

    @classmethod
    def of(
        cls,
        centroids: npt.NDArray[np.float32],
        trained_on: int,
        parts: list[Part],
        labels: list[npt.NDArray[np.int32] | None],
    ) -> Partition:
        """The vectors of `parts` put in the list of their nearest of `centroids` (a part's
        `labels` when given: those it is known to be in)."""
        ids = np.concatenate([p[0] for p in parts])
        found = np.concatenate(
            [
                nearest_lists(p[2], centroids) if known is None else known
                for p, known in zip(parts, labels, strict=True)
            ]
        )
        order = np.lexsort((ids, found))
        starts = np.zeros(len(centroids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(found, minlength=len(centroids)), out=starts[1:])
        # Each part's vectors copied once, straight to their rows: no joined copy in between
        # (at 1M vectors, 384 MB).
        row = np.empty(len(ids), dtype=np.int64)
        row[order] = np.arange(len(ids))
        vectors = np.empty((len(ids), parts[0][2].shape[1]), dtype=np.int8)
        at = 0
        for part in parts:
            vectors[row[at : at + len(part[0])]] = part[2]
            at += len(part[0])
        sorted_ids = ids[order]
        by_id = np.argsort(sorted_ids, kind="stable")
        return cls(
            centroids,
            starts,
            sorted_ids,
            np.concatenate([p[1] for p in parts])[order],
            vectors,
            trained_on,
            sorted_ids[by_id],
            by_id,
        )

    def labels(self) -> npt.NDArray[np.int32]:
        """Each row's list."""
        return np.repeat(np.arange(len(self.centroids), dtype=np.int32), np.diff(self.starts))

    def __len__(self) -> int:
        return len(self.ids)

    def probed(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
        """The lists in the order a query looks at them: nearest centroid first, ties the lower
        list."""
        return np.argsort(-(self.centroids @ query), kind="stable")

    def found(self, wanted: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The rows of those of the row ids `wanted` held here."""
        at = np.searchsorted(self._sorted_ids, wanted)
        inside = at < len(self._sorted_ids)
        at, wanted = at[inside], wanted[inside]
        rows: npt.NDArray[np.int64] = self._by_id[at[self._sorted_ids[at] == wanted]]
        return rows
