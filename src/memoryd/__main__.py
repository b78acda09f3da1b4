"""`python -m memoryd`: the same as the `memoryd` command."""

from memoryd.cli import main

main()
