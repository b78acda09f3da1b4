"""The daemon's background embedding: the model loaded, then every item without a vector of it
embedded, a batch at a time, after each catch-up, until the daemon stops.

The texts are read and embedded with no lock held; the index's writer is held only to write a
batch's vectors (a millisecond or so), so a recall or an append never waits for the model. The
vectors recall searches are read here too, after each batch and whenever the worker wakes (a
forget or a reindex asks it to: `Tier.fusing`), so that no recall reads them. The
thread runs at a lower priority than the request threads: a recall's own work comes first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading

from memoryd.errors import MemorydError
from memoryd.index.store import version
from memoryd.semantic import store
from memoryd.semantic.tier import Tier
from memoryd.serve.service import Service
from memoryd.text import boundary
from memoryd.text.secrets import redact

BATCH = 64
"""Items read and embedded at once."""

IDLE = 30.0
"""How long the worker waits with nothing to embed before it looks again unwoken, in seconds."""

LOOK = 1.0
"""How often the waiting worker asks whether another process wrote the index (`memoryd memory`
beside the daemon indexes its own edit, and tells no catch-up), in seconds."""

NICE = 10
"""How much lower the worker's priority is than the daemon's other threads (Linux)."""

ERROR = 1000
"""The most characters of why the model could not be loaded that status shows."""

log = logging.getLogger("memoryd.semantic")


def texts(batch: list[store.Pending]) -> list[str]:
    """What the model is given of each item: `Speaker: text`, its speaker's name as a header
    shows it and its text as indexed (secrets already removed), redacted again, so that no
    secret reaches the model whatever wrote the item."""
    return [said(item.who, item.text) for item in batch]


def said(who: str, text: str) -> str:
    """An item as the model is given it: with its speaker's name first, a question that names
    the speaker ("What did Caroline research?") finds what they said (all-mpnet-base-v2 on
    LoCoMo: dense R@5 0.24 of the text alone, 0.42 with the name; decisions.md)."""
    name = boundary.name(who)
    return redact(f"{name}: {text}" if name else text)


def embed_pending(service: Service, tier: Tier, after: int = 0) -> int:
    """Embed and store one batch of the items after row id `after` that wait for a vector; the
    last row id read (0 when none waited)."""
    encoder = tier.loaded()
    with service.indexes.guarded():
        index = service.indexes.index
        batch = store.pending(index, tier.model.name, after, BATCH)
    if not batch:
        return 0
    from memoryd.semantic.held import quantised

    vectors = quantised(encoder.embed(texts(batch)))
    with service.indexes.guarded(), service.indexes.writer:
        store.write(service.indexes.index, tier.model.name, zip(batch, vectors, strict=True))
    held(service, tier)
    return batch[-1].id


def held(service: Service, tier: Tier) -> None:
    """Read the vectors written since the tier's last read into those recall searches (all
    of them again after a forget or a reindex): here, never on a recall's path."""
    with service.indexes.guarded():
        tier.held.refresh(service.indexes.index)


def run(service: Service, tier: Tier, stop: threading.Event) -> None:
    """Load the model, then embed what waits whenever a catch-up has run (`Tier.due`), until
    `stop` is set; a failure is logged and looked at again later, the model's load reported in
    status."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux: the same priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    try:
        tier.load()
        with service.indexes.guarded(), service.indexes.writer:
            gone = store.others_removed(service.indexes.index, tier.model.name)
        if gone:
            log.info("the semantic model changed: %d items are embedded again", gone)
    except Exception as e:  # status reports why; recall stays lexical
        # What the model's files made the loader say (a tensor's name, a tokenizer's unknown
        # value) is theirs: one line, no control character, no secret, as status shows it.
        said = f"the model {tier.model.name} could not be loaded: {e}"
        tier.error = boundary.name(said, ERROR)
        log.warning("%s", tier.error)
        return
    after = 0
    while not stop.is_set():
        tier.due.clear()
        try:
            held(service, tier)
            last = embed_pending(service, tier, after)
            if last:
                after = last
                continue
            if after and waiting(service, tier):
                after = 0  # from the start again: an item whose row id was reused waits
                continue
        except MemorydError as e:
            log.warning("embedding: %s", e)
        except Exception:  # the worker must outlive a bug in one batch
            log.exception("embedding failed")
        idle(service, tier, stop)


def idle(service: Service, tier: Tier, stop: threading.Event) -> None:
    """Wait until a catch-up wakes the worker (`Tier.due`), another connection writes the index
    (`store.version`: a PRAGMA each `LOOK`), `IDLE` passes or `stop` is set."""
    seen = _version(service)
    for _ in range(max(1, round(IDLE / LOOK))):
        if tier.due.wait(LOOK) or stop.is_set() or _version(service) != seen:
            return


def _version(service: Service) -> tuple[int, int] | None:
    # None when the index cannot be read now (a reindex's swap, damage): the loop's own look
    # says why, and the worker must not end on it.
    try:
        with service.indexes.guarded():
            return version(service.indexes.index.conn)
    except (MemorydError, sqlite3.Error):
        return None


def waiting(service: Service, tier: Tier) -> bool:
    """Whether some item still has no vector (the counts kept: no scan)."""
    with service.indexes.guarded():
        index = service.indexes.index
        return store.embedded(index, tier.model.name) < index.count()
