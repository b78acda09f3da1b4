"""`python -m memoryd`: the same as the `memoryd` command."""

from memoryd.start import main

main()
