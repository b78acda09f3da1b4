"""The memory files: identity and notes, the check, edits, the write-ahead journal, the block.

`files` parses and renders a file, `check` lists its problems, `journal` writes every change
ahead and recovers after a crash, `edits` decides and makes an edit, `block` renders what the
loop puts in the system prompt, `dropped` turns removed entries into index items, and
`commands` is the CLI's edge.
"""
