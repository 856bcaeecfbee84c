"""Plan a TPU-style torus pod: cubes, spare cubes, OCS devices, slices, circuits, a cube failure.

The pod is sized for the instance's ``[torus]`` section with ``models.torus_ocs``: enough cubes for
every requested slice at once plus the fewest spares that keep them all composable with the
target probability; one OCS device per (dimension, face position). Each slice is composed from
the healthy cubes (twisted when asked) and checked against the torus it must be, chip by chip.
Then the first cube of the largest slice fails, a spare takes its place, and only the circuits of
that position change. Circuits and checks run on arrays (a million chips in seconds); the checks
run while the command's deadline has not passed, and those it cuts are said. Pricing: the OCS devices, and one optical module and fibre per face link at
the cube end (the OCS end is a mirror), with the cheapest medium that runs through the OCS.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from models import torus_ocs as to
from models.cabling import OcsPort
from models.status import Status
from planner.deadline import NO_DEADLINE, Deadline, cut_note
from planner.errors import InputError
from planner.schema.catalog import Catalog, Medium, Ocs
from planner.schema.instance import Instance, Torus
from planner.sizing import medium_option

POD_SCHEMA = {
    "status": pl.Utf8,
    "cube": pl.Int64,
    "slice_cubes": pl.Int64,
    "spares": pl.Int64,
    "cubes": pl.Int64,
    "chips": pl.Int64,
    "probability": pl.Float64,
    "ocs_model": pl.Utf8,
    "ocs_devices": pl.Int64,
    "ocs_ports": pl.Int64,
    "ocs_ports_used": pl.Int64,
    "face_links": pl.Int64,
    "medium": pl.Utf8,
    "capex_usd": pl.Float64,
    "power_kw": pl.Float64,
    "reason": pl.Utf8,
}
SLICES_SCHEMA = {
    "slice": pl.Int64,
    "shape": pl.Utf8,
    "twisted": pl.Boolean,
    "cubes": pl.Int64,
    "circuits": pl.Int64,
    "torus_ok": pl.Boolean,
}
CIRCUITS_SCHEMA = {
    "slice": pl.Int64,
    "dimension": pl.Utf8,
    "face_position": pl.Int64,
    "plus_cube": pl.Int64,
    "minus_cube": pl.Int64,
}
FAILURE_SCHEMA = {
    "failed_cube": pl.Int64,
    "spare_cube": pl.Int64,
    "circuits_removed": pl.Int64,
    "circuits_added": pl.Int64,
    "circuits_kept": pl.Int64,
    "torus_ok": pl.Boolean,
}


@dataclass(frozen=True)
class TorusPlan:
    """The pod, its slices and circuits, and what a cube failure changes."""

    sizing: to.TorusSizing
    pod: pl.DataFrame
    slices: pl.DataFrame
    circuits: pl.DataFrame
    failure: pl.DataFrame
    cut: tuple[str, ...] = ()
    """What the time limit cut (torus checks not run), as design notes; empty when nothing."""

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """The report tables by file name."""
        return {
            "torus_pod": self.pod,
            "torus_slices": self.slices,
            "torus_circuits": self.circuits,
            "torus_failure": self.failure,
        }


def ocs_of(spec: Torus, catalog: Catalog) -> Ocs:
    """The pod's OCS model: the one the [torus] section names, or the catalog's first."""
    if not catalog.ocs:
        raise InputError("torus: the catalog has no optical circuit switch")
    if spec.ocs is None:
        return catalog.ocs[0]
    try:
        return catalog.ocs_named(spec.ocs)
    except KeyError:
        known = ", ".join(o.name for o in catalog.ocs)
        raise InputError(f"torus.ocs: unknown OCS {spec.ocs!r}; the catalog has {known}") from None


def medium_of(inst: Instance, catalog: Catalog, device: Ocs) -> Medium:
    """The face-link medium: the best for the objective of those that run through the OCS.

    A face link has one module (at the cube; the OCS end is a mirror) and one fibre, so its
    objective cost is capex_weight x (module + fibre) + energy_weight x energy x module power.
    """
    assert inst.torus is not None
    spec, obj = inst.torus, inst.objective
    port = OcsPort(device.insertion_loss_db)
    fits = [
        m
        for m in catalog.medium
        if m.speed_gbps == spec.link_gbps and medium_option(m).passes(port)
    ]
    if not fits:
        raise InputError(
            f"torus.link_gbps: no medium at {spec.link_gbps}G runs through {device.name} "
            "(duplex optics with the loss budget)"
        )
    return min(
        fits,
        key=lambda m: (
            obj.capex_weight * (m.cost_usd_per_end + m.cable_cost_usd)
            + obj.energy_weight * obj.energy_usd_per_w * m.power_w_per_end,
            m.name,
        ),
    )


Rows = list[dict[str, object]]


def compose_slices(cube: int, slices: list[list[int]], twisted: bool) -> tuple[list[to.Slice], int]:
    """Every slice composed first-fit from cubes 0, 1, ... (twisted when asked and possible).

    Returns the slices and the first cube left over (the first spare).
    """
    next_cube, out = 0, []
    for shape in slices:
        need = to.slice_cubes(shape, cube)
        cubes = list(range(next_cube, next_cube + need))
        next_cube += need
        # Only k x k x 2k and k x 2k x 2k shapes have a twisted torus; others stay plain.
        twist = to.tpu_twists(shape) if twisted and to.twistable(shape) else None
        out.append(to.compose_slice(shape, cubes, cube, twist or None))
    return out, next_cube


@dataclass(frozen=True)
class CheckedSlices:
    """The slices composed, their circuits, a cube failure, and what the time limit cut."""

    slices: pl.DataFrame
    circuits: pl.DataFrame
    failure: pl.DataFrame
    cut: tuple[str, ...] = ()
    """Notes (``planner.deadline.cut_note``) on the torus checks not run: ``torus_ok`` is null
    there."""

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """The report tables torus_slices, torus_circuits and torus_failure."""
        return {
            "torus_slices": self.slices,
            "torus_circuits": self.circuits,
            "torus_failure": self.failure,
        }


#: Slice sets checked in full, by (cube, shapes, twisted, spares), the latest last: the sizing
#: and the report's tables ask for the same ones.
_CHECKED: OrderedDict[tuple[int, tuple[tuple[int, ...], ...], bool, int], CheckedSlices] = (
    OrderedDict()
)
#: Slice sets kept in ``_CHECKED`` (a million-chip set holds 196,608 circuit rows).
CHECKED_KEPT = 4


def _circuit_frame(index: int, rows: npt.NDArray[np.int64]) -> pl.DataFrame:
    """One slice's circuits (``models.torus_ocs.circuit_rows``) as torus_circuits rows."""
    return pl.DataFrame(
        {
            "slice": np.full(len(rows), index, dtype=np.int64),
            "dimension": [to.DIMS[d] for d in rows[:, 0].tolist()],
            "face_position": rows[:, 1],
            "plus_cube": rows[:, 2],
            "minus_cube": rows[:, 3],
        },
        schema=CIRCUITS_SCHEMA,
    )


def _kept(old: npt.NDArray[np.int64], new: npt.NDArray[np.int64]) -> int:
    """Circuit rows (unique within each array) present in both."""
    return len(set(map(tuple, old.tolist())) & set(map(tuple, new.tolist())))


def checked_slices(
    cube: int,
    slices: list[list[int]],
    twisted: bool,
    spares: int,
    deadline: Deadline = NO_DEADLINE,
) -> CheckedSlices:
    """The slices, their circuits, and the failure of the largest slice's first cube.

    The failed cube is replaced by the first spare; only the circuits of its position change.
    Every slice, and the slice after the repair, is checked chip by chip against its torus
    (``models.torus_ocs.check_torus``), each check only while ``deadline`` has not passed: a
    check not run leaves ``torus_ok`` null and a note in ``cut``. A set checked in full is kept
    (``_CHECKED``) and served again.
    """
    key = (cube, tuple(tuple(s) for s in slices), twisted, spares)
    if key in _CHECKED:
        _CHECKED.move_to_end(key)
        return _CHECKED[key]
    composed, first_spare = compose_slices(cube, slices, twisted)
    slices_rows: Rows = []
    frames: list[pl.DataFrame] = []
    failure_rows: Rows = []
    cut: list[str] = []
    first: tuple[to.Slice, npt.NDArray[np.int64]] | None = None
    for index, (shape, sl) in enumerate(zip(slices, composed, strict=True)):
        rows = to.circuit_rows(sl)
        label = "x".join(str(n) for n in shape)
        ok: bool | None = None
        if deadline.expired:
            cut.append(cut_note(f"slice {index} ({label}) was not checked against its torus"))
        else:
            ok = not to.check_torus(sl, rows)
        slices_rows.append(
            {
                "slice": index,
                "shape": label,
                "twisted": bool(sl.twists),
                "cubes": len(sl.placement),
                "circuits": len(rows),
                "torus_ok": ok,
            }
        )
        frames.append(_circuit_frame(index, rows))
        if first is None or len(sl.placement) > len(first[0].placement):
            first = (sl, rows)
    if first is not None and spares > 0:
        failed, spare = min(first[0].placement.values()), first_spare
        new = to.replace_cube(first[0], failed, spare)
        new_rows = to.circuit_rows(new)
        kept = _kept(first[1], new_rows)
        repaired: bool | None = None
        if deadline.expired:
            cut.append(cut_note("the slice repaired with a spare cube was not checked"))
        else:
            repaired = not to.check_torus(new, new_rows)
        failure_rows.append(
            {
                "failed_cube": failed,
                "spare_cube": spare,
                "circuits_removed": len(first[1]) - kept,
                "circuits_added": len(new_rows) - kept,
                "circuits_kept": kept,
                "torus_ok": repaired,
            }
        )
    out = CheckedSlices(
        pl.DataFrame(slices_rows, schema=SLICES_SCHEMA),
        pl.concat(frames) if frames else pl.DataFrame(schema=CIRCUITS_SCHEMA),
        pl.DataFrame(failure_rows, schema=FAILURE_SCHEMA),
        tuple(cut),
    )
    if not cut:
        _CHECKED[key] = out
        while len(_CHECKED) > CHECKED_KEPT:
            _CHECKED.popitem(last=False)
    return out


def slice_tables(
    cube: int, slices: list[list[int]], twisted: bool, spares: int
) -> dict[str, pl.DataFrame]:
    """``checked_slices`` as the report tables torus_slices, torus_circuits and torus_failure."""
    return checked_slices(cube, slices, twisted, spares).tables


def plan_torus(inst: Instance, catalog: Catalog, deadline: Deadline = NO_DEADLINE) -> TorusPlan:
    """Size the pod, compose every slice, and replace a failed cube with a spare.

    The sizing is closed-form; the chip-by-chip torus checks run while ``deadline`` has not
    passed, and those it cut are null in the tables and said in ``TorusPlan.cut``.
    """
    spec = inst.torus
    if spec is None:
        raise InputError("this instance has no [torus] section")
    device = ocs_of(spec, catalog)
    medium = medium_of(inst, catalog, device)
    try:
        sizing = to.pod_size(
            spec.slices,
            spec.cube_availability,
            spec.target_availability,
            cube=spec.cube,
            ocs_ports=device.ports,
        )
    except ValueError as exc:
        raise InputError(f"torus: {exc}") from None
    # No pod is built unless the sizing is optimal: then spares, cubes and chips are empty (null)
    # and the reason says why, also when the spares were found but the OCS has too few ports.
    built = sizing.status is Status.OPTIMAL and sizing.spares is not None
    pod_row = {
        "status": sizing.status.value,
        "cube": spec.cube,
        "slice_cubes": sizing.slice_cubes,
        "spares": sizing.spares if built else None,
        "cubes": sizing.cubes if built else None,
        "chips": sizing.chips if built else None,
        "probability": sizing.probability,
        "ocs_model": device.name,
        "ocs_devices": sizing.ocs_devices,
        "ocs_ports": device.ports,
        "ocs_ports_used": sizing.ocs_ports_used,
        "reason": sizing.reason,
    }
    checked: CheckedSlices | None = None
    if sizing.status is Status.OPTIMAL and sizing.spares is not None:
        links = (sizing.slice_cubes + sizing.spares) * 6 * spec.cube**2
        pod_row.update(
            face_links=links,
            medium=medium.name,
            capex_usd=sizing.ocs_devices * device.cost_usd
            + links * (medium.cost_usd_per_end + medium.cable_cost_usd),
            power_kw=(sizing.ocs_devices * device.power_w + links * medium.power_w_per_end) / 1000,
        )
        checked = checked_slices(spec.cube, spec.slices, spec.twisted, sizing.spares, deadline)
    return TorusPlan(
        sizing,
        pl.DataFrame([pod_row], schema=POD_SCHEMA),
        pl.DataFrame(schema=SLICES_SCHEMA) if checked is None else checked.slices,
        pl.DataFrame(schema=CIRCUITS_SCHEMA) if checked is None else checked.circuits,
        pl.DataFrame(schema=FAILURE_SCHEMA) if checked is None else checked.failure,
        () if checked is None else checked.cut,
    )
