"""The session logs (SPEC section 3): their files, lines and records as they are on disk.

`records` makes a log's line a record (or says what damage it is), `sessions` folds records
into turns across epochs with their taint and class, `logfiles` finds a session's epochs and
reads their complete lines from a byte offset, and `lines` is the one bounded reader of the
lines of every file memoryd appends to (the logs, the journal, `forgotten.jsonl`).

Imports the room `memoryd.text` and, of the top level, `memoryd.errors`, `memoryd.home`,
`memoryd.labels` and `memoryd.writers` (which `home` imports) alone: never the index, the
search, nor a command.
"""
