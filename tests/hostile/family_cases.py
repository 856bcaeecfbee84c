"""design.json cases of every family (``tests.hostile.family_designs``): each family's real
design mutated per category, wired as another family, or mutated at random, through validate and
simulate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.hostile.cases_base import (
    ANY_ANSWER,
    Case,
    DesignEdit,
    Designs,
    _design_json,
    set_path,
)
from tests.hostile.family_designs import FAMILY_INSTANCES
from tests.hostile.inputs import design_random_mutations

# ---- design.json of every family -----------------------------------------------------------------
#: Every family, as ``tests.hostile.family_designs`` plans one (a test keeps it the registry).
FAMILIES = tuple(FAMILY_INSTANCES)
#: The wiring kind of each family (clos and ocs_direct share the up-down wiring).
WIRING_KIND = {"clos": "up_down", "ocs_direct": "up_down"}


def _foreign_wiring(family: str) -> DesignEdit:
    """The design of ``family`` wired as the next family in ``FAMILIES`` with another kind."""

    def make(designs: Designs) -> Any:
        data = json.loads(json.dumps(designs[family]))
        own = WIRING_KIND.get(family, family)
        i = FAMILIES.index(family)
        other = next(f for f in FAMILIES[i + 1 :] + FAMILIES[:i] if WIRING_KIND.get(f, f) != own)
        wiring = dict(designs[other]["wiring"])
        if "rails" in data["wiring"] and "rails" in wiring:  # the same SU, another rail kind
            wiring = {**data["wiring"], "kind": wiring["kind"]}
        data["wiring"] = wiring
        return data

    return make


def _wiring_param(value: Any) -> Callable[[dict[str, Any]], None]:
    """Set the first parameter of the design's wiring (up-down has none: add one)."""

    def edit(d: dict[str, Any]) -> None:
        params = [k for k in d["wiring"] if k != "kind"]
        d["wiring"][params[0] if params else "bogus"] = value

    return edit


def family_design_cases() -> list[Case]:
    """A design.json of every family, mutated per category, through validate and simulate."""
    setter = set_path
    per_category: list[tuple[str, str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
        ("switches-zero", "zero count", setter("tiers.0.switches", 0), ("tiers.0.switches",)),
        (
            "links-negative",
            "negative count",
            setter("link_classes.0.links", -1),
            ("link_classes.0.links",),
        ),
        ("gpus-string", "wrong type", setter("gpus", "8"), ("gpus",)),
        ("radix-null", "null", setter("tiers.0.radix", None), ("tiers.0.radix",)),
        ("switches-huge", "huge int", setter("tiers.0.switches", 10**30), ("tiers.0.switches",)),
        ("capex-1e300", "inf budget", setter("capex_usd", 1e300), ("capex_usd",)),
        ("family-bogus", "bogus family", setter("family", "hypercube"), ("family",)),
        ("name-dotdot", "name with ..", setter("instance", "../../escape"), ("instance",)),
        ("unknown-key", "design json", setter("tiers.0.bogus", 1), ("bogus",)),
        ("planes-17", "huge int", setter("planes", 17), ("planes",)),
        ("groups-empty", "empty tiers", setter("link_classes.0.groups", []), ("groups",)),
        ("wiring-param-zero", "wiring", _wiring_param(0), ("wiring",)),
        ("wiring-param-string", "wiring", _wiring_param("x"), ("wiring",)),
        (
            "wiring-unknown-kind",
            "wiring",
            setter("wiring", {"kind": "hypercube"}),
            ("wiring", "hypercube"),
        ),
        (
            "no-module-at-the-nic",
            "modules",
            setter("link_classes.0.groups.0.lower_ports_per_module", 0),
            ("link_classes.0.groups.0.lower_ports_per_module", "expected 1 or more"),
        ),
        ("gpus-doubled", "counts that do not add up", lambda d: d.update(gpus=2 * d["gpus"]), ()),
        (
            "class-links-plus-one",
            "counts that do not add up",
            lambda d: d["link_classes"][0].update(links=d["link_classes"][0]["links"] + 1),
            (),
        ),
    ]
    out: list[Case] = []
    for family in FAMILIES:
        edits: list[tuple[str, str, DesignEdit, tuple[str, ...]]] = [
            (name, kind, _design_json(edit, family), words)
            for name, kind, edit, words in per_category
        ]
        edits.append(
            (
                "wiring-of-another-family",
                "wiring",
                _foreign_wiring(family),
                ("wiring.kind", f"the {family} family is wired"),
            )
        )
        if family in ("ocs_torus", "ocs_direct"):
            index = 0 if family == "ocs_torus" else 2
            edits.append(
                (
                    "module-at-the-ocs",
                    "modules",
                    _design_json(
                        setter(f"link_classes.{index}.groups.0.upper_ports_per_module", 1), family
                    ),
                    ("upper_ports_per_module", "OCS mirror"),
                )
            )
        else:
            edits.append(
                (
                    "circuits-without-ocs",
                    "design json",
                    _design_json(setter("circuits", [[0, 1, 0, 1]]), family),
                    ("circuits",),
                )
            )
        for name, kind, edit, words in edits:
            for command, args in (
                ("validate", ("validate", "design.json")),
                ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
            ):
                out.append(
                    Case(
                        f"{command}/design-{family}/{name}",
                        command,
                        f"design.json ({family}): {kind}",
                        args,
                        {"design.json": edit},
                        words=("design.json", *words),
                    )
                )
        for name, edit in design_random_mutations(10, seed=11, base=family):
            out.append(
                Case(
                    f"validate/design-{family}-random/{name}",
                    "validate",
                    f"design.json ({family}): random mutation",
                    ("validate", "design.json"),
                    {"design.json": edit},
                    exit=ANY_ANSWER,
                )
            )
    return out
