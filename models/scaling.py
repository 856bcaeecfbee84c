"""Integer scaling for CP-SAT, in one place.

CP-SAT works on integers only. Money is carried in cents and power in milliwatts; every
coefficient that enters a CP-SAT model goes through these functions, so the precision of a
reported figure is known: at most half a cent per unit of a variable.
"""

from __future__ import annotations

#: Objective and capex units per US dollar (cents).
UNITS_PER_USD = 100
#: Power units per watt (milliwatts).
UNITS_PER_W = 1000


def usd_to_units(usd: float) -> int:
    """Dollars to the integer money unit of CP-SAT models."""
    return round(usd * UNITS_PER_USD)


def w_to_units(power_w: float) -> int:
    """Watts to the integer power unit of CP-SAT models."""
    return round(power_w * UNITS_PER_W)


def units_to_usd(units: float) -> float:
    """Integer money units back to dollars."""
    return units / UNITS_PER_USD


def units_to_w(units: float) -> float:
    """Integer power units back to watts."""
    return units / UNITS_PER_W
