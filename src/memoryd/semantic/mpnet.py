"""What an MPNet encoder (all-mpnet-base-v2) does apart from a BERT one, for `encoder`: its
weights' names, its positions counted from the padding id as RoBERTa's are, and the relative
position bias every layer's attention adds (T5's buckets, both directions, one table shared by
all layers). Pure numpy, as transformers' `modeling_mpnet` computes them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FURTHEST = 128
"""The distance past which every relative position falls in the last bucket of its side."""

_NAMES = (
    ("attention.attn.q.", "attention.self.query."),
    ("attention.attn.k.", "attention.self.key."),
    ("attention.attn.v.", "attention.self.value."),
    ("attention.attn.o.", "attention.output.dense."),
    ("attention.LayerNorm.", "attention.output.LayerNorm."),
)


def renamed(name: str) -> str:
    """The BERT name `encoder`'s forward pass reads for MPNet's weight `name` (the names of
    the layers' feed-forward parts and the embeddings' are the same in both)."""
    for theirs, ours in _NAMES:
        if theirs in name:
            return name.replace(theirs, ours)
    return name


def positions(mask: npt.NDArray[np.float32], padding: int) -> npt.NDArray[np.int64]:
    """Each token's position id: its place among the text's tokens counted from `padding` + 1;
    a padded place's is `padding` (its row is never attended to nor pooled)."""
    held = mask.astype(np.int64)
    found: npt.NDArray[np.int64] = np.cumsum(held, axis=1) * held + padding
    return found


def buckets(length: int, count: int) -> npt.NDArray[np.int64]:
    """The bucket of each (query, key) pair of `length` tokens, `count` buckets in all: half
    for keys before the query, half after; in each half the nearest distances one a bucket,
    the farther ones on a log scale up to `FURTHEST`."""
    places = np.arange(length, dtype=np.int64)
    ahead = places[:, None] - places[None, :]  # the query's place less the key's
    half = count // 2
    found = (ahead < 0).astype(np.int64) * half
    distance = np.abs(ahead)
    exact = half // 2
    # In float32, as the reference computes it: a distance on a bucket's edge (16, 32, 64)
    # falls where the reference's rounding puts it.
    with np.errstate(divide="ignore"):
        scaled = (
            np.log(distance.astype(np.float32) / np.float32(exact))
            / np.float32(np.log(FURTHEST / exact))
            * np.float32(half - exact)
        )
    far = exact + np.where(distance < exact, 0, scaled).astype(np.int64)
    found += np.where(distance < exact, distance, np.minimum(far, half - 1))
    return found


def bias(table: npt.NDArray[np.float32], length: int) -> npt.NDArray[np.float32]:
    """The attention bias of `length` tokens from the shared `table` (buckets by heads): one
    (length by length) matrix a head, added to every layer's scores."""
    found: npt.NDArray[np.float32] = table[buckets(length, table.shape[0])].transpose(2, 0, 1)
    return found
