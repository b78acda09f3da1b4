"""The semantic tier's MPNet forward pass (issue 27): a tiny MPNet of random weights
(`fixtures/mpnet`, written by `bench/mpnet_reference.py fixture` with transformers) embedded as
the reference embeds it, each relative position in the reference's bucket.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memoryd.semantic import mpnet
from memoryd.semantic.encoder import Encoder

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mpnet"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def test_a_tiny_mpnet_embeds_each_text_as_the_reference_does() -> None:
    encoder = Encoder(FIXTURE)
    texts = EXPECTED["texts"]
    expected = np.array(EXPECTED["embeddings"], dtype=np.float32)
    # In one padded batch and one at a time: padding changes nothing a text's vector holds.
    together = encoder.embed(texts)
    alone = np.vstack([encoder.embed([text]) for text in texts])
    assert encoder.dimensions == expected.shape[1]
    for got in (together, alone):
        cosines = (got * expected).sum(1)
        assert cosines.min() >= 0.99999, cosines


def test_the_longest_text_is_past_the_farthest_bucket() -> None:
    encoder = Encoder(FIXTURE)
    longest = max(len(encoder.tokenizer.encode(t).ids) for t in EXPECTED["texts"])
    assert longest > mpnet.FURTHEST


def test_every_relative_position_falls_in_the_references_bucket() -> None:
    distances = EXPECTED["distances"]
    expected = dict(zip(distances, EXPECTED["buckets"], strict=True))
    length = max(distances) + 1
    found = mpnet.buckets(length, 32)
    for query in range(0, length, 7):
        for key in range(length):
            assert found[query, key] == expected[key - query], (query, key)


def test_positions_count_from_past_the_padding_id() -> None:
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=np.float32)
    assert mpnet.positions(mask, 1).tolist() == [[2, 3, 4, 1], [2, 3, 4, 5]]
