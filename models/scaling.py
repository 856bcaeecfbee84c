"""Integer scaling for CP-SAT, in one place.

CP-SAT works on integers only. Money is carried in cents and power in milliwatts; every
coefficient that enters a CP-SAT model goes through these functions, so the precision of a
reported figure is known: at most half a cent per unit of a variable.
"""

from __future__ import annotations

import math

#: Objective and capex units per US dollar (cents).
UNITS_PER_USD = 100
#: Power units per watt (milliwatts).
UNITS_PER_W = 1000
#: Largest magnitude of one scaled figure (2^53, about 9e15): CP-SAT's coefficients and bounds are
#: 64-bit integers, and sums of many scaled figures must stay within them.
MAX_UNITS = 2**53


def usd_to_units(usd: float) -> int:
    """Dollars to the integer money unit of CP-SAT models; ValueError beyond MAX_UNITS."""
    return _scaled(usd, UNITS_PER_USD, "US dollars")


def w_to_units(power_w: float) -> int:
    """Watts to the integer power unit of CP-SAT models; ValueError beyond MAX_UNITS."""
    return _scaled(power_w, UNITS_PER_W, "watts")


def _scaled(value: float, per: int, unit: str) -> int:
    """``round(value * per)``, refusing what a 64-bit CP-SAT model cannot hold (inf, nan, 1e300)."""
    if not math.isfinite(value) or abs(value) * per > MAX_UNITS:
        raise ValueError(
            f"{value!r} {unit} is beyond what the integer models hold "
            f"(at most {MAX_UNITS / per:.3g} {unit}, finite)"
        )
    return round(value * per)


def units_to_usd(units: float) -> float:
    """Integer money units back to dollars."""
    return units / UNITS_PER_USD


def units_to_w(units: float) -> float:
    """Integer power units back to watts."""
    return units / UNITS_PER_W
