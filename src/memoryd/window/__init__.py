"""The owner's window: a few pages, served by the daemon on a loopback listener (docs/window.md)."""
