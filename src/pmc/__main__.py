"""``python -m pmc``."""

from pmc.cli import main

main()
