"""fabric-planner: an optimisation-based planner for the networks of AI training clusters.

The public API::

    from planner import load_instance, plan

    result = plan(load_instance("instances/h100-1k.toml"))
    result.summary  # a Polars DataFrame

Submodules import each other by full path and never ``from planner import ...``, so this file
forms no import cycle.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it; imported on first use, so that ``python -m planner``
#: can report bad input before the solver libraries load.
_EXPORTS = {
    "Status": "models.status",
    "PlanResult": "planner.api",
    "compare_optics": "planner.api",
    "evaluate": "planner.api",
    "load_instance": "planner.api",
    "plan": "planner.api",
    "simulate": "planner.api",
    "validate": "planner.api",
    "Design": "planner.design",
    "InputError": "planner.errors",
    "Instance": "planner.schema.instance",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
