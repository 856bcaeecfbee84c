"""Unit conversions used across the planner: one definition each."""

from __future__ import annotations

#: Bits in a byte.
BITS_PER_BYTE = 8.0
#: Bits in a gigabit (Gb/s figures are decimal, as link speeds are quoted).
BITS_PER_GBIT = 1e9
#: Nanoseconds in a second.
NS_PER_S = 1e9
