"""Honcho: the client, deciding which turns to send, the sync state and the worker."""
