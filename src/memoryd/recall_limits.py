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

UNANSWERED_AFTER_S = 1800
"""How long, in seconds from its `at`, a session's last message with no reply yet is taken for
the one its loop is still answering, which its own recall leaves out (`answering`): a turn of
tool calls runs for minutes; a loop that crashed or was closed is no longer answering it."""

UNANSWERED_AFTER_MAX = 7 * 24 * 3600
"""The longest `[recall] unanswered_after_s` may be (a week)."""
