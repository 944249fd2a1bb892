"""``python -m core.cli``."""

from core.cli import main

main()
