"""Damage inside an index file that still opens: the pages a search reads are broken."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def damage_pages(path: Path) -> None:
    """Overwrite the header of every page of the items and their full text, so that the file
    still opens and migrates and every search fails, whatever the page layout. The WAL is folded
    in first and left where it is (a daemon's connections share it)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = [
        n
        for (n,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name IN ('items', 'items_fts_data', 'items_fts_idx')"
        )
    ]
    conn.close()
    assert len(pages) > 5
    with path.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * 4096)
            f.write(b"\xff" * 8)
