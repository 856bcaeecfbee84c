"""``python -m planner``: the same command line as ``fabric-planner``."""

from planner.cli import main

main()
