"""Honcho: the client, deciding which turns to send, the sync state and the worker, what a
recall reads back from it, a forget there, and the Honcho part of `memoryd status`."""
