"""The simulation's verdict: healthy throughput and single-switch failures against the requirements."""

from __future__ import annotations

import polars as pl

from planner.design import Design
from planner.schema.verify import Verify
from planner.sim.scenarios import Scenario

#: The verdict of a simulation the time limit cut short (and whose finished steps all pass).
INCOMPLETE = "incomplete"


def _min_or_none(column: pl.Series) -> float | None:
    """Least value of a column, None when it is empty."""
    return float(column.to_numpy().min()) if column.len() else None


def required_fractions(verify: Verify) -> dict[str, tuple[float, str]]:
    """Per traffic label, the fraction of ideal it must reach and the field that says so.

    A traffic's own ``min_throughput_fraction`` wins over the section's; two traffics with one
    label must both be met, so the larger requirement stands.
    """
    out: dict[str, tuple[float, str]] = {}
    for i, spec in enumerate(verify.traffic):
        own = spec.min_throughput_fraction is not None
        need = spec.required_fraction(verify.min_throughput_fraction)
        field = (
            f"verify.traffic[{i}].min_throughput_fraction"
            if own
            else "verify.min_throughput_fraction"
        )
        if spec.label not in out or need > out[spec.label][0]:
            out[spec.label] = (need, field)
    return out


def judge(
    design: Design,
    verify: Verify,
    collectives: pl.DataFrame,
    failures: pl.DataFrame,
    single: list[Scenario],
) -> tuple[str, tuple[str, ...], dict[str, float | None]]:
    """The verdict: healthy throughput and single-switch failures against the requirements."""
    reasons = []
    healthy = collectives.filter(pl.col("scenario") == "healthy")
    fractions: dict[str, float | None] = {}
    for routing in ("ecmp", "spray"):
        rows = healthy.filter(pl.col("routing") == routing)
        fractions[f"sim_fraction_{routing}"] = _min_or_none(rows["fraction_of_ideal"])
    required = required_fractions(verify)
    for row in healthy.filter(pl.col("routing") == verify.verdict_routing).iter_rows(named=True):
        need, field = required.get(
            row["pattern"], (verify.min_throughput_fraction, "verify.min_throughput_fraction")
        )
        if row["fraction_of_ideal"] < need * (1 - FRACTION_RTOL):
            reasons.append(
                f"{row['pattern']} under {row['routing']} reaches {row['fraction_of_ideal']:.2f} of ideal, "
                f"below {field} = {need}"
            )
    named = failures.filter(pl.col("trial") == -1)
    fractions["sim_fraction_after_failure"] = _min_or_none(named["fraction_of_healthy"])
    phi = design.requirements.min_fraction_after_failure
    single_names = {s.name for s in single}
    if phi is not None:
        for row in named.filter(pl.col("scenario").is_in(list(single_names))).iter_rows(named=True):
            if row["fraction_of_healthy"] < phi * (1 - FRACTION_RTOL):
                reasons.append(
                    f"with {row['scenario']}, {row['pattern']} keeps {row['fraction_of_healthy']:.2f} of its healthy "
                    f"throughput, below survive.min_bandwidth_fraction = {phi}"
                )
    return ("fails" if reasons else "meets"), tuple(reasons), fractions


#: Relative slack when a simulated fraction is compared with a required one.
FRACTION_RTOL = 1e-6
