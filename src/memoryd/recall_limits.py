"""What a recall may ask (SPEC section 5): `k` from 1 to `K_MAX`, a query of at most `QUERY_MAX`
characters. Apart from `recall`, so that the CLI's options, the API's bodies and the tools'
schemas state them without loading the index and the search."""

from __future__ import annotations

K_DEFAULT = 5
"""How many items a recall shows unless told."""

K_MAX = 20
"""The most items a recall shows."""

QUERY_MAX = 500
"""The most characters a query may have."""
