"""Keep solver chatter off stdout, where ``--json`` and the headline figures go.

HiGHS prints its banner (``Running HiGHS ...``, ``Includes third-party software ...``) straight to
file descriptor 1 the first time a ``highspy.Highs`` object is built in a process, before any
``output_flag`` or PuLP ``msg=False`` can take effect (PuLP's HiGHS adapter sets the flag only
after building the object, ``models/ocs_topology/lp.py`` likewise). It prints it once per process,
so building the first one here with descriptor 1 pointed at /dev/null silences it for good.
"""

from __future__ import annotations

import os
import sys

_done = False


def silence_highs_banner() -> None:
    """Build the process's first HiGHS object with stdout closed, so its banner goes nowhere."""
    global _done
    if _done:
        return
    _done = True
    try:
        import highspy
    except ImportError:  # pragma: no cover - HiGHS is a dependency
        return
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
