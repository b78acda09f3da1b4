"""`memoryd service`: the daemon started at login by the user's service manager (a systemd user
unit on Linux, a launchd agent on macOS), written, removed and looked at (docs/service.md)."""
