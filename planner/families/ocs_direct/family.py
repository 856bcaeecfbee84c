"""The OCS direct-connect family: aggregation blocks whose spines go to an OCS layer.

The sizing is the Clos model's three-tier shape with an OCS top tier (``top_ocs``); after the
solve, the circuits are engineered and assigned to devices (``planner.families.ocs_direct.circuits``, ``models/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.families.base import simulated_verify
from planner.families.ocs_direct.tables import ROUTING_DIRECT, ROUTING_WCMP
from planner.wiring import UP_DOWN, parse_up_down

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np
    import numpy.typing as npt
    import polars as pl

    from models import clos_sizing as cs
    from planner.deadline import Deadline
    from planner.design import Design, TierDesign
    from planner.family_roles import DemandOf, PerTier
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation
    from planner.wiring import Wiring

#: The family's name in instances and designs.
OCS_DIRECT = "ocs_direct"
#: Tiers of a direct-connect structure: leaf, spine and the OCS layer.
TIERS = 3
#: Fewest aggregation blocks an OCS layer joins (a circuit runs between two blocks).
MIN_BLOCKS = 2
#: What a comparison says of a direct-connect fabric of one block (``planner.comparisons``).
ONE_BLOCK = "one aggregation block: nothing for an OCS layer to join"


class OneBlock(InputError):
    """A direct-connect design of one aggregation block: there is nothing for its OCS to join."""


def check_blocks(design: Design, inst: Instance) -> None:
    """Refuse a direct-connect design of fewer than ``MIN_BLOCKS`` blocks (pods).

    Raises
    ------
    OneBlock
        Naming ``search.pin.pods`` when the instance pins one pod, else the cluster's GPUs.
    """
    if design.pods >= MIN_BLOCKS:
        return
    why = (
        "search.pin.pods = 1 puts"
        if inst.search.pin.pods is not None
        else f"cluster.gpus ({design.gpus:,}) fit in one block, so the sizing puts"
    )
    raise OneBlock(
        f"search.families: OCS direct-connect ({OCS_DIRECT}) has {ONE_BLOCK}: {why} every GPU "
        f"in one aggregation block (pod), and a circuit joins two blocks; plan the cluster as a "
        'Clos (search.families = ["clos"]), or pin at least 2 pods (search.pin.pods)'
    )


@dataclass(frozen=True)
class OcsDirect:
    """OCS direct-connect: leaf and spine packet tiers, the OCS layer on top."""

    name: str = OCS_DIRECT
    wiring_kind: str = UP_DOWN
    solver_groups: tuple[str, ...] = ("ocs",)

    def read_wiring(self, params: dict[str, Any]) -> Wiring:
        """The up-down wiring (no parameters): the circuits are the design's own table."""
        return parse_up_down(params)

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """One three-tier structure whose top tier is the catalog's OCS devices."""
        if pinned_tiers not in (None, TIERS):
            return []
        from models import cabling as cb
        from models import clos_sizing as cs

        ocs = tuple(
            cs.SwitchOption(
                o.name, o.ports, o.cost_usd, o.power_w, 0, cb.OcsPort(o.insertion_loss_db)
            )
            for o in catalog.ocs
        )
        return [(TIERS, (options, options, ocs))]

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x OCS direct-connect``."""
        return f"{planes} plane{'s' if planes > 1 else ''} x OCS direct-connect"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Leaf, spine and the OCS layer."""
        return ("leaf", "spine", "ocs")

    def circuit_level(self, tiers: int) -> int | None:
        """The top tier."""
        return tiers

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No OCS device for the top tier, or no switch at the port speed below it."""
        if index == TIERS - 1:
            return "optical circuit switch in the catalog"
        return f"allowed switch runs {speed_gbps}G ports"

    def class_note(self, link_class: int, tiers: int) -> str:
        """The spine links run through the OCS."""
        if link_class == TIERS - 1:
            return " through the OCS (duplex optics with the loss budget)"
        return ""

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """The OCS layer as a tier: devices, ports used per device."""
        if ts.level != TIERS:
            return None
        from planner.design import TierDesign

        o = catalog.ocs_named(ts.switch_model)
        return TierDesign(
            level=ts.level,
            role="ocs",
            switch_model=o.name,
            port_speed_gbps=speed_gbps,
            radix=o.ports,
            switches=ts.switches,
            downlinks=ts.downlinks,
            uplinks=0,
            fanout=0,
            parallel_links=0,
            cpo=False,
            unit_cost_usd=o.cost_usd,
            unit_power_w=o.power_w,
            latency_ns=0,
            source=o.source.get("cost_usd", ""),
            ocs=True,
            insertion_loss_db=o.insertion_loss_db,
        )

    def after_solve(
        self, design: Design, inst: Instance, deadline: Deadline, demand_of: DemandOf
    ) -> Design:
        """Engineer the circuits (uniform or the [verify] demand) and assign them to devices.

        A design of one block is refused (:func:`check_blocks`): its OCS layer joins nothing.

        The circuits must exist, so they get what is left of ``deadline`` but at least
        ``planner.deadline.MIN_STEP_S``; what that cuts (the engineering for the demand, the
        generic placement) falls back to the uniform mesh placed whole, noted in the design.
        """
        from dataclasses import replace

        from planner.families.ocs_direct import circuits as ocs

        check_blocks(design, inst)
        if inst.search.ocs_transit:
            design = replace(design, routing=ROUTING_WCMP, routing_hedge=inst.search.ocs_hedge)
        else:
            design = replace(design, routing=ROUTING_DIRECT)
        uniform = inst.search.ocs_demand == "uniform"
        demand = None if uniform else demand_of(design, simulated_verify(inst, design))
        step = deadline.for_step()
        engineered = ocs.engineer(design, demand, deadline=step)
        out = ocs.with_circuits(design, engineered.circuits)
        return replace(out, notes=out.notes + engineered.cut) if engineered.cut else out

    def search_tables(self, design: Design, deadline: Deadline) -> dict[str, pl.DataFrame | None]:
        """The reconfiguration table of the design's circuits; None when the deadline cut it.

        It is not needed for the design to exist, so it is not started once the deadline has
        passed, and is stopped when it passes inside it.
        """
        from planner.deadline import DeadlineExpired
        from planner.families.ocs_direct import circuits as ocs

        if deadline.expired:
            return {"reconfiguration": None}
        try:
            return {"reconfiguration": ocs.reconfiguration_table(design, 0, deadline=deadline)}
        except DeadlineExpired:
            return {"reconfiguration": None}

    def design_tables(self) -> tuple[str, ...]:
        """None shown with the design: its tables come after it."""
        return ()

    def table_titles(self) -> dict[str, str]:
        """Its devices, its circuits, and the circuits after a device fails."""
        return {
            "ocs": "OCS devices",
            "circuits": "OCS circuits",
            "reconfiguration": "After an OCS device fails",
        }

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """The circuits between pods, from ``circuits``."""
        circuits = tables.get("circuits")
        if circuits is None or not len(circuits) or "circuits" not in circuits.columns:
            return []
        return [f"{int(circuits['circuits'].sum()):,} OCS circuits per plane between pods"]

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """The circuits and the OCS devices."""
        from planner.families.ocs_direct.tables import circuits_table, ocs_table

        return {"circuits": circuits_table(design), "ocs": ocs_table(design)}

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """Predicted fraction of ideal of the [verify] block demand on the design's circuits.

        Direct routing: the topology model on direct paths (``circuits.throughput_fraction``).
        WCMP: 1 / the TE LP's busiest circuit utilisation (``wcmp.te_of``), capped at 1.
        """
        from planner.families.ocs_direct import circuits as ocs

        demand = demand_of(design, simulated_verify(inst, design))
        if design.routing != ROUTING_WCMP:
            return ocs.throughput_fraction(design, demand)
        from planner.families.ocs_direct import wcmp

        rates = ocs.demand_gbps(design, demand)
        if not rates.any():
            return 1.0
        te = wcmp.te_of(design, design.circuits, rates, design.routing_hedge)
        return min(1.0, 1.0 / te.max_utilisation) if te.max_utilisation > 0 else 1.0

    def build_fabric(self, design: Design) -> Fabric:
        """WCMP: the merged slices (``wcmp.wcmp_fabric``); direct: circuit pseudo-nodes."""
        if design.routing == ROUTING_WCMP:
            from planner.families.ocs_direct import wcmp

            return wcmp.wcmp_fabric(design, design.routing_hedge)
        return ocs_fabric(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Up-down wiring under one OCS layer on top, and circuits within the cabled ports."""
        from planner.validation import UP_DOWN_STRUCTURE, Violation, check_wiring_kind

        wrong_kind = check_wiring_kind(design, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        ocs = [t.level for t in design.tiers if t.ocs]
        if ocs != [design.num_tiers] or design.num_tiers < 2:
            return [
                Violation(
                    "wiring",
                    "an ocs_direct design tops packet tiers with one OCS tier; this one has OCS "
                    f"tiers at levels {ocs or 'none'}",
                )
            ]
        out = [v for check in UP_DOWN_STRUCTURE for v in check(design)]
        return out + self._check_circuits(design) + self._check_routing(design)

    def _check_routing(self, design: Design) -> list[Violation]:
        """WCMP needs every spine to reach every other block, with the same circuits on each.

        A leaf sprays over all its spines, and the simulator merges the slices
        (``planner.families.ocs_direct.wcmp``): both hold only when every spine has an uplink
        for every other block and every slice carries the same circuits.
        """
        from planner.validation import Violation

        if design.routing != ROUTING_WCMP or not design.circuits:
            return []
        from planner.families.ocs_direct import wcmp
        from planner.families.ocs_direct.tables import layer_of

        layer = layer_of(design)
        out: list[Violation] = []
        if wcmp.spine_uplinks(layer) < layer.blocks - 1:
            out.append(
                Violation(
                    "routing",
                    f"wcmp routing needs every spine to reach the {layer.blocks - 1} other "
                    f"blocks, but a spine has {wcmp.spine_uplinks(layer)} uplinks",
                )
            )
        if wcmp.slice_topology(design.circuits, layer) is None:
            out.append(
                Violation(
                    "routing",
                    "wcmp routing needs the same circuits on every spine's devices; these differ",
                )
            )
        return out

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance of the packet tiers (the tiered checks)."""
        from planner.validation import UP_DOWN_DESIGN

        return [v for check in UP_DOWN_DESIGN for v in check(design)]

    def _check_circuits(self, design: Design) -> list[Violation]:
        """OCS circuits join two different blocks through a device within its cabled ports.

        Every block has the spine tier's ``parallel_links`` ports on every device (the wiring),
        so the circuits of one block through one device never exceed that; each port carries
        one circuit.
        """
        from planner.validation import Violation

        d = design
        out: list[Violation] = []
        blocks, devices = d.pods, d.tiers[-1].switches
        ports = d.tiers[1].parallel_links
        used: dict[tuple[int, int], int] = {}
        for a, b, o, k in d.circuits:
            if not (0 <= a < b < blocks) or not (0 <= o < devices) or k < 1:
                out.append(
                    Violation(
                        "circuits", f"circuit ({a}, {b}) x {k} on device {o} is not a valid one"
                    )
                )
                continue
            for block in (a, b):
                used[block, o] = used.get((block, o), 0) + k
        for (block, o), k in sorted(used.items()):
            if k > ports:
                out.append(
                    Violation(
                        "circuits",
                        f"block {block} has {k} circuits on device {o} but {ports} ports cabled "
                        "to it",
                    )
                )
        return out


def ocs_fabric(design: Design) -> Fabric:
    """The fabric graph of one plane of a direct-connect design.

    The blocks are the pods of a three-tier wiring whose top tier is OCS devices. Device o is
    cabled to spine o // f2 of every block (as a core group would be), so a circuit (a, b, o)
    joins spine (a, o // f2) to spine (b, o // f2). A mirror is not a switch: each circuit
    becomes a pseudo-node of the top tier with one link to each of its two spines, so
    valley-free routing runs spine -> circuit -> spine and every directed link carries one
    direction of one circuit at the circuit's speed.
    """
    import numpy as np

    from planner.families.ocs_direct.bound import ocs_bound
    from planner.sim.fabric import Fabric, NodeKind
    from planner.sim.routing_strategies import UP_DOWN

    leaf, spine, _ = design.tiers
    circuits = [(a, b, o) for a, b, o, k in design.circuits for _ in range(k)]
    counts = [design.gpus, leaf.switches, spine.switches, len(circuits)]
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    gpu = np.arange(design.gpus)
    n1, f1, q1 = leaf.switches, leaf.fanout, leaf.parallel_links
    leaves = np.repeat(np.arange(n1), f1 * q1)
    j = np.tile(np.repeat(np.arange(f1), q1), n1)
    pod = leaves // design.leaves_per_pod
    c = np.asarray(circuits, dtype=np.int64).reshape(-1, 3)
    group = c[:, 2] // spine.fanout
    node = offsets[3] + np.arange(len(circuits))
    lower = np.concatenate(
        [
            gpu,
            offsets[1] + leaves,
            offsets[2] + c[:, 0] * f1 + group,
            offsets[2] + c[:, 1] * f1 + group,
        ]
    )
    upper = np.concatenate(
        [offsets[1] + gpu // leaf.downlinks, offsets[2] + pod * f1 + j, node, node]
    )
    design_class = np.concatenate(
        [np.zeros(gpu.size), np.ones(leaves.size), np.full(2 * len(circuits), 2)]
    ).astype(np.int64)
    gpu_block = gpu // leaf.downlinks // design.leaves_per_pod
    mixed = _mixed_classes(design, design_class, gpu_block, pod, c)
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=float(design.link_speed_gbps),
        tier_offsets=offsets,
        lower=lower.astype(np.int64),
        upper=upper.astype(np.int64),
        link_class=design_class if mixed is None else mixed[0],
        alive=np.ones(2 * lower.size, dtype=bool),
        strategy=UP_DOWN,
        bound=ocs_bound,
        class_speed_gbps=None if mixed is None else mixed[1],
        design_class=None if mixed is None else design_class,
        gpu_speed_gbps=None if mixed is None else mixed[2],
        roles=("gpu", "leaf", "spine", "circuit"),
        circuit_device=c[:, 2].copy(),
        device_role="ocs",
        group_kinds=(NodeKind.GPU, NodeKind.SWITCH, NodeKind.SWITCH, NodeKind.CIRCUIT),
    )


def _mixed_classes(
    design: Design,
    design_class: npt.NDArray[np.int64],
    gpu_block: npt.NDArray[np.int64],
    leaf_block: npt.NDArray[np.int64],
    circuits: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], tuple[float, ...], npt.NDArray[np.float64]] | None:
    """Link classes by (design class, speed) when blocks differ in speed; None when they do not.

    A GPU's link and its leaf's uplinks run at its block's rate; each half of a circuit at its
    slower end's (``Design.block_rate_gbps``). Class 0 stays the fastest GPUs' links (the
    NIC speed ``Fabric.nic_speed_gbps`` reads); returns (link classes, class speeds, each
    GPU's NIC speed).
    """
    import numpy as np

    from planner.sim.fabric import classes_by_speed

    if not design.block_speed_gbps or len(set(design.block_speed_gbps)) == 1:
        return None
    rate = np.asarray(design.block_speed_gbps, dtype=np.float64)
    pair = np.minimum(rate[circuits[:, 0]], rate[circuits[:, 1]])
    speed = np.concatenate([rate[gpu_block], rate[leaf_block], pair, pair])
    link_class, speeds = classes_by_speed(design_class, speed)
    return link_class, speeds, rate[gpu_block]
