"""memoryd: the memory of a personal AI agent."""

__version__ = "0.1.0"
