"""`memoryd forget`: the owner makes memoryd forget items, turns, sessions and entries for good."""
