"""The semantic tier of one home as the daemon runs it: its model (loaded off every request's
path), the vectors it holds, recall's fused order, status's counts.

Until the model is loaded, a recall is lexical; until every item is embedded, a recall fuses
what is (`fusion`): never waiting for either. The vectors a recall searches are those the
worker last read (`Held.now`), never read by the recall itself, and not searched at all once
the index's differ (a forget, a reindex) until the worker has read them again: vectors of
items gone may name row ids that hold other items now.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memoryd.config import SemanticConfig
from memoryd.errors import SemanticError
from memoryd.index.db import Index
from memoryd.index.items import Hit
from memoryd.labels import DataClass
from memoryd.search.ranking import once
from memoryd.semantic import fusion, store
from memoryd.semantic.models import Model, find
from memoryd.text.secrets import redact

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memoryd.semantic.encoder import Encoder
    from memoryd.semantic.held import Held, Snapshot

NEAREST = 20
"""The items most like the query that join the lexical candidates (recall's largest `k`)."""

log = logging.getLogger("memoryd.semantic")


@dataclass
class Tier:
    """The tier switched on for a home: its model found (not yet loaded)."""

    model: Model
    due: threading.Event = field(default_factory=threading.Event)
    """Set after each catch-up: the worker looks for items to embed."""
    error: str | None = None
    """Why the model could not be loaded (status says it; recall is lexical)."""
    _encoder: Encoder | None = None
    _held: Held | None = None

    @classmethod
    def of(cls, config: SemanticConfig | None) -> Tier | None:
        """The tier `[semantic]` switches on, or None when it is off; SemanticError when it is
        on and its extra or model is missing (nothing of the runtime imported yet)."""
        return None if config is None else cls(find(config.model))

    def load(self) -> Encoder:
        """Load the model (a few hundred milliseconds; the worker's, never a request's)."""
        # The tokenizers package can reach Hugging Face's hub; memoryd never asks it to, and
        # this keeps it from trying.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # One BLAS thread a call, read when numpy is first imported (here, in a daemon): the
        # background embedding and a recall's query then each run on a core of their own.
        # With OpenBLAS's own threads, the two queued for them, and on a busy machine its
        # threads' spinning made a query's embedding 20 to 35 times slower (decisions.md).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        from memoryd.semantic.encoder import Encoder
        from memoryd.semantic.held import Held

        encoder = Encoder(self.model.ready())
        self._held = Held(self.model.name, encoder.dimensions)
        self._encoder = encoder
        return encoder

    @property
    def held(self) -> Held:
        """The vectors held in memory (the model loaded first if it is not yet)."""
        self.loaded()
        assert self._held is not None
        return self._held

    def loaded(self) -> Encoder:
        """The model, loaded now if it is not yet."""
        return self._encoder if self._encoder is not None else self.load()

    def fusing(
        self, index: Index, query: str, highest: DataClass | None, hidden: frozenset[str]
    ) -> Fusing:
        """The tier's half of a recall of `query`: items above `highest` and those keyed
        `hidden` never among its own; lexical while the model loads or the vectors are read
        again (the worker is asked to)."""
        encoder, held = self._encoder, self._held
        if encoder is None or held is None:
            return Fusing(index, None)
        vectors = held.now
        if vectors.generation != store.generation(index):
            # Some vectors were deleted, or the index is another: those held may name row ids
            # that now hold other items. Recall stays lexical until the worker reads them again.
            self.due.set()
            return Fusing(index, None)
        left_out = frozenset(hit.id for hit in index.by_keys(sorted(hidden)))
        # A query's secret never reaches the model, as an item's never does.
        return Fusing(index, encoder, redact(query), vectors, highest, left_out)

    def status(self, index: Index) -> dict[str, Any]:
        """`semantic` of status: the model, how many items are embedded and how many wait."""
        found = counts(self.model, index)
        if self.error is not None:
            found["error"] = self.error
        return found


@dataclass(frozen=True)
class Fusing:
    """A recall's semantic half (`Tier.fusing`): the query, the vectors it is compared with,
    what the recall may show of them (no encoder: the recall is lexical)."""

    index: Index
    encoder: Encoder | None
    query: str = ""
    """As the model is given it: redacted."""
    vectors: Snapshot | None = None
    highest: DataClass | None = None
    hidden: frozenset[int] = frozenset()

    @cached_property
    def asked(self) -> npt.NDArray[np.float32]:
        """The query's embedding."""
        assert self.encoder is not None
        found: npt.NDArray[np.float32] = self.encoder.embed([self.query])[0]
        return found

    def nearest(self) -> list[tuple[int, float]]:
        """The items most like the query among those the recall may show, with their
        similarity."""
        if self.encoder is None or self.vectors is None:
            return []
        return self.vectors.nearest(self.asked, NEAREST, self.highest, self.hidden)

    def fused(self, hits: list[Hit], k: int) -> list[Hit]:
        """The `k` best of the lexical `hits` (their order, recall's depth of them) and the
        query's nearest items, by `fusion`; the lexical first `k` when lexical."""
        if self.encoder is None or self.vectors is None:
            return hits[:k]
        similar = dict(self.nearest())
        lexical = [hit.id for hit in hits]
        others = [i for i in lexical if i not in similar]
        similar.update(self.vectors.similarity(self.asked, others))
        order = fusion.fused(lexical, similar)
        known = {hit.id: hit for hit in hits}
        wanted = [i for i in order if i not in known]  # at most `NEAREST`
        allowed = {c.value for c in DataClass if self.highest is None or c <= self.highest}
        for hit in self.index.hits(wanted):
            if hit.item.data_class in allowed:
                known[hit.id] = hit
        # An id not known is an item gone since its vector was read.
        return once((known[i] for i in order if i in known), k)


def counts(model: Model, index: Index) -> dict[str, Any]:
    """The model, how many items have a vector of it and how many wait for one."""
    embedded = store.embedded(index, model.name)
    return {"model": model.name, "embedded": embedded, "pending": max(0, index.count() - embedded)}


def counted(config: SemanticConfig, index: Index) -> dict[str, Any]:
    """`semantic` of `memoryd status` read with no daemon: the counts, or why the tier cannot
    run (its model named as configured)."""
    try:
        model = find(config.model)
    except SemanticError as e:
        return {"model": config.model, "error": str(e)}
    return counts(model, index)
