"""A cluster's life: built in phases, of mixed generations, refreshed (``plan_life``)."""

from __future__ import annotations

from planner.life.plan import FamilyLife, LifePlan, plan_life

__all__ = ["FamilyLife", "LifePlan", "plan_life"]
