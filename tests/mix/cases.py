"""Small shared clusters for the job-mix tests: planned fast, mixes that fragment rail-only."""

from __future__ import annotations

from functools import cache
from typing import Any

from planner.schema.instance import Instance

#: 12-GPU jobs take two whole 8-GPU domains on rail-only (4 GPUs held beyond their size each),
#: beside small and whole-node jobs that leave holes as they end.
QUEUE = [12, 4, 12, 8, 12, 4, 12, 16, 12, 4, 12, 8, 12, 4, 12, 32, 12, 4, 12, 8] * 10


def cluster(gpus: int = 512, **jobs: Any) -> dict[str, Any]:
    """An H100-style cluster of ``gpus`` planned as a Clos and as rail-only, with a [jobs] mix."""
    return {
        "name": f"mix-{gpus}",
        "cluster": {
            "gpus": gpus,
            "gpus_per_node": 8,
            "nic_gbps": 400,
            "nic_ports": [1],
            "nic": "connectx-7",
            "scale_up": {"gpus": 8, "gbps_per_gpu": 3600, "switch": "nvswitch-gen3"},
        },
        "layout": {"nodes_per_rack": 4, "racks_per_row": 8},
        "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 5},
        "search": {"families": ["clos", "rail_only"], "switch_models": ["qm9700", "sn5600"]},
        "jobs": {"queue": QUEUE, "routings": ["spray"], "gpu_usd_per_hour": 2.0} | jobs,
    }


@cache
def instance(gpus: int = 512, **jobs: Any) -> Instance:
    """``cluster`` validated (cached: the jobs keyword values must be hashable)."""
    return Instance.model_validate(cluster(gpus, **jobs))


def _value(v: Any) -> str:
    """A TOML value: strings, numbers, booleans, lists and inline tables of them."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    return repr(v)


def toml_text(data: dict[str, Any]) -> str:
    """``data`` (top-level values, then one level of tables) as a TOML file."""
    lines = [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for name, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{name}]", *(f"{k} = {_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"
