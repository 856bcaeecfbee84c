"""The OCS torus family: a TPU-style pod of chip cubes whose faces meet in optical circuit switches.

The package's parts: ``pod`` plans the pod (``fabric-planner torus``: cubes, spares, OCS devices,
slices, circuits, a cube failure) and ``family`` plays the family's roles on it (the ``ocs_torus``
wiring, the design, the fabric of the largest slice, the checks).
"""

from __future__ import annotations

from planner.families.ocs_torus.family import OCS_TORUS, OcsTorus, OcsTorusWiring

__all__ = ["OCS_TORUS", "OcsTorus", "OcsTorusWiring"]
