"""How a `memoryd` process starts: the CLI imported with the cyclic GC off, then frozen out of
the GC's sight (`frozen`), then run. Nothing of memoryd imports this module but `__main__`: the
entry point is a leaf, and the CLI never reaches back to it."""

from __future__ import annotations

from memoryd.frozen import frozen_imports


def main() -> None:
    """The `memoryd` command: the CLI imported frozen, then run."""
    with frozen_imports():
        from memoryd.cli import main as run
    run()
