"""fabric-planner: an optimisation-based planner for the networks of AI training clusters.

The public API::

    from planner import load_instance, plan

    result = plan(load_instance("instances/h100-1k.toml"))
    result.summary  # a Polars DataFrame

Submodules import each other by full path and never ``from planner import ...``, so this file
forms no import cycle.
"""

from __future__ import annotations

from models.status import Status
from planner.api import PlanResult, evaluate, load_instance, plan, validate
from planner.design import Design
from planner.errors import InputError
from planner.schema.instance import Instance

__all__ = [
    "Design",
    "InputError",
    "Instance",
    "PlanResult",
    "Status",
    "evaluate",
    "load_instance",
    "plan",
    "validate",
]
