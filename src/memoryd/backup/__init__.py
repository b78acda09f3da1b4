"""Backup, restore and export of a home: one archive file taken while the daemon serves the home
and the loop appends (`archive`), put back into an empty home (`restore`), and the home as JSON
lines for an owner who leaves (`export`). The archive's table of contents is `manifest`."""
