"""Issue 32: the parallelism search ([workload.search]) reads the command's deadline.

The deadlines run on fake clocks: ``Ticks`` counts its readings, so a search stops after a
given number of the deadline's checks, however fast or loaded the machine is.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner import api
from planner.deadline import CUT_NOTE_PREFIX, Deadline
from planner.planning import _chosen_parallelism
from planner.schema.workload import Workload
from planner.workload.analytic import bandwidths
from planner.workload.parallelism_search import (
    _fast,
    analytic_step,
    choose,
    layouts,
    search,
    searched,
    with_chosen_parallelism,
)
from tests.conftest import REPO_ROOT

INSTANCES = REPO_ROOT / "instances"
NVLINK4_400G = bandwidths(domain_gpus=8, scale_up_gbps_per_gpu=3600, nic_gbps=400)
H100 = {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0, "memory_gib": 80}
#: A 10B model on 32 GPUs: a few dozen layouts fit, enough to cut the search part way.
SMALL: dict[str, Any] = {
    "model": {
        "parameters": 10e9,
        "layers": 16,
        "hidden_size": 4096,
        "attention_heads": 32,
        "sequence_length_tokens": 2048,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 8, "pipeline": 4},
    "gpu": H100 | {"memory_gib": 24},
    "search": {
        "micro_batch_sequences": [1, 2],
        "virtual_stages": [1, 2],
        "recompute": ["none", "selective", "full"],
        "zero_stages": [0, 1, 3],
    },
}
REL = 1e-12


class Ticks:
    """A clock that moves one second at every reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def ticking_deadline(readings: int) -> Deadline:
    """A deadline that passes at its clock's reading number ``readings``; every inner check
    comes due (its pace moves a second a reading, more than ``POLL_S``)."""
    return Deadline(at_s=float(readings), clock=Ticks(), pace=Ticks())


def small() -> Workload:
    return Workload.model_validate(SMALL)


def test_a_deadline_passed_before_the_search_leaves_the_given_layout() -> None:
    w = small()
    found, cut = searched(w, 32, NVLINK4_400G, deadline=Deadline(-1.0))
    assert (found, cut) == (None, True)
    choice = choose(w, NVLINK4_400G, deadline=Deadline(-1.0))
    assert choice.workload.parallelism == w.parallelism
    assert choice.workload.search is None
    assert choice.table["layout"].to_list() == ["given"]
    assert choice.note is not None
    assert "before it timed any layout" in choice.note


@pytest.mark.parametrize("readings", [8, 16, 40])
def test_a_search_cut_part_way_keeps_the_best_layout_it_timed(readings: int) -> None:
    w = small()
    whole = search(w, 32, NVLINK4_400G)
    assert whole is not None
    assert not whole.cut
    found = search(w, 32, NVLINK4_400G, deadline=ticking_deadline(readings))
    assert found is not None
    assert found.cut
    assert 0 < found.timed < whole.timed
    # The best of the layouts timed before the cut, in the enumeration's order.
    first = list(layouts(w, 32, NVLINK4_400G.domain_gpus))[: found.timed]
    best = min(analytic_step(_fast(w, x), NVLINK4_400G).step_s for x in first)
    assert found.step.step_s == pytest.approx(best, rel=REL)
    assert found.step.step_s >= whole.step.step_s
    choice = choose(w, NVLINK4_400G, deadline=ticking_deadline(readings))
    assert choice.note is not None
    assert f"after timing {found.timed:,} layouts" in choice.note
    assert choice.table["layout"].to_list() == ["given", "chosen"]


def test_a_search_with_time_left_is_whole_and_says_nothing() -> None:
    choice = choose(small(), NVLINK4_400G, deadline=Deadline.after(3600.0))
    assert choice.note is None
    assert choice.workload.search is None


def test_the_plan_chooses_once_within_the_command_deadline() -> None:
    """The instance a plan goes on with has no [workload.search] left: no later step (the
    verification, the bandwidth loop's rungs) searches again, past the deadline."""
    inst = api.load_instance(INSTANCES / "workload-gpt3-175b-search.toml")
    chosen, table, cut = _chosen_parallelism(inst, Deadline(-1.0))
    assert chosen.workload is not None
    assert inst.workload is not None
    assert chosen.workload.search is None
    assert chosen.workload.parallelism == inst.workload.parallelism
    assert table is not None
    assert cut is not None
    assert with_chosen_parallelism(chosen) is chosen


@pytest.mark.slow
def test_a_cut_search_is_said_in_the_design_notes() -> None:
    inst = api.load_instance(INSTANCES / "workload-gpt3-175b-search.toml")
    result = api.plan(inst, verify=False, deadline=Deadline.after(120.0), time_limit_s=120.0)
    assert result.design is not None
    assert not [n for n in result.design.notes if "parallelism search" in n]
    cut = api.plan(inst, verify=False, deadline=ticking_deadline(4), time_limit_s=120.0)
    notes = [n for n in cut.design.notes if "parallelism search" in n] if cut.design else []
    assert notes
    assert notes[0].startswith(CUT_NOTE_PREFIX)


@pytest.mark.parametrize(
    ("deadline", "words"),
    [
        (Deadline(-1.0), "parallelism search: the given layout stands (tensor 8, pipeline 4"),
        (Deadline.after(3600.0), "layouts timed"),
    ],
)
def test_the_choice_is_a_progress_line(deadline: Deadline, words: str) -> None:
    inst = api.load_instance(INSTANCES / "workload-gpt3-175b-search.toml")
    seen: list[tuple[int, int, str]] = []
    _chosen_parallelism(inst, deadline, lambda d, t, label: seen.append((d, t, label)))
    assert len(seen) == 1
    assert words in seen[0][2]
    assert ("cut by the time limit" in seen[0][2]) is False
