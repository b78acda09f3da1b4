"""Imports made with the cyclic GC off, then frozen out of the GC's sight: module-level objects
live as long as the process. The entry point imports the CLI so (`start`), and the CLI imports a
command's heavy stack so (the server, the MCP SDK)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_imports() -> Iterator[None]:
    """Imports made inside run with the cyclic GC off, and what they made is then frozen out of
    its sight (`gc.freeze`); the GC is on again after."""
    # An import makes objects that live as long as the process (the MCP SDK's builds about 550
    # pydantic models): the GC scanned them again and again while they were made, and its later
    # full collections scanned them all again (docs/architecture.md, "where a user waits").
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
