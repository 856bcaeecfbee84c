"""The OCS direct-connect family: aggregation blocks whose spines meet in optical circuit switches.

The package's parts: ``family`` plays the family's roles (the Clos model's three-tier shape with
an OCS top tier, the fabric of circuit pseudo-nodes, the checks), ``circuits`` engineers the
circuits for the demand and assigns them to devices, ``tables`` are its report tables.
"""

from __future__ import annotations

from planner.families.ocs_direct.family import OCS_DIRECT, OcsDirect

__all__ = ["OCS_DIRECT", "OcsDirect"]
