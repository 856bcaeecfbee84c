"""The instance file: what a user describes, validated strictly.

Every model is frozen and forbids unknown fields, and every field carries its unit in its name
and a docstring that ``fabric-planner schema`` exports as the JSON Schema description.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from planner.defaults import DEFAULT_TIME_LIMIT_S as DEFAULT_TIME_LIMIT_S
from planner.errors import InputError
from planner.schema.catalog import MediumKind
from planner.schema.input_errors import validate_data
from planner.schema.instance_base import Family as Family
from planner.schema.instance_base import Strict
from planner.schema.instance_base import one_of as one_of
from planner.schema.jobs import Jobs
from planner.schema.life import Life
from planner.schema.reliability import HOURS_PER_YEAR as HOURS_PER_YEAR
from planner.schema.reliability import Reliability
from planner.schema.verify import Verify
from planner.schema.workload import Workload

#: Most families one search may name.
MAX_FAMILIES = 32
#: Lowest scale-up rate per GPU (Gb/s): every tensor-parallel byte is divided by it, so 1e-300
#: made a 2.6e304 s step; a PCIe 3 x1 link is 8 Gb/s, NVLink 4 is 3,600.
MIN_SCALE_UP_GBPS = 1.0


TierRole = Literal["leaf", "spine", "core"]


class ScaleUp(Strict):
    """The scale-up domain (NVLink or similar) inside which tensor parallelism runs.

    Domains are consecutive GPUs and whole nodes (an NVL72 rack: 18 nodes of 4), or a node holds
    whole domains (NVLink pairs in a PCIe server). Inside a domain the GPUs meet at full scale-up
    bandwidth (non-blocking): traffic between two of them never touches a NIC.
    """

    gpus: int = Field(8, ge=1, le=1024)
    """GPUs per scale-up domain (8: one DGX/HGX node; 72: a GB200 NVL72 rack)."""
    gbps_per_gpu: float = Field(3600.0, ge=MIN_SCALE_UP_GBPS, le=1e6)
    """Scale-up bandwidth per GPU, each way, Gb/s. NVLink 4 (H100): 18 links x 25 GB/s = 450 GB/s
    each way, 3,600 Gb/s (NVIDIA's "900 GB/s" counts both ways); NVLink 5 (B200): 7,200."""
    switch: str | None = None
    """Optional scale-up switch model from the catalog (``scale_up_switch``): its count, power and
    price enter the whole interconnect's figures (not the scale-out objective)."""
    switches: int | None = Field(None, ge=1, le=4096)
    """Scale-up switches per domain; default: the catalog product's count scaled to ``gpus``."""


class Cluster(Strict):
    """The GPUs to connect and their scale-out NICs."""

    gpus: int = Field(ge=1, le=4_000_000)
    """Number of GPUs (any count, not only sizes that fill a textbook fat tree)."""
    gpus_per_node: int = Field(8, ge=1, le=256)
    """GPUs per server."""
    nic_gbps: int = Field(400, ge=10, le=6400)
    """Scale-out bandwidth per GPU in Gb/s."""
    nic_ports: list[int] = Field(default_factory=lambda: [1], min_length=1)
    """Into how many ports (planes) the NIC may be split; each port runs at nic_gbps / ports."""
    nic: str | None = None
    """Optional NIC model from the catalog; its speed and splits must admit the ones above."""
    scale_up: ScaleUp = Field(default_factory=ScaleUp)
    """Scale-up domain: recorded in the design, simulated, and priced into the whole interconnect."""

    @model_validator(mode="after")
    def _check(self) -> Cluster:
        if self.gpus % self.gpus_per_node:
            raise ValueError(
                f"gpus ({self.gpus}) must be a whole number of nodes of gpus_per_node ({self.gpus_per_node})"
            )
        domain, node = self.scale_up.gpus, self.gpus_per_node
        if domain % node and node % domain:
            raise ValueError(
                f"scale_up.gpus ({domain}) must be whole nodes (a multiple of gpus_per_node, "
                f"{node}) or divide a node"
            )
        for ports in self.nic_ports:
            if ports < 1 or ports > 16 or self.nic_gbps % ports:
                raise ValueError(
                    f"nic_ports entry {ports}: expected a split from 1 to 16 that divides nic_gbps ({self.nic_gbps})"
                )
        if len(set(self.nic_ports)) != len(self.nic_ports):
            raise ValueError("nic_ports lists a split twice")
        return self


#: Where a leaf switch may stand relative to the GPU racks it serves.
LeafPlacement = Literal["top_of_rack", "middle_of_row", "end_of_row"]
#: Where the dedicated network racks holding spines and cores stand.
NetworkRow = Literal["centre", "front"]


#: Row pitch of a standard hall; with DEFAULT_RACK_WIDTH_M it sets the default column count.
DEFAULT_ROW_PITCH_M = 2.4
#: Rack width of a standard hall; with DEFAULT_ROW_PITCH_M it sets the default column count.
DEFAULT_RACK_WIDTH_M = 0.6


class Layout(Strict):
    """Where racks stand: enough to tell which links stay inside a rack and how far others run."""

    nodes_per_rack: int = Field(4, ge=1, le=128)
    """Servers per rack."""
    racks_per_row: int = Field(16, ge=1, le=1000)
    """Racks in one row."""
    rack_width_m: float = Field(0.6, gt=0, le=10)
    """Width of one rack in metres."""
    row_pitch_m: float = Field(2.4, gt=0, le=50)
    """Distance between neighbouring rows in metres."""
    in_rack_cable_m: float = Field(2.0, gt=0, le=10)
    """Length of a cable from a server to a switch in the same rack, in metres."""
    cable_slack_m: float = Field(3.0, ge=0, le=100)
    """Slack and vertical runs added to every cable that leaves a rack, in metres."""
    leaf_placement: list[LeafPlacement] = Field(
        default_factory=lambda: list[LeafPlacement](["top_of_rack", "middle_of_row", "end_of_row"]),
        min_length=1,
    )
    """Where leaves may stand: in the GPU rack ('top_of_rack'), in a network rack in the middle of
    the row ('middle_of_row') or just past its end ('end_of_row'); the optimiser chooses among them."""
    row_columns: int | None = Field(None, ge=1, le=1000)
    """Rows stand in this many columns side by side across the hall; when absent, chosen from the
    rack count so that a hall of standard racks (0.6 m wide, 2.4 m row pitch) is near square.
    Columns times racks_per_row (the network rack positions) may be at most 4,096."""
    cross_aisle_m: float = Field(1.2, ge=0, le=50)
    """Width of the cross aisle between two columns of rows, in metres."""
    routing_overhead: float = Field(0.1, ge=0, le=2)
    """Fraction added to every horizontal run: cables follow the trays, not straight lines."""
    network_row: NetworkRow = "centre"
    """Where the network racks holding spines and cores stand: a row across the middle of the hall
    ('centre') or a row in front of the first GPU row ('front')."""

    @model_validator(mode="after")
    def _check(self) -> Layout:
        if len(set(self.leaf_placement)) != len(self.leaf_placement):
            raise ValueError(
                f"leaf_placement {self.leaf_placement}: names a placement twice; list each of "
                "'top_of_rack', 'middle_of_row', 'end_of_row' at most once"
            )
        return self


def default_row_columns(rows: int, racks_per_row: int) -> int:
    """Columns that make a hall of standard racks near square; depends on counts only.

    What ``Layout.row_columns`` is when absent (``planner.layout`` places the racks by it).
    """
    ratio = rows * DEFAULT_ROW_PITCH_M / (racks_per_row * DEFAULT_RACK_WIDTH_M)
    return max(1, min(rows, round(math.sqrt(ratio))))


def network_positions(layout: Layout, gpus: int, gpus_per_node: int) -> int:
    """Network rack positions of the hall (columns x racks_per_row); hall_of's work is their square."""
    racks = math.ceil(math.ceil(gpus / gpus_per_node) / layout.nodes_per_rack)
    rows = math.ceil(racks / layout.racks_per_row)
    columns = layout.row_columns or default_row_columns(rows, layout.racks_per_row)
    return columns * layout.racks_per_row


class Survive(Strict):
    """Failure tolerance: the loss of one switch of each named tier must be survived."""

    switch_failures: Literal[0, 1] = 1
    """Switch failures per tier to survive (0 switches the requirement off)."""
    min_bandwidth_fraction: float = Field(0.75, ge=0, le=1)
    """After the failure, every switch below keeps at least this fraction of its uplink bandwidth,
    and a GPU whose leaf failed keeps this fraction through its other planes (when 'leaf' is named)."""
    tiers: list[TierRole] = Field(default_factory=lambda: list[TierRole](["spine", "core"]))
    """Tiers whose single-switch failure must be survived; a leaf failure cuts its GPUs off a plane."""


#: Largest caps the models hold exactly (CP-SAT works in 64-bit integers: cents and milliwatts).
#: A cap above them is refused with the field's name; leave a field out for no cap.
MAX_LATENCY_CAP_NS = 1e9
MAX_POWER_CAP_KW = 1e7
MAX_CAPEX_CAP_USD = 1e13


class Constraints(Strict):
    """What every acceptable design must meet."""

    max_oversubscription: float | list[float] = 1.0
    """Largest down:up bandwidth ratio (1.0 = non-blocking); one value for all tiers or a list
    per tier, leaf first."""
    max_switch_hops: int | None = Field(None, ge=1, le=15)
    """Most switches on any GPU-to-GPU path."""
    max_latency_ns: float | None = Field(None, gt=0, le=MAX_LATENCY_CAP_NS)
    """Largest one-way latency of the longest path, in ns: switch port-to-port latency of every
    switch crossed plus the media electronics (DSP/FEC) of every link. A finite number of at most
    1e9 (one second); leave the field out for no cap (inf is refused)."""
    survive: Survive | None = None
    """Single-switch failure tolerance; none when absent."""
    max_power_kw: float | None = Field(None, gt=0, le=MAX_POWER_CAP_KW)
    """Cap on network power (switches and media), in kW. A finite number of at most 1e7 (10 GW);
    leave the field out for no cap (inf is refused)."""
    max_capex_usd: float | None = Field(None, gt=0, le=MAX_CAPEX_CAP_USD)
    """Cap on network capex, in US dollars. A finite number of at most 1e13 (ten trillion
    dollars, which CP-SAT's 64-bit cents hold); leave the field out for no cap (inf is refused)."""
    max_interruptions_per_day: float | None = Field(None, gt=0, le=1e4)
    """Cap on the job interruptions a day the network causes (its NICs, links, switches and
    OCS devices, ``planner.reliability``): the planner chooses planes and co-packaged optics
    that meet it, or says none does. Needs a ``[reliability]`` section."""

    @model_validator(mode="after")
    def _check(self) -> Constraints:
        ratios = self.max_oversubscription
        for r in ratios if isinstance(ratios, list) else [ratios]:
            if not 0.1 <= r <= 64:
                raise ValueError(
                    f"max_oversubscription {r}: expected a ratio from 0.1 to 64 (1.0 = non-blocking)"
                )
        if isinstance(ratios, list) and not 1 <= len(ratios) <= 2:
            raise ValueError(
                "max_oversubscription: a list gives one ratio per tier below the top (leaf, spine)"
            )
        return self

    def oversubscription(self, level: int) -> float:
        """The allowed ratio at tier ``level`` (1 = leaf)."""
        ratios = self.max_oversubscription
        if isinstance(ratios, list):
            return ratios[min(level, len(ratios)) - 1]
        return ratios


class Objective(Strict):
    """Total cost of ownership: capex plus the energy the network draws over its life."""

    energy_usd_per_kwh: float = Field(0.08, ge=0, le=10)
    """Electricity price in US dollars per kWh."""
    pue: float = Field(1.3, ge=1, le=5)
    """Power usage effectiveness: facility power over IT power."""
    lifetime_years: float = Field(5.0, gt=0, le=50)
    """Years over which energy is counted."""
    capex_weight: float = Field(1.0, ge=0, le=1000)
    """Weight of capex in the objective."""
    energy_weight: float = Field(1.0, ge=0, le=1000)
    """Weight of lifetime energy cost in the objective."""
    idle_gpu_weight: float = Field(0.0, ge=0, le=1000)
    """Weight of the value of idle GPU time in the objective: GPUs x price per GPU-hour x
    lifetime hours x the simulated idle fraction of the [workload]'s step. 0 (the default) plans
    on network TCO alone; 1 counts GPU time at its price (``planner.idle_pricing``)."""

    @property
    def lifetime_hours(self) -> float:
        """Hours over which energy (and idle GPU time) is counted."""
        return self.lifetime_years * HOURS_PER_YEAR

    @property
    def energy_usd_per_w(self) -> float:
        """Lifetime energy cost of one watt drawn continuously, PUE included."""
        return self.energy_usd_per_kwh * self.pue * self.lifetime_years * HOURS_PER_YEAR / 1000.0


class Pin(Strict):
    """Decisions fixed by the user; the planner prices exactly this (evaluate, what-if)."""

    family: Family | None = None
    """Topology family."""
    planes: int | None = Field(None, ge=1, le=16)
    """Number of planes (NIC split)."""
    tiers: int | None = Field(None, ge=1, le=3)
    """Number of switch tiers."""
    switch_models: str | list[str] | None = None
    """Switch model per tier (leaf first), or one model for every tier."""
    switches: list[int] | None = Field(None, max_length=3)
    """Switches per plane at each tier, leaf first."""
    downlinks: list[int] | None = Field(None, max_length=3)
    """Ports facing down per switch at each tier (GPU ports on a leaf)."""
    uplinks: list[int] | None = Field(None, max_length=3)
    """Ports facing up per switch at each tier below the top."""
    parallel_links: list[int] | None = Field(None, max_length=3)
    """Links from each switch to each switch it connects to above it, per tier below the top."""
    pods: int | None = Field(None, ge=1, le=65_536)
    """Pods of a three-tier Clos."""
    leaf_placement: LeafPlacement | None = None
    """Where the leaves stand: 'top_of_rack', 'middle_of_row' or 'end_of_row'."""

    def model_for(self, level: int) -> str | None:
        """The pinned switch model at a tier, if any."""
        if self.switch_models is None:
            return None
        if isinstance(self.switch_models, str):
            return self.switch_models
        return self.switch_models[level - 1] if level <= len(self.switch_models) else None

    @model_validator(mode="after")
    def _check(self) -> Pin:
        if isinstance(self.switch_models, list) and len(self.switch_models) > 3:
            raise ValueError("switch_models: at most one model per tier (3)")
        for name in ("switches", "downlinks", "uplinks", "parallel_links"):
            values = getattr(self, name)
            if values is not None and any(v < 0 or v > 10_000_000 for v in values):
                raise ValueError(f"{name}: expected counts from 0 to 10,000,000")
        return self


class Search(Strict):
    """What the optimiser may choose from."""

    families: list[Family] = Field(
        default_factory=lambda: ["clos"], min_length=1, max_length=MAX_FAMILIES
    )
    """Topology families to consider (each at most once)."""
    switch_models: list[str] | None = Field(None, max_length=256)
    """Switch models allowed (catalog names); all of the catalog when absent."""
    catalog: str = "default"
    """'default' for the shipped catalog, or the path of a catalog file (relative to the instance)."""
    max_tiers: int = Field(3, ge=1, le=3)
    """Most switch tiers a design may have."""
    mixed_switch_models: bool = True
    """Whether tiers may use different switch models."""
    media_kinds: list[MediumKind] | None = Field(None, min_length=1, max_length=16)
    """Media kinds allowed (dac, aec, sr, dr, fr, lpo); all of the catalog when absent."""
    cpo: bool = True
    """Whether switches with co-packaged optics may be chosen."""
    ocs_demand: Literal["uniform", "verify"] = "uniform"
    """What an OCS direct-connect design's circuits are engineered for: uniform demand between
    blocks, or the block-level demand of the [verify] traffic (summed over its patterns)."""
    ocs_routing: Literal["auto", "direct", "wcmp"] = "auto"
    """How an OCS direct-connect fabric routes between blocks: ``direct`` (direct circuits only,
    a leaf spraying over the spines that reach the other block), ``wcmp`` (Jupiter's traffic
    engineering: each block pair's traffic split over its direct circuits and paths through one
    transit block by weights from an LP, every spine reaching every other block), or ``auto``
    (``wcmp``)."""
    ocs_hedge: float = Field(0.0, ge=0, lt=1)
    """Traffic engineering's hedge (``ocs_routing = "wcmp"``): the splits must also fit when any
    one block pair's demand exceeds the forecast by this share of a block's injection, so they
    spread over more paths than the forecast alone needs (Jupiter's hedging)."""
    dragonfly_routing: Literal["auto", "minimal", "valiant", "ugal_l", "ugal_g"] = "auto"
    """How a dragonfly routes, and so what it is sized for: ``minimal`` (local, global, local;
    sized for uniform traffic), ``valiant`` (through a random intermediate group), ``ugal_l`` /
    ``ugal_g`` (UGAL: minimal unless its path is more loaded than a Valiant one, judged from the
    source switch's own queues or from global load; both sized for the worst case, twice the
    global bandwidth of uniform traffic), or ``auto``: minimal when every [verify] traffic is
    uniform all-to-all, else ``ugal_g``."""
    pin: Pin = Field(default_factory=Pin)
    """Pinned decisions."""
    until_verified: bool = False
    """Close the loop with the simulator: when the chosen design fails a healthy [verify]
    traffic, tighten the binding tier's allowed oversubscription and plan again, until the design
    meets, the search proves the tightened instance infeasible or 6 iterations have run
    (``planner.bandwidth_loop``; the iterations are the report's ``bandwidth_loop`` table).
    Off when the design is not verified (``verify.enabled = false``, --no-verify)."""

    @property
    def ocs_transit(self) -> bool:
        """Whether OCS direct-connect blocks route over one-transit paths (``ocs_routing``)."""
        return self.ocs_routing != "direct"

    @model_validator(mode="after")
    def _check(self) -> Search:
        if len(set(self.families)) != len(self.families):
            raise ValueError(f"families {self.families}: names a family twice")
        return self


class Torus(Strict):
    """A TPU-style pod: cubes of accelerators joined into tori by optical circuit switches."""

    cube: int = Field(4, ge=1, le=16)
    """Chips along each side of a cube (4: 4 x 4 x 4 = 64 chips wired as a mesh inside)."""
    slices: list[list[int]] = Field(min_length=1, max_length=64)
    """Tori the pod must be able to offer at once, in chips per dimension (multiples of cube)."""
    twisted: bool = True
    """Twist the wrap-around links of k x k x 2k and k x 2k x 2k slices (shorter paths); slices
    of other shapes stay plain tori."""
    cube_availability: float = Field(0.99, gt=0, lt=1)
    """Probability that a cube is healthy at a random moment."""
    target_availability: float = Field(0.999, gt=0, lt=1)
    """Probability with which every requested slice must be composable from healthy cubes."""
    link_gbps: int = Field(400, gt=0, le=6400)
    """Speed of every optical face link (one module at the cube end; the OCS is a mirror)."""
    ocs: str | None = None
    """OCS model from the catalog; the first one when absent."""

    @model_validator(mode="after")
    def _check(self) -> Torus:
        for shape in self.slices:
            if len(shape) != 3 or any(n < 1 or n % self.cube for n in shape):
                raise ValueError(
                    f"torus.slices: {shape} must be three chip counts, each a multiple of the cube ({self.cube})"
                )
        return self


#: What an instance's name may be: it names the report folder, so no path, no '..', no NUL.
INSTANCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

#: Most network rack positions in a hall (columns x racks_per_row): the cable-length model
#: measures every pair of them, about 1 GB of work at 4,096 (hall_of in planner/layout.py).
MAX_NETWORK_POSITIONS = 4096


def check_overlap(keys: Sequence[str]) -> None:
    """Refuse a table and a field inside it changed together (``cluster`` and ``cluster.gpus``).

    One would override the other, whichever came last, and the changes would say a value that
    is not the one planned.
    """
    for outer in keys:
        inner = next((k for k in keys if k.startswith(outer + ".")), None)
        if inner is not None:
            raise InputError(
                f"{outer} and {inner} overlap: {inner} is a field of {outer}; change the whole "
                f"table {outer} or its fields, not both"
            )


class Instance(Strict):
    """One planning question: a cluster, its floor, its constraints, the objective and the search."""

    name: str = Field(pattern=INSTANCE_NAME_PATTERN)
    """Name of the instance; reports go to reports/<name>/."""
    description: str = ""
    """Free text shown in reports."""
    cluster: Cluster
    layout: Layout = Field(default_factory=Layout)
    constraints: Constraints = Field(default_factory=Constraints)
    objective: Objective = Field(default_factory=Objective)
    search: Search = Field(default_factory=Search)
    verify: Verify = Field(default_factory=Verify)
    """Simulation of the chosen design: traffic, routing, failures and the verdict's threshold."""
    torus: Torus | None = None
    """A TPU-style torus pod planned with 'fabric-planner torus' (cluster is then ignored)."""
    reliability: Reliability | None = None
    """What a failure costs the job (restart, checkpoints, failures outside the network); with it
    the report gives interruptions a day and goodput (``planner.reliability``)."""
    workload: Workload | None = None
    """What the cluster trains (a preset or a model, its parallelism and GPU); its parallel
    degrees multiply to cluster.gpus. None: the fabric is planned for the [verify] traffic alone."""
    life: Life | None = None
    """The cluster's life: phases, generations and refreshes (``fabric-planner life``); None:
    one greenfield build."""
    jobs: Jobs | None = None
    """The many jobs sharing the cluster: their sizes, placement policies and what a lost GPU-hour
    is worth (``fabric-planner mix``); None: the cluster runs one job."""
    _derived_from: tuple[str, tuple[tuple[str, Any], ...]] | None = PrivateAttr(None)
    """Not an input: (base name, changes) when ``planner.loading.derived_instance`` made this
    instance from another by ``--set`` changes (its name is then derived from them)."""
    _families: tuple[str, ...] | None = PrivateAttr(None)
    """Not an input: the family names it was checked against (the validation context), kept so
    that ``with_changes`` checks a changed instance against the same names."""

    @model_validator(mode="after")
    def _keep_families(self, info: ValidationInfo) -> Instance:
        names = (info.context or {}).get("families")
        if names is not None:
            self._families = tuple(names)
        return self

    @property
    def derived_from(self) -> tuple[str, tuple[tuple[str, Any], ...]] | None:
        """The base instance's name and the changes (dotted path, value) this one was made with."""
        return self._derived_from

    @model_validator(mode="after")
    def _check_reliability(self) -> Instance:
        if self.constraints.max_interruptions_per_day is not None and self.reliability is None:
            raise ValueError(
                "constraints.max_interruptions_per_day needs a [reliability] section (it may be "
                "empty: its defaults then apply)"
            )
        return self

    @model_validator(mode="after")
    def _check_life(self) -> Instance:
        if self.life is not None and self.life.phases[-1].gpus != self.cluster.gpus:
            raise ValueError(
                f"life.phases: the last phase holds {self.life.phases[-1].gpus:,} GPUs; "
                f"expected cluster.gpus ({self.cluster.gpus:,}), the cluster it grows into"
            )
        return self

    @model_validator(mode="after")
    def _check_jobs(self) -> Instance:
        jobs = self.jobs
        if jobs is None:
            return self
        largest = max(jobs.sizes_gpus or jobs.queue or [1])
        if largest > self.cluster.gpus:
            raise ValueError(
                f"jobs: a job of {largest:,} GPUs is larger than the cluster "
                f"({self.cluster.gpus:,} GPUs)"
            )
        if jobs.gpu_usd_per_hour is None and self.workload is None:
            raise ValueError(
                "jobs.gpu_usd_per_hour: the value of a lost GPU-hour is needed (without a "
                "[workload] there is no GPU price to take it from)"
            )
        return self

    @model_validator(mode="after")
    def _check_hall(self) -> Instance:
        positions = network_positions(self.layout, self.cluster.gpus, self.cluster.gpus_per_node)
        if positions > MAX_NETWORK_POSITIONS:
            raise ValueError(
                f"layout: the hall has {positions:,} network rack positions (row_columns x "
                f"racks_per_row), more than the {MAX_NETWORK_POSITIONS:,} the cable-length model "
                "holds (its work grows with their square); use fewer row_columns or racks_per_row"
            )
        return self

    # ---- changes the planner makes itself, by typed fields ------------------------------------
    def with_ratio_caps(self, caps: Sequence[float]) -> Instance:
        """The same instance allowing at most these down:up ratios, one per tier (leaf first)."""
        return self.with_changes({"constraints.max_oversubscription": list(caps)})

    def with_families(self, families: Sequence[str], ocs_demand: str | None = None) -> Instance:
        """The same instance searching these families (and sizing OCS circuits for a demand)."""
        changes: dict[str, Any] = {"search.families": list(families)}
        if ocs_demand is not None:
            changes["search.ocs_demand"] = ocs_demand
        return self.with_changes(changes)

    def with_media(self, media_kinds: Sequence[str], cpo: bool) -> Instance:
        """The same instance allowing these media kinds, and co-packaged optics or not."""
        return self.with_changes({"search.media_kinds": list(media_kinds), "search.cpo": cpo})

    def with_catalog(self, catalog: str) -> Instance:
        """The same instance reading this catalog ('default' or a file's path)."""
        return self.with_changes({"search.catalog": catalog})

    def with_changes(self, changes: dict[str, Any]) -> Instance:
        """A new, validated instance with dotted fields replaced: {"cluster.gpus": 65536}.

        The instance is validated as a whole, a refused field reported as ``load_instance``
        reports it. A table and a field inside it cannot both change (``check_overlap``). The name stays (``planner.loading.derived_instance`` gives one derived from
        the changes); an instance that was itself derived keeps that record (``derived_from``).
        """
        check_overlap(list(changes))
        data = self.model_dump(mode="python", exclude_unset=True)
        for dotted, value in changes.items():
            # A table given as a value is copied: a later change never writes into the caller's.
            value = copy.deepcopy(value)
            parts = dotted.split(".")
            node = data
            for i, part in enumerate(parts[:-1]):
                child = node.get(part)
                if child is None:
                    child = node[part] = {}
                if not isinstance(child, dict):
                    raise InputError(
                        f"{'.'.join(parts[: i + 1])} is a value, not a table: cannot set {dotted}"
                    )
                node = child
            node[parts[-1]] = value
        context = None if self._families is None else {"families": self._families}
        out = validate_data(Instance, data, source="changes " + ", ".join(changes), context=context)
        out._derived_from = self.derived_from
        return out
