"""Checks of an instance against the catalog, before anything is built: names, speeds, pins."""

from __future__ import annotations

from planner.errors import InputError
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.schema.workload import Workload


def _known(kind: str, name: str, known: list[str], field: str) -> InputError:
    return InputError(f"{field}: unknown {kind} {name!r}; the catalog has: {', '.join(known)}")


def check_references(inst: Instance, catalog: Catalog) -> None:
    """Every component the instance names exists in the catalog, and the NIC admits the splits."""
    switches = [s.name for s in catalog.switch]
    for name in inst.search.switch_models or []:
        if name not in switches:
            raise _known("switch model", name, switches, "search.switch_models")
    pinned = inst.search.pin.switch_models
    for name in [pinned] if isinstance(pinned, str) else pinned or []:
        if name not in switches:
            raise _known("switch model", name, switches, "search.pin.switch_models")
    nic_name = inst.cluster.nic
    if nic_name is not None:
        nics = {n.name: n for n in catalog.nic}
        if nic_name not in nics:
            raise _known("NIC", nic_name, list(nics), "cluster.nic")
        nic = nics[nic_name]
        if nic.speed_gbps != inst.cluster.nic_gbps:
            raise InputError(
                f"cluster.nic_gbps: {inst.cluster.nic_gbps} but NIC {nic_name} runs at {nic.speed_gbps}"
            )
        bad = [p for p in inst.cluster.nic_ports if p not in nic.port_splits]
        if bad:
            raise InputError(
                f"cluster.nic_ports: NIC {nic_name} splits into {nic.port_splits} ports, not {bad}"
            )
    nics = {n.name: n for n in catalog.nic}
    for name in [] if inst.reliability is None else inst.reliability.nic_models:
        if name not in nics:
            raise _known("NIC", name, list(nics), "reliability.nic_models")
        if nics[name].speed_gbps != inst.cluster.nic_gbps:
            raise InputError(
                f"reliability.nic_models: NIC {name} runs at {nics[name].speed_gbps}G, the "
                f"cluster's NICs at {inst.cluster.nic_gbps}G (cluster.nic_gbps)"
            )


def check_scale_up(inst: Instance, catalog: Catalog) -> None:
    """The scale-up switch exists, and its switches carry every GPU's scale-up bandwidth.

    non-blocking:  switches * ports * port_gbps >= gpus * gbps_per_gpu   (per domain, each way)
    """
    spec = inst.cluster.scale_up
    if spec.switch is None:
        if spec.switches is not None:
            raise InputError("cluster.scale_up.switches: given without a scale-up switch model")
        return
    known = [s.name for s in catalog.scale_up_switch]
    if spec.switch not in known:
        raise _known("scale-up switch", spec.switch, known, "cluster.scale_up.switch")
    sw = catalog.scale_up_switch_named(spec.switch)
    count = spec.switches or sw.switches_for(spec.gpus)
    have_gbps, need_gbps = count * sw.ports * sw.port_gbps, spec.gpus * spec.gbps_per_gpu
    if have_gbps < need_gbps:
        raise InputError(
            f"cluster.scale_up: {count} x {spec.switch} give {count * sw.ports} ports of "
            f"{sw.port_gbps:,.0f} Gb/s ({have_gbps:,.0f} Gb/s), fewer than {spec.gpus} GPUs at "
            f"{spec.gbps_per_gpu:,.0f} Gb/s need ({need_gbps:,.0f} Gb/s each way): give more "
            "switches or less bandwidth per GPU"
        )


def check_pins(inst: Instance) -> None:
    """Pinned per-tier lists fit the pinned number of tiers, and a pinned plane count is allowed."""
    pin = inst.search.pin
    if pin.planes is not None and pin.planes not in inst.cluster.nic_ports:
        raise InputError(
            f"search.pin.planes: {pin.planes} is not among cluster.nic_ports {inst.cluster.nic_ports}"
        )
    if pin.tiers is not None:
        if pin.tiers > inst.search.max_tiers:
            raise InputError(
                f"search.pin.tiers: {pin.tiers} exceeds search.max_tiers {inst.search.max_tiers}"
            )
        for name in ("switch_models", "switches", "downlinks"):
            values = getattr(pin, name)
            if isinstance(values, list) and len(values) > pin.tiers:
                raise InputError(f"search.pin.{name}: {len(values)} entries for {pin.tiers} tiers")
        for name in ("uplinks", "parallel_links"):
            values = getattr(pin, name)
            if isinstance(values, list) and len(values) > pin.tiers - 1:
                raise InputError(
                    f"search.pin.{name}: {len(values)} entries, but only {pin.tiers - 1} tiers have uplinks"
                )


def check_workload(inst: Instance) -> None:
    """The workload's parallel degrees occupy exactly the cluster's GPUs, and can be placed.

    tensor x pipeline x data = cluster.gpus, and :func:`check_workload_placement`.
    """
    work = inst.workload
    if work is None:
        return
    par = work.parallelism
    if par.gpus != inst.cluster.gpus:
        raise InputError(
            f"workload.parallelism: tensor x pipeline x data = {par.tensor} x {par.pipeline} x "
            f"{par.data} = {par.gpus:,} GPUs, but cluster.gpus is {inst.cluster.gpus:,}: the "
            "parallel degrees must multiply to the cluster's GPUs"
        )
    c = inst.cluster
    check_workload_placement(
        work, gpus=c.gpus, gpus_per_node=c.gpus_per_node, domain_gpus=c.scale_up.gpus
    )


#: The parallel degree each collective's groups come from, by the collective's name prefix.
DEGREE_OF_PREFIX: tuple[tuple[str, str], ...] = (
    ("edp_", "expert"),
    ("dp_", "data"),
    ("tp_", "tensor"),
    ("pp_", "pipeline"),
    ("ep_", "expert"),
)


def check_workload_placement(
    w: Workload, *, gpus: int, gpus_per_node: int, domain_gpus: int
) -> None:
    """Every collective of the workload's iteration can be placed on the machine.

    The groups are placed as the simulator places them (``planner.sim.traffic_kinds``): pipeline
    stages are whole blocks of nodes, tensor-parallel groups lie inside one scale-up domain,
    same-rail groups take one GPU from each of whole domains. A collective that does not fit
    is refused naming the parallel degree it comes from (``workload.parallelism.<degree>``),
    before any solve, instead of a simulator error.
    """
    from planner.sim.gpu_groups import pipeline_pairs
    from planner.sim.traffic_kinds import ClusterShape, placed_groups
    from planner.workload.step import workload_traffic

    at = ClusterShape(gpus, gpus_per_node, domain_gpus, seed=0)
    par = w.parallelism
    for collective, spec in workload_traffic(w, domain_gpus):
        try:
            if spec.kind == "point_to_point":
                pipeline_pairs(gpus, gpus_per_node, spec.pipeline_stages)
            else:
                placed_groups(spec, at)
        except ValueError as exc:
            degree = next(d for p, d in DEGREE_OF_PREFIX if collective.name.startswith(p))
            raise InputError(
                f"workload.parallelism.{degree}: {collective.name} cannot be placed with "
                f"{degree} ({getattr(par, degree)}) on {gpus:,} GPUs ({gpus // gpus_per_node:,} "
                f"nodes of {gpus_per_node}, scale-up domains of {domain_gpus}): {exc}; choose "
                "parallel degrees that divide "
                "the machine (pipeline stages are whole blocks of nodes, a tensor-parallel group "
                "lies in one scale-up domain)"
            ) from None


def check_idle_pricing(inst: Instance) -> None:
    """Idle GPU time is priced only where there is a workload to time and a loop to run it in.

    ``objective.idle_gpu_weight > 0`` needs a ``[workload]`` (its step gives the idle fraction)
    and excludes ``search.until_verified`` (the priced search already prefers designs that meet
    ``[verify]``, ``planner.idle_pricing``).
    """
    if inst.objective.idle_gpu_weight <= 0:
        return
    if inst.workload is None:
        raise InputError(
            f"objective.idle_gpu_weight = {inst.objective.idle_gpu_weight}: idle GPU time is "
            "priced from the step of a [workload]; add one, or set the weight to 0"
        )
    if inst.search.until_verified:
        raise InputError(
            "objective.idle_gpu_weight and search.until_verified: choose one (the priced search "
            "walks the allowed ratios itself and prefers the designs that meet [verify])"
        )


def check_run(inst: Instance, verifying: bool) -> None:
    """The run's settings against the instance: idle GPU time is priced from the simulation.

    ``objective.idle_gpu_weight > 0`` needs the design verified: ``verifying`` is whether this
    run simulates it (``--no-verify``, ``verify.enabled`` or the API's ``verify`` resolved).
    """
    if inst.objective.idle_gpu_weight > 0 and not verifying:
        raise InputError(
            "objective.idle_gpu_weight prices idle GPU time, which the simulation measures: "
            "plan with verification on (not --no-verify, verify.enabled = true), or set the "
            "weight to 0"
        )


def check_instance(inst: Instance, catalog: Catalog) -> None:
    """All cheap checks; raises InputError on the first problem."""
    check_references(inst, catalog)
    check_scale_up(inst, catalog)
    check_pins(inst)
    check_workload(inst)
    check_idle_pricing(inst)
