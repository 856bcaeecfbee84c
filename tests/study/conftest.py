"""A tiny instance and a 100-scenario study of it, planned once in this process (the reference)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from planner.schema.instance import Instance
from planner.study import TIMING_COLUMNS, SerialExecutor, sweep

#: The tiny instance: 64 GPUs of one 400G port each, no named NIC (any speed is allowed).
TINY: dict[str, Any] = {
    "name": "tiny",
    "cluster": {"gpus": 64, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
}
#: 25 x 2 x 2 = 100 scenarios, each planned in about 0.2 s (verification off).
GRID_100: dict[str, list[Any]] = {
    "cluster.gpus": [8 * k for k in range(1, 26)],
    "cluster.nic_gbps": [200, 400],
    "constraints.max_oversubscription": [1.0, 2.0],
}
#: Time limit of each scenario's plan: far above what a tiny one needs.
TIME_LIMIT_S = 30.0


def tiny() -> Instance:
    """The tiny instance."""
    return Instance.model_validate(TINY)


def comparable(df: pl.DataFrame) -> pl.DataFrame:
    """A study table without its wall-clock columns (they differ between two runs)."""
    return df.drop(TIMING_COLUMNS)


@pytest.fixture(scope="session")
def serial_100() -> pl.DataFrame:
    """The 100-scenario study, planned one scenario after the other in this process."""
    return sweep(tiny(), GRID_100, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S)
