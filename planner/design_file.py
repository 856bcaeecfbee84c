"""The design.json file: what ``validate`` and ``simulate`` read, checked as strictly as an instance.

``design_from_dict`` runs every design.json through ``parse_design`` before it builds the frozen
dataclasses of ``planner.design``, so a wrong type, a null, an empty tier list, a zero or negative
count, a bogus family or an unknown key is reported with its field path and what was expected
(``tiers.0.switches: Input should be greater than or equal to 1; got 0``), never as a traceback.

Types are strict (``"256"`` is not a count, ``true`` is not a number); every number is finite. The
file's keys are the dataclasses' fields: a key that is not a field of the part it sits in is an
error, and a field added to a dataclass later is accepted even before it gets a rule here. The
rules are those of a single part and the shape every family shares (tiers numbered from 1 in
order with the roles its family gives them, link classes numbered in order between those roles,
one link speed, a wiring of a known kind with valid parameters). The families are handed in by
the caller (``planner.families.reading``): this module knows no family and no wiring kind. ``check_structure`` then
runs the validator's structural checks (ports, the wiring's shape, the family's own recount of
its wiring and circuits) on the built design: a design that fails them describes no fabric, and
is bad input (exit 2) like a wrong type. Whether a buildable design meets its ratios,
paths, media, failure tolerance, totals and catalog figures stays the validator's question
(``fabric-planner validate``, exit 1 with violations).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from models.status import Status
from planner import design as design_module
from planner.design import (
    MAX_LENGTH_BINS,
    Design,
    EndModule,
    LinkClass,
    LinkGroup,
    Requirements,
    ScaleUpDomain,
    TierDesign,
)
from planner.errors import InputError
from planner.schema.catalog import LANE_MATCHED_KINDS
from planner.schema.input_errors import MAX_ERRORS_SHOWN, shown
from planner.schema.instance import INSTANCE_NAME_PATTERN
from planner.validation import structure_violations
from planner.wiring import UP_DOWN, wiring_from_dict

if TYPE_CHECKING:
    from planner.family_roles import Family

#: Largest block, device or circuit count in a circuit entry.
MAX_INDEX = 10_000_000
#: Most links one plane of a design may state, over its link classes: the checks and the
#: simulator hold arrays of one entry per link (tens of bytes each), so this bounds what reading
#: a design.json may allocate. Five times the largest shipped design (cluster-1m's Clos plane:
#: 3,145,728 links); a 4,000,000-GPU Clos of three tiers needs about 12 million.
MAX_LINKS_PER_PLANE = 16_000_000

#: Fastest link a design may state (Gb/s): its link speed, and a block's uplink rate.
MAX_LINK_SPEED_GBPS = 6400

#: What a role of a design may be called (a family names them: leaf, spine, core, ocs, ...).
ROLE_PATTERN = r"^[a-z][a-z_]{0,31}$"


class DesignFileError(InputError, ValueError):
    """A design.json that breaks the schema; a ValueError too, for callers that expect one."""


class _Part(BaseModel):
    """A part of design.json: strict types, finite numbers, keys that are the dataclass's fields."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True, allow_inf_nan=False)
    #: The dataclass of ``planner.design`` this part is read into.
    of: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            fields = _dataclass_fields(cls.of)
            unknown = [str(k) for k in data if k not in fields]
            if unknown:
                raise ValueError(
                    f"unknown field {unknown[0]!r} (a design.json written by fabric-planner has "
                    f"{', '.join(sorted(fields))})"
                )
        return data


def _dataclass_fields(name: str) -> set[str]:
    return {f.name for f in dataclasses.fields(getattr(design_module, name))}


def _families(info: ValidationInfo) -> Mapping[str, Family]:
    """The families the caller handed in (``parse_design``'s context)."""
    families: Mapping[str, Family] = (info.context or {})["families"]
    return families


def _count() -> Any:
    return Field(ge=0, le=100_000_000)


def _money() -> Any:
    return Field(ge=0, le=1e15)


class TierFile(_Part):
    """One switch tier of one plane (``TierDesign``)."""

    of: ClassVar[str] = "TierDesign"
    level: int = Field(ge=1, le=4)
    role: str = Field(pattern=ROLE_PATTERN)
    switch_model: str = Field(min_length=1, max_length=200)
    port_speed_gbps: int = Field(ge=1, le=6400)
    radix: int = Field(ge=1, le=4096)
    switches: int = Field(ge=1, le=10_000_000)
    downlinks: int = _count()
    uplinks: int = _count()
    fanout: int = _count()
    parallel_links: int = _count()
    cpo: bool
    unit_cost_usd: float = _money()
    unit_power_w: float = Field(ge=0, le=1e9)
    latency_ns: int = Field(ge=0, le=10**9)
    source: str = ""
    cpo_lane_gbps: int | None = Field(None, ge=1, le=6400)
    cpo_connector: str = ""
    cpo_reach_m: float | None = Field(None, gt=0)
    ocs: bool = False
    insertion_loss_db: float | None = Field(None, ge=0, le=100)
    protocol: Literal["", "infiniband", "ethernet"] = ""
    cage_form_factor: str = Field("", max_length=50)
    cage_lane_gbps: int | None = Field(None, ge=1, le=400)
    ports_per_cage: int = Field(0, ge=0, le=64)

    @model_validator(mode="after")
    def _ports(self) -> TierFile:
        if self.downlinks + self.uplinks > self.radix:
            raise ValueError(
                f"downlinks ({self.downlinks}) + uplinks ({self.uplinks}) exceed the radix "
                f"({self.radix})"
            )
        return self


#: One pair of ``LinkGroup.length_histogram``: a finite length >= 0 in metres, links >= 1.
LengthBin = Annotated[
    tuple[
        Annotated[float, Field(ge=0, le=100_000, allow_inf_nan=False)],
        Annotated[int, Field(ge=1, le=100_000_000)],
    ],
    BeforeValidator(lambda v: tuple(v) if isinstance(v, list) else v),
]


#: A catalog name: a medium's, a module's or a switch's.
NAME_PATTERN = r"^[a-z0-9][a-z0-9-]*$"


def _host_lane_rates(cls: type, rates: list[int]) -> list[int]:
    """A module's host lane rates: each from 1 to 400 Gb/s."""
    if any(r < 1 or r > 400 for r in rates):
        raise ValueError("host lane rates run from 1 to 400 Gb/s")
    return rates


class EndModuleFile(_Part):
    """The module at one end of a group's links, when not the medium's own (``EndModule``)."""

    of: ClassVar[str] = "EndModule"
    name: str = Field(pattern=NAME_PATTERN, max_length=200)
    cost_usd: float = _money()
    power_w: float = Field(ge=0, le=1e6)
    afr: float = Field(ge=0, le=1)
    host_lane_gbps: list[int] = Field(min_length=1, max_length=16)
    form_factors: list[str] = Field(min_length=1, max_length=16)
    line_kind: str = Field(min_length=1, max_length=50)
    line_lanes: int | None = Field(ge=1, le=64)
    line_lane_gbps: int | None = Field(ge=1, le=6400)
    connector: str = Field(max_length=50)
    source: str = ""
    nic_only: bool = False

    _lanes = field_validator("host_lane_gbps")(_host_lane_rates)

    @model_validator(mode="after")
    def _no_gearbox(self) -> EndModuleFile:
        if self.line_kind in LANE_MATCHED_KINDS and self.host_lane_gbps != [self.line_lane_gbps]:
            raise ValueError(
                f"{self.name} is {self.line_kind}, which has no gearbox: its host lanes "
                f"{self.host_lane_gbps} must be its line lanes ({self.line_lane_gbps}G)"
            )
        return self


class LinkGroupFile(_Part):
    """The links of one class that share a medium (``LinkGroup``)."""

    of: ClassVar[str] = "LinkGroup"
    medium: str = Field(min_length=1, max_length=200)
    kind: str = Field(min_length=1, max_length=50)
    links: int = _count()
    min_length_m: float = Field(ge=0, le=100_000)
    max_length_m: float = Field(ge=0, le=100_000)
    pluggable_ends: int = Field(ge=0, le=2)
    end_cost_usd: float = _money()
    end_power_w: float = Field(ge=0, le=1e6)
    cable_cost_usd: float = _money()
    latency_ns: int = Field(ge=0, le=10**9)
    reach_m: float = Field(gt=0, le=1e7)
    afr: float = Field(ge=0, le=1)
    copper: bool
    lane_gbps: int | None = Field(None, ge=1, le=6400)
    connector: str = ""
    channel_loss_db: float | None = Field(None, ge=0, le=100)
    source: str = ""
    cable_source: str = ""
    lower_ports_per_module: int = Field(1, ge=0, le=64)
    upper_ports_per_module: int = Field(1, ge=0, le=64)
    host_lane_gbps: list[int] = Field(default_factory=list, max_length=16)
    form_factors: list[str] = Field(default_factory=list, max_length=16)
    ns_per_m: float = Field(0.0, ge=0, le=100)
    length_histogram: list[LengthBin] = Field(default_factory=list, max_length=MAX_LENGTH_BINS)
    """``(length_m, links)`` pairs; absent or empty in older files (lengths unknown)."""
    lower_module: EndModuleFile | None = None
    """The module at the lower ends when not the medium's own (absent in older files)."""
    upper_module: EndModuleFile | None = None
    """The same at the upper ends."""

    @model_validator(mode="after")
    def _modules(self) -> LinkGroupFile:
        for side, m, k in (
            ("lower", self.lower_module, self.lower_ports_per_module),
            ("upper", self.upper_module, self.upper_ports_per_module),
        ):
            if m is None:
                continue
            if m.name == self.medium:
                raise ValueError(
                    f"{side}_module: {m.name!r} is the medium's own module, which the group's "
                    "own figures describe: leave it out"
                )
            if k < 1:
                raise ValueError(
                    f"{side}_module: {m.name!r} at an end without modules "
                    f"({side}_ports_per_module {k})"
                )
            if (m.line_kind, m.line_lane_gbps, m.connector) != (
                self.kind,
                self.lane_gbps,
                self.connector,
            ):
                raise ValueError(
                    f"{side}_module: {m.name!r} drives {m.line_kind} lanes of "
                    f"{m.line_lane_gbps}G on {m.connector or 'no connector'}, the {self.medium} "
                    f"links {self.kind} lanes of {self.lane_gbps}G on "
                    f"{self.connector or 'no connector'}: both ends of a link must drive the "
                    "same line side"
                )
        return self

    @model_validator(mode="after")
    def _histogram(self) -> LinkGroupFile:
        pairs = self.length_histogram
        if not pairs:
            return self
        lengths = [x for x, _ in pairs]
        if any(b <= a for a, b in zip(lengths, lengths[1:], strict=False)):
            raise ValueError("length_histogram: lengths must be strictly ascending")
        total = sum(n for _, n in pairs)
        if total != self.links:
            raise ValueError(
                f"length_histogram: its links add up to {total}, the group has {self.links}"
            )
        return self

    _lanes = field_validator("host_lane_gbps")(_host_lane_rates)


class LinkClassFile(_Part):
    """All links between two adjacent tiers of one plane (``LinkClass``)."""

    of: ClassVar[str] = "LinkClass"
    index: int = Field(ge=0, le=3)
    lower_role: str = Field(pattern=ROLE_PATTERN)
    upper_role: str = Field(pattern=ROLE_PATTERN)
    links: int = _count()
    speed_gbps: int = Field(ge=1, le=6400)
    groups: list[LinkGroupFile] = Field(min_length=1, max_length=64)
    placement: Literal["", "top_of_rack", "middle_of_row", "end_of_row"] = ""

    @model_validator(mode="after")
    def _module_lanes(self) -> LinkClassFile:
        for j, g in enumerate(self.groups):
            for side, m in (("lower", g.lower_module), ("upper", g.upper_module)):
                if m is None or m.line_lane_gbps is None:
                    continue
                if m.line_lanes is None or m.line_lanes * m.line_lane_gbps != self.speed_gbps:
                    raise ValueError(
                        f"groups.{j}.{side}_module: {m.name!r} drives {m.line_lanes} lanes of "
                        f"{m.line_lane_gbps}G, not the {self.speed_gbps}G of its links"
                    )
        return self


class RequirementsFile(_Part):
    """The constraints the design was chosen under (``Requirements``)."""

    of: ClassVar[str] = "Requirements"
    max_oversubscription: list[float] = Field(max_length=3)
    max_switch_hops: int | None = Field(ge=1, le=15)
    max_latency_ns: float | None = Field(gt=0, le=1e9)
    min_fraction_after_failure: float | None = Field(ge=0, le=1)
    protected_tiers: list[int] = Field(max_length=4)
    max_power_w: float | None = Field(gt=0, le=1e10)
    max_capex_usd: float | None = Field(gt=0, le=1e13)

    @field_validator("max_oversubscription")
    @classmethod
    def _ratios(cls, ratios: list[float]) -> list[float]:
        if any(not 0.1 <= r <= 64 for r in ratios):
            raise ValueError(f"expected ratios from 0.1 to 64, got {ratios}")
        return ratios

    @field_validator("protected_tiers")
    @classmethod
    def _levels(cls, levels: list[int]) -> list[int]:
        if any(not 1 <= t <= 4 for t in levels):
            raise ValueError(f"expected tier levels from 1 to 4, got {levels}")
        return levels


class ScaleUpFile(_Part):
    """The scale-up domain (``ScaleUpDomain``); the bounds of the instance's ``cluster.scale_up``."""

    of: ClassVar[str] = "ScaleUpDomain"
    gpus: int = Field(8, ge=1, le=1024)
    gbps_per_gpu: float = Field(3600.0, gt=0, le=1e6)
    switch_model: str = Field("", pattern=r"^([a-z0-9][a-z0-9-]*)?$", max_length=200)
    switches_per_domain: int = Field(0, ge=0, le=4096)
    switch_cost_usd: float = Field(0.0, ge=0, le=1e9)
    switch_power_w: float = Field(0.0, ge=0, le=1e7)


class DesignFile(_Part):
    """A whole design.json (``Design``)."""

    of: ClassVar[str] = "Design"
    instance: str = Field(pattern=INSTANCE_NAME_PATTERN)
    """The instance's name, as in the instance file (it names the report folder)."""
    family: str
    status: str
    gpus: int = Field(ge=1, le=4_000_000)
    planes: int = Field(ge=1, le=16)
    link_speed_gbps: int = Field(ge=1, le=MAX_LINK_SPEED_GBPS)
    tiers: list[TierFile] = Field(min_length=1, max_length=4)
    link_classes: list[LinkClassFile] = Field(min_length=1, max_length=4)
    requirements: RequirementsFile
    energy_usd_per_w: float = Field(ge=0, le=1e6)
    capex_weight: float = Field(ge=0, le=1000)
    energy_weight: float = Field(ge=0, le=1000)
    capex_usd: float = _money()
    power_w: float = Field(ge=0, le=1e12)
    objective_usd: float = Field(ge=-1e18, le=1e18)
    bound_usd: float = Field(ge=-1e18, le=1e18)
    pods: int = Field(1, ge=1, le=65_536)
    leaves_per_pod: int = Field(0, ge=0, le=10_000_000)
    gpus_per_node: int = Field(8, ge=1, le=256)
    leaf_placement: Literal["", "top_of_rack", "middle_of_row", "end_of_row"] = ""
    catalog: str = Field("default", min_length=1, max_length=4096)
    solve_s: float = Field(0.0, ge=0)
    notes: list[str] = Field(default_factory=list, max_length=10_000)
    nic: str = Field("", max_length=200)
    nic_form_factor: str = Field("", max_length=50)
    nic_lane_gbps: int | None = Field(None, ge=1, le=400)
    nics_per_cage: int = Field(1, ge=1, le=8)
    nic_cages: int = Field(1, ge=1, le=8)
    protocol: Literal["", "infiniband", "ethernet"] = ""
    circuits: list[list[int]] = Field(default_factory=list, max_length=10_000_000)
    routing: Literal["", "direct", "wcmp"] = ""
    """The routing chosen between blocks (``Design.routing``); absent in older files: none."""
    routing_hedge: float = Field(0.0, ge=0, lt=1)
    """The traffic engineering's hedge (``Design.routing_hedge``)."""
    block_speed_gbps: list[int] = Field(default_factory=list, max_length=65_536)
    """Each block's uplink rate into the OCS layer (``Design.block_speed_gbps``); absent in
    older files: every block at ``link_speed_gbps``."""
    wiring: dict[str, Any] = Field(default_factory=lambda: {"kind": "up_down"})
    """How the tiers are joined: a kind and its parameters (``planner.wiring``)."""
    scale_up: ScaleUpFile = Field(default_factory=ScaleUpFile)
    """The scale-up domain (absent in files written before it was recorded: the default)."""

    @field_validator("family")
    @classmethod
    def _family(cls, value: str, info: ValidationInfo) -> str:
        names = list(_families(info))
        if value not in names:
            expected = " or ".join([", ".join(repr(n) for n in names[:-1]), repr(names[-1])])
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": expected}
            )
        return value

    @field_validator("wiring")
    @classmethod
    def _wiring(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        wiring_from_dict(value, _wiring_readers(_families(info)))
        return value

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        known = [s.value for s in Status]
        if value not in known:
            raise ValueError(f"unknown status {value!r}; expected one of {', '.join(known)}")
        return value

    @field_validator("circuits")
    @classmethod
    def _circuits(cls, rows: list[list[int]]) -> list[list[int]]:
        for i, row in enumerate(rows):
            if (
                len(row) != 4
                or not 0 <= row[0] < row[1] <= MAX_INDEX
                or not 0 <= row[2] <= MAX_INDEX
                or not 1 <= row[3] <= MAX_INDEX
            ):
                raise ValueError(
                    f"entry {i} is {shown_row(row)}: expected [block a, block b, device, circuits] "
                    f"with 0 <= a < b, device >= 0 and circuits >= 1, each at most {MAX_INDEX:,}"
                )
        return rows

    @field_validator("block_speed_gbps")
    @classmethod
    def _block_rates(cls, rates: list[int]) -> list[int]:
        for i, rate in enumerate(rates):
            if not 1 <= rate <= MAX_LINK_SPEED_GBPS:
                raise ValueError(
                    f"entry {i} is {rate}: expected a block's uplink rate in Gb/s, from 1 to "
                    f"{MAX_LINK_SPEED_GBPS:,}"
                )
        return rates

    @model_validator(mode="after")
    def _shape(self, info: ValidationInfo) -> DesignFile:
        levels = [t.level for t in self.tiers]
        if levels != list(range(1, len(self.tiers) + 1)):
            raise ValueError(f"tiers: levels must run 1, 2, ... in order, got {levels}")
        expected = _families(info)[self.family].roles(len(self.tiers))
        for i, t in enumerate(self.tiers):
            if i >= len(expected) or t.role != expected[i]:
                raise ValueError(
                    f"tiers.{i}.role: {t.role!r} is not the role of tier {i + 1} of a "
                    f"{len(self.tiers)}-tier {self.family} design ({', '.join(expected)})"
                )
        roles = {"gpu", *(t.role for t in self.tiers)}
        for i, c in enumerate(self.link_classes):
            if c.index != i or not {c.lower_role, c.upper_role} <= roles:
                raise ValueError(
                    f"link_classes.{i}: expected index {i} between roles of the design "
                    f"({', '.join(sorted(roles))}), got index {c.index} from {c.lower_role!r} "
                    f"to {c.upper_role!r}"
                )
        if any(not (t.ocs and t.role == "ocs") for t in self.tiers if t.ocs or t.role == "ocs"):
            raise ValueError("tiers: an OCS tier has role 'ocs' and ocs true, and only it")
        links = sum(c.links for c in self.link_classes)
        if links > MAX_LINKS_PER_PLANE:
            raise ValueError(
                f"link_classes: {links:,} links per plane, more than the {MAX_LINKS_PER_PLANE:,} "
                "a design may hold (each is checked and simulated one by one)"
            )
        if any(c.speed_gbps != self.link_speed_gbps for c in self.link_classes):
            raise ValueError(
                f"link_classes: every class runs at link_speed_gbps ({self.link_speed_gbps})"
            )
        if self.circuits:
            if not self.tiers[-1].ocs:
                raise ValueError("circuits: only a design with an OCS layer has circuits")
            if any(b >= self.pods or d >= self.tiers[-1].switches for _, b, d, _ in self.circuits):
                raise ValueError(
                    f"circuits: blocks must be below pods ({self.pods}) and devices below the "
                    f"OCS count ({self.tiers[-1].switches})"
                )
        self._check_block_rates()
        return self

    def _check_block_rates(self) -> None:
        """One uplink rate per block (pod), none faster than the design's link speed."""
        rates = self.block_speed_gbps
        if not rates:
            return
        if len(self.tiers) != 3:
            raise ValueError(
                "block_speed_gbps: only a design of pods (three tiers: a Clos's pods or a "
                "direct-connect fabric's blocks) has block rates"
            )
        if len(rates) != self.pods:
            raise ValueError(
                f"block_speed_gbps: expected one rate per block (pods = {self.pods}), "
                f"got {len(rates)}"
            )
        fast = [i for i, rate in enumerate(rates) if rate > self.link_speed_gbps]
        if fast:
            raise ValueError(
                f"block_speed_gbps: entry {fast[0]} is {rates[fast[0]]}: a block is never "
                f"faster than link_speed_gbps ({self.link_speed_gbps}), the fastest generation"
            )


def _wiring_readers(families: Mapping[str, Family]) -> dict[str, Any]:
    """The reader of every wiring kind the families wire, by kind."""
    return {f.wiring_kind: f.read_wiring for f in families.values()}


def check_structure(design: Design, family: Family) -> None:
    """Refuse a design whose ports, spread, wiring or circuits do not add up (DesignFileError).

    No fabric can be built from such a design, so ``simulate`` could not run it; these are the
    validator's structural checks (``planner.validation``) and the family's own. The others
    (ratios, paths, media, failures, totals, catalog figures) judge a buildable design and stay
    ``validate``'s answer.
    """
    try:
        broken = [str(v) for v in structure_violations(design, family)]
    except (ArithmeticError, IndexError, KeyError, ValueError) as exc:
        broken = [f"the tiers do not fit together ({exc})"]
    if broken:
        shown_lines = broken[:MAX_STRUCTURE_SHOWN]
        if len(broken) > MAX_STRUCTURE_SHOWN:
            shown_lines.append(f"... and {len(broken) - MAX_STRUCTURE_SHOWN} more")
        raise DesignFileError("\n  ".join(["not a buildable fabric:"] + shown_lines))


#: Most structural problems listed in one message.
MAX_STRUCTURE_SHOWN = 20


def parse_design(data: Any, families: Mapping[str, Family]) -> dict[str, Any]:
    """A design.json's data checked against ``DesignFile``: plain, validated, JSON-like data.

    ``families`` are every family a design may name, by name. DesignFileError (an InputError
    and a ValueError) lists every field at fault, with its path.
    """
    if not isinstance(data, dict):
        raise DesignFileError(
            f"expected a JSON object written by fabric-planner (design.json), got {shown(data)}"
        )
    if any(isinstance(v, tuple) for v in data.values()):
        data = _lists(data)  # to_dict output: tuples where JSON has arrays
    # Every integer field has bounds, so no integer beyond 64 bits gets through, and no part
    # nests deeper than the schema: no separate walk over the data (a large OCS design has
    # millions of circuit entries).
    try:
        DesignFile.model_validate(data, context={"families": families})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        lines = []
        for err in errors[:MAX_ERRORS_SHOWN]:
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            # A rule of ours (value_error) says what it got; pydantic's own messages do not.
            plain = err["type"] in ("missing", "value_error")
            got = "" if plain else f"; got {shown(err.get('input'))}"
            lines.append(f"{field}: {err['msg']}{got}")
        if len(errors) > MAX_ERRORS_SHOWN:
            lines.append(f"... and {len(errors) - MAX_ERRORS_SHOWN:,} more errors")
        raise DesignFileError("\n  ".join(["invalid design:"] + lines)) from None
    return dict(data)  # strict validation converts nothing: this is what was checked


def _lists(value: Any) -> Any:
    """``to_dict`` output (tuples) as JSON data (lists); the depth is already checked."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


def shown_row(row: list[int]) -> str:
    """A circuit entry for a message, however long it is."""
    return shown(row, limit=60)


def design_from_dict(data: dict[str, Any], families: Mapping[str, Family]) -> Design:
    """Rebuild a design from ``Design.to_dict`` output, checked as above.

    ``families`` are every family a design may name, by name (``planner.families.FAMILIES``):
    the design's own gives the roles and the structural checks, and every family's wiring
    reader is known, so a design carrying another family's wiring is refused by name.
    DesignFileError (an InputError and a ValueError) names every field at fault.
    """
    d = parse_design(data, families)
    family = families[d["family"]]
    d["status"] = Status(d["status"])
    d["tiers"] = tuple(TierDesign(**t) for t in d["tiers"])
    d["link_classes"] = tuple(
        LinkClass(**(c | {"groups": tuple(_group(g) for g in c["groups"])}))
        for c in d["link_classes"]
    )
    r = dict(d["requirements"])
    r["max_oversubscription"] = tuple(r["max_oversubscription"])
    r["protected_tiers"] = tuple(r["protected_tiers"])
    d["requirements"] = Requirements(**r)
    d["notes"] = tuple(d.get("notes", ()))
    d["circuits"] = tuple(tuple(c) for c in d.get("circuits", ()))
    d["block_speed_gbps"] = tuple(d.get("block_speed_gbps", ()))
    d["wiring"] = wiring_from_dict(d.get("wiring", {"kind": UP_DOWN}), _wiring_readers(families))
    d["scale_up"] = ScaleUpDomain(**d.get("scale_up", {}))
    design = Design(**d)
    check_structure(design, family)
    return design


def _group(g: dict[str, Any]) -> LinkGroup:
    g = dict(g)
    for key in ("host_lane_gbps", "form_factors"):
        if key in g:
            g[key] = tuple(g[key])
    if "length_histogram" in g:
        g["length_histogram"] = tuple((float(x), int(n)) for x, n in g["length_histogram"])
    for key in ("lower_module", "upper_module"):
        if g.get(key) is not None:
            m = dict(g[key])
            m["host_lane_gbps"] = tuple(m["host_lane_gbps"])
            m["form_factors"] = tuple(m["form_factors"])
            g[key] = EndModule(**m)
    return LinkGroup(**g)
