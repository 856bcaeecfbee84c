"""``planner.life.plan_life`` on small lives: each growth decision binds in the planner itself,
every phase is validated and simulated, and the totals are the phase table's own sums."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from models.life_cost import HOURS_PER_YEAR
from planner.life import LifePlan, plan_life
from planner.life.plan import cost_curve
from planner.loading import load_instance
from planner.schema.instance import Instance

#: Agreement between two ways of adding up the same costs.
REL_TOL = 1e-9

#: A two-tier Clos of 64-port switches growing from 512 to 2,048 GPUs: 16 leaves need 8 spines
#: of 64 ports, 64 leaves need 32.
TWO_PHASES = """\
name = "life-2k"

[cluster]
gpus = 2048
nic_gbps = 400
nic = "connectx-7"

[constraints]
max_oversubscription = 1.0

[search]
families = ["clos"]
switch_models = ["qm9700"]
max_tiers = 2

[verify]
routing = ["spray"]
single_switch_failures = false
traffic = [{{ kind = "random_permutation", size_bytes = 16777216 }}]

[life]
horizon_years = 5
discount_rate = {rate}
gpu_hour_usd = 2.0
gpu_hours_per_moved_link = {hours}
generations = [{{ name = "g1", nic_gbps = 400 }}]
phases = [
  {{ at_years = 0, gpus = 512, generation = "g1" }},
  {{ at_years = 2, gpus = 2048, generation = "g1", price_factor = {factor} }},
]
"""


def instance(tmp_path: Path, **values: Any) -> Instance:
    path = tmp_path / "life.toml"
    path.write_text(TWO_PHASES.format(**({"rate": 0.05, "hours": 0.5, "factor": 1.0} | values)))
    return load_instance(path)


@pytest.fixture(scope="module")
def lives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LifePlan]:
    """The same growth where moves are dear (build ahead) and where spines get cheap (later)."""
    tmp = tmp_path_factory.mktemp("life")
    return {
        "ahead": plan_life(instance(tmp, hours=200.0), time_limit_s=120),
        "later": plan_life(instance(tmp, hours=0.01, factor=0.5, rate=0.10), time_limit_s=120),
    }


@pytest.mark.parametrize(
    ("case", "spines", "moved"),
    [("ahead", [32, 32], [0, 0]), ("later", [8, 32], [0, 16 * 24])],
)
def test_each_decision_binds_in_the_plan(
    lives: dict[str, LifePlan], case: str, spines: list[int], moved: list[int]
) -> None:
    """Dear moves build the 32 spines at once; cheap moves and halved prices add 24 later."""
    table = lives[case].table
    assert table["top_devices"].to_list() == spines
    # Adding 24 spines to 8 moves 24 of each installed leaf's 32 uplinks: 16 leaves x 24.
    assert table["links_recabled"].to_list() == moved


@pytest.mark.parametrize("case", ["ahead", "later"])
def test_every_phase_is_validated_and_simulated(lives: dict[str, LifePlan], case: str) -> None:
    life = lives[case].families["clos"]
    assert all(d is not None for d in life.designs)
    assert [d.tiers[-1].switches for d in life.designs if d] == life.table["top_devices"].to_list()
    assert life.table["violations"].to_list() == [0, 0]
    assert all(f is not None and f > 0.9 for f in life.table["fraction_of_ideal"].to_list())


@pytest.mark.parametrize("case", ["ahead", "later"])
def test_the_totals_are_the_phase_table_summed(lives: dict[str, LifePlan], case: str) -> None:
    plan = lives[case]
    row = plan.totals.row(0, named=True)
    assert row["total_present_usd"] == pytest.approx(
        plan.table["present_cost_usd"].sum(), rel=REL_TOL
    )
    assert row["capex_usd"] == pytest.approx(plan.table["capex_usd"].sum(), rel=REL_TOL)
    assert plan.table["cumulative_present_usd"][-1] == pytest.approx(
        row["total_present_usd"], rel=REL_TOL
    )


def test_the_life_is_the_hand_arithmetic(lives: dict[str, LifePlan]) -> None:
    """Undiscounted parts by hand from the block shape: capex, energy, moved links."""
    plan = lives["later"]
    life = plan.families["clos"]
    shape = life.shapes["g1"]
    assert (shape.groups, shape.group_uplinks, shape.gpus) == (1, 32, 32)
    inst = plan.instance
    assert inst.life is not None
    # Phase 0: 16 leaves and 8 spines at catalog prices; phase 1: 48 leaves and 24 spines at half.
    capex = [
        16 * shape.block_usd + 8 * shape.top_usd,
        0.5 * (48 * shape.block_usd + 24 * shape.top_usd),
    ]
    assert plan.table["capex_usd"].to_list() == pytest.approx(capex, rel=REL_TOL)
    power_w = [16 * shape.block_w + 8 * shape.top_w, 64 * shape.block_w + 32 * shape.top_w]
    assert (plan.table["power_kw"] * 1e3).to_list() == pytest.approx(power_w, rel=REL_TOL)
    r = inst.life.discount_rate
    usd_per_wh = inst.objective.energy_usd_per_kwh * inst.objective.pue / 1e3

    # Present value by hand: capex at (1 + r)^-t, power as a continuous annuity, moves at t.
    def annuity(a: float, b: float) -> float:
        return ((1 + r) ** -a - (1 + r) ** -b) / math.log(1 + r)

    hand = (
        capex[0]
        + capex[1] * (1 + r) ** -2
        + power_w[0] * usd_per_wh * HOURS_PER_YEAR * annuity(0, 2)
        + power_w[1] * usd_per_wh * HOURS_PER_YEAR * annuity(2, 5)
        + 16 * 24 * inst.life.gpu_hours_per_moved_link * inst.life.gpu_hour_usd * (1 + r) ** -2
    )
    assert plan.totals["total_present_usd"][0] == pytest.approx(hand, rel=REL_TOL)


def test_an_instance_without_a_life_is_refused(tmp_path: Path) -> None:
    from planner.errors import InputError

    inst = instance(tmp_path).with_changes({"life": None})
    with pytest.raises(InputError, match=r"no \[life\] section"):
        plan_life(inst)


@pytest.mark.parametrize("case", ["ahead", "later"])
def test_the_cost_curve_climbs_to_the_life(lives: dict[str, LifePlan], case: str) -> None:
    """The picture's curve: never falls, jumps at each phase, and ends at the life's total."""
    plan = lives[case]
    curve = cost_curve(plan)
    values = curve["cumulative_present_usd"].to_list()
    assert all(b >= a - 1e-6 for a, b in zip(values, values[1:], strict=False))
    assert values[-1] == pytest.approx(plan.totals["total_present_usd"][0], rel=REL_TOL)
    assert curve["at_years"].max() == plan.instance.life.horizon_years  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def standing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The design.json of the 512-GPU fabric a solve built (the first phase's size)."""
    from planner.planning import plan

    tmp = tmp_path_factory.mktemp("standing")
    inst = instance(tmp).with_changes({"cluster.gpus": 512, "life": None})
    design = plan(inst, time_limit_s=60, alternatives=False, verify=False).design
    assert design is not None
    path = tmp / "design.json"
    path.write_text(design.to_json())
    return path


def test_a_life_grows_from_the_fabric_standing(tmp_path: Path, standing: Path) -> None:
    """What stands is not bought again; growing its spines re-cables its leaves."""
    from planner.planning import load_design

    design = load_design(standing)
    spines = design.tiers[-1].switches
    inst = instance(tmp_path, hours=0.01, factor=0.5, rate=0.10)
    inst = inst.with_changes({"life.installed": str(standing)})
    plan = plan_life(inst, time_limit_s=120)
    table = plan.table
    # The first phase holds just what stands: nothing is bought, the spines are kept.
    assert table["blocks_added"].to_list() == [0, 48]
    assert table["capex_usd"][0] == 0.0
    assert table["top_devices"].to_list() == [spines, 32]
    # Phase 1 adds 32 - spines spines: each of the 16 standing leaves moves its share.
    moved = 16 * -(-32 * (32 - spines) // 32)
    assert table["links_recabled"].to_list() == [0, moved]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"cluster.nic_gbps": 200}, "links run at 400G"),
        (
            {
                "life.phases": [
                    {"at_years": 0, "gpus": 256, "generation": "g1"},
                    {"at_years": 2, "gpus": 2048, "generation": "g1"},
                ]
            },
            "more than the first phase",
        ),
    ],
)
def test_a_standing_fabric_that_does_not_fit_is_refused(
    tmp_path: Path, standing: Path, change: dict[str, Any], match: str
) -> None:
    from planner.errors import InputError

    inst = instance(tmp_path).with_changes({"life.installed": str(standing)})
    if "cluster.nic_gbps" in change:
        gens = [{"name": "g1", "nic_gbps": 200}]
        inst = inst.with_changes({"life.generations": gens, "cluster.nic_gbps": 200})
    else:
        inst = inst.with_changes(change)
    with pytest.raises(InputError, match=match):
        plan_life(inst, time_limit_s=60)


@pytest.mark.parametrize(
    ("text", "match"), [("{not json", "not valid JSON"), ('{"family": "clos"}', "design.json")]
)
def test_a_standing_file_that_is_not_a_design_is_refused(
    tmp_path: Path, text: str, match: str
) -> None:
    from planner.errors import InputError

    bad = tmp_path / "bad.json"
    bad.write_text(text)
    inst = instance(tmp_path).with_changes({"life.installed": str(bad)})
    with pytest.raises(InputError, match=match):
        plan_life(inst, time_limit_s=60)


def test_a_relative_standing_path_is_read_against_the_instance(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "life.toml"
    text = TWO_PHASES.format(rate=0.05, hours=0.5, factor=1.0)
    path.write_text(text.replace("[life]\n", '[life]\ninstalled = "built/design.json"\n'))
    inst = load_instance(path)
    assert inst.life is not None
    assert inst.life.installed == str(tmp_path / "sub" / "built" / "design.json")


def test_a_refresh_buys_the_blocks_again_and_drains_them(tmp_path: Path) -> None:
    """Phase 1 replaces 8 of the 16 standing leaves by a second generation of the same wiring."""
    text = TWO_PHASES.format(rate=0.05, hours=200.0, factor=1.0)
    text = text.replace(
        'generations = [{ name = "g1", nic_gbps = 400 }]',
        'generations = [{ name = "g1", nic_gbps = 400 }, { name = "g2", nic_gbps = 400 }]',
    ).replace(
        '{ at_years = 2, gpus = 2048, generation = "g1"',
        '{ at_years = 2, gpus = 2048, generation = "g2", refresh_gpus = 256',
    )
    path = tmp_path / "refresh.toml"
    path.write_text(text)
    plan = plan_life(load_instance(path), time_limit_s=120)
    table = plan.table
    shape = plan.families["clos"].shapes["g2"]
    assert table["blocks_refreshed"].to_list() == [0, 8]
    assert table["blocks_added"].to_list() == [16, 48]
    life = plan.instance.life
    assert life is not None
    # Dear moves build the spines ahead: phase 1 buys 56 leaves and drains the 8 replaced.
    assert table["capex_usd"][1] == pytest.approx(56 * shape.block_usd, rel=REL_TOL)
    assert table["gpu_hours_disturbed"][1] == pytest.approx(
        8 * 32 * life.gpu_hours_per_refreshed_gpu, rel=REL_TOL
    )
