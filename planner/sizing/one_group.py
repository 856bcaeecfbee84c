"""Model data of a family of one switch group (a torus, a dragonfly): switches, media and floor.

Such a family sizes with its own model over one tier of packet switches; what it reads of the
instance and the catalog is the same for every such family, so it is read here once: the allowed
switches at the plane's port speed (each with its ports' radix, cost, power, latency and the cage
or co-packaged engine its links end in), the media at that speed, and the floor plan the cable
lengths come from.
"""

from __future__ import annotations

from models import cabling as cb
from models import torus_fabric as tf
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sizing.problems import (
    allowed_media,
    allowed_switches,
    engine_of,
    medium_option,
    nic_of,
)


def switch_choices(
    inst: Instance, catalog: Catalog, speed_gbps: int, switch_model: str | None
) -> tuple[tf.SwitchChoice, ...]:
    """The switches a plane at ``speed_gbps`` may use (one model when ``switch_model`` is given).

    A switch must run that port speed, speak the NIC's protocol and agree with the instance's pin
    of the first tier (``search.pin.switch_models``).
    """
    nic = nic_of(inst, catalog)
    pinned = inst.search.pin.model_for(1)
    choices = []
    for s in allowed_switches(inst, catalog):
        radix = s.radix_at(speed_gbps)
        if radix is None or (nic is not None and s.protocol not in nic.protocols):
            continue
        if switch_model not in (None, s.name) or pinned not in (None, s.name):
            continue
        choices.append(
            tf.SwitchChoice(s.name, radix, s.cost_usd, s.power_w, s.latency_ns, engine_of(s))
        )
    return tuple(choices)


def media_options(inst: Instance, catalog: Catalog, speed_gbps: int) -> tuple[cb.MediumOption, ...]:
    """The allowed media at the plane's port speed, as the cabling model reads them."""
    return tuple(
        medium_option(m) for m in allowed_media(inst, catalog) if m.speed_gbps == speed_gbps
    )


def floor_of(inst: Instance) -> tf.Floor:
    """The floor plan the cable lengths come from: racks, rows and the cable run rule."""
    cl, lay = inst.cluster, inst.layout
    return tf.Floor(
        gpus_per_rack=lay.nodes_per_rack * cl.gpus_per_node,
        racks_per_row=lay.racks_per_row,
        rack_width_m=lay.rack_width_m,
        row_pitch_m=lay.row_pitch_m,
        in_rack_m=lay.in_rack_cable_m,
        slack_m=lay.cable_slack_m,
        run_factor=1.0 + lay.routing_overhead,
    )


def failure_fraction(inst: Instance) -> float | None:
    """The bandwidth a plane must keep after a switch failure, None when none is required."""
    survive = inst.constraints.survive
    if survive is None or survive.switch_failures <= 0:
        return None
    return survive.min_bandwidth_fraction
