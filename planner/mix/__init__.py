"""A cluster shared by many jobs: placement, fragmentation, interference, the design for the mix.

``planner.mix.plan`` plans each candidate and runs the mix on it (``locality``: a design's
domains and its family's rule; ``schedule``: the queue over time; ``evaluate``: the snapshot's
jobs simulated alone and together; ``report``: the files). This module stays light: the API
checks an instance for a ``[jobs]`` section before anything heavy loads.
"""

from __future__ import annotations

from planner.errors import InputError
from planner.schema.instance import Instance
from planner.schema.jobs import NO_JOBS, Jobs


def jobs_of(inst: Instance) -> Jobs:
    """The instance's [jobs]; an instance without one is bad input for ``mix``."""
    if inst.jobs is None:
        raise InputError(NO_JOBS)
    return inst.jobs
