"""Defaults the command line shows before anything heavy loads: its ``--help`` reads them.

The schema, the loader and the API take them from here, so there is one of each.
"""

from __future__ import annotations

#: Default time limit of a whole command (search, engineering, verification), in seconds.
DEFAULT_TIME_LIMIT_S = 60.0
#: The catalog shipped with the package, by the name an instance or ``--catalog`` gives it.
DEFAULT_CATALOG = "default"
