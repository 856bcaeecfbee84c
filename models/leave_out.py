"""Leaving constraint families out of a model, for the binding tests.

A model whose search is not a solver model (closed forms and enumeration: the switch torus,
the dragonfly) lists its constraint families in ``CONSTRAINTS`` and takes a ``leave_out`` set
of their names; its binding tests leave one out at a time
(``tests/families/test_constraint_registries.py``).
"""

from __future__ import annotations

from collections.abc import Mapping


def check_known(leave_out: frozenset[str], registry: Mapping[str, object]) -> None:
    """ValueError naming the names of ``leave_out`` that are no family of ``registry``."""
    unknown = leave_out - registry.keys()
    if unknown:
        raise ValueError(f"no constraint family {sorted(unknown)}; known: {sorted(registry)}")
