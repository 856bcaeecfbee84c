"""Generator of malformed and hostile inputs for every command of the CLI (issue 9).

Each case is a folder of files, a command line run inside that folder, the exit statuses it may
end with, and words its message must hold (the file or the field at fault). The cases are made
from the example instances, from real design.json files (one of every family) and from a real
study folder, deterministically (fixed seeds), so a failure names a case that can be re-run
alone. ``python -m tests.hostile.generator`` prints the counts per command, per input kind and
per surface (the input kind before its ':').

Surfaces: instance files, ``--set`` values, catalogs, design.json (the three planned designs and
a design of every family, ``design.json (<family>)``), ``sweep --grid`` values and options,
study folders (``study.json``, ``parts/``, the manifest and the lock of a folder ``sweep``
resumes), and ``[workload]`` sections (every field at its extremes, inconsistent parallelism).

This module assembles the case lists of the modules that make them (``cases_base``: the
``Case`` and shared helpers; ``inputs``: the hostile inputs; ``command_cases``,
``runtime_cases``, ``sweep_cases``, ``study_cases``, ``workload_cases``, ``family_cases`` and
the ``round3_*``/``round4_*`` modules: the cases), and keeps the names the tests import.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from tests.hostile.cases_base import BAD as BAD
from tests.hostile.cases_base import COMMANDS as COMMANDS
from tests.hostile.cases_base import INSTANCES as INSTANCES
from tests.hostile.cases_base import PART as PART
from tests.hostile.cases_base import REAL_DESIGN as REAL_DESIGN
from tests.hostile.cases_base import STUDY_ARGS as STUDY_ARGS
from tests.hostile.cases_base import Case as Case
from tests.hostile.cases_base import Content as Content
from tests.hostile.cases_base import Designs as Designs
from tests.hostile.cases_base import Folder as Folder
from tests.hostile.cases_base import Link as Link
from tests.hostile.cases_base import StudyCopy as StudyCopy
from tests.hostile.cases_base import _design_json as _design_json
from tests.hostile.cases_base import _instance_args as _instance_args
from tests.hostile.cases_base import drop_key as drop_key
from tests.hostile.cases_base import set_path as set_path
from tests.hostile.cases_base import small_text as small_text
from tests.hostile.cases_base import sweep_args as sweep_args
from tests.hostile.command_cases import command_cases, valid_edge_cases
from tests.hostile.family_cases import family_design_cases
from tests.hostile.runtime_cases import runtime_cases
from tests.hostile.study_cases import study_folder_cases
from tests.hostile.sweep_cases import sweep_grid_cases
from tests.hostile.workload_cases import workload_cases
from tests.hostile.workload_cases import workload_text as workload_text

#: Cases made in loops over commands that expose a bug outside the inputs' files, by id.
KNOWN_BUGS: dict[str, str] = {}


# ---- the cases ---------------------------------------------------------------------------------
def cases() -> list[Case]:
    """Every generated case, in a fixed order."""
    out: list[Case] = []
    out += command_cases()
    out += runtime_cases()
    out += sweep_grid_cases()
    out += study_folder_cases()
    out += workload_cases()
    out += family_design_cases()
    # Round three (issue 32): one module a category, each a cases() of its own.
    from tests.hostile import round3_figures, round3_goodput, round3_limits, round3_studies

    for module in (round3_figures, round3_goodput, round3_limits, round3_studies):
        out += module.cases()
    # Round four (issue 33): the routing a design carries and the inputs that choose it.
    from tests.hostile import round4_routing

    out += round4_routing.cases()
    out += valid_edge_cases()
    return [replace(c, known_bug=KNOWN_BUGS.get(c.id, c.known_bug)) for c in out]


def counts(all_cases: list[Case]) -> tuple[Counter[str], Counter[str]]:
    """Cases per command and per input kind (the part of the kind before any ':' detail)."""
    return Counter(c.command for c in all_cases), Counter(c.kind for c in all_cases)


def main() -> None:
    """Print the counts per command, per input kind, and per surface and command."""
    all_cases = cases()
    by_command, by_kind = counts(all_cases)
    print(f"{len(all_cases)} cases")
    print("per command:")
    for k, v in sorted(by_command.items()):
        print(f"  {k:<18} {v}")
    print("per input kind:")
    for k, v in sorted(by_kind.items()):
        print(f"  {k:<52} {v}")
    print(f"marked output side (xfail): {sum(1 for c in all_cases if c.output_side)}")
    print(f"marked known bug (xfail strict): {sum(1 for c in all_cases if c.known_bug)}")
    print(f"marked slow: {sum(1 for c in all_cases if c.slow)}")
    print(f"subprocess only: {sum(1 for c in all_cases if c.subprocess_only)}")
    surfaces = sorted({c.kind.split(":")[0] for c in all_cases})
    short = {"compare-fabrics": "compare", "validate": "valid."}
    print("input surface x command:")
    print(" " * 30 + "".join(f"{short.get(c, c):>9}" for c in COMMANDS) + "    total")
    for surface in surfaces:
        row = Counter(c.command for c in all_cases if c.kind.split(":")[0] == surface)
        print(
            f"{surface:<30}"
            + "".join(f"{row.get(c, 0):>9}" for c in COMMANDS)
            + f"{sum(row.values()):>9}"
        )


if __name__ == "__main__":
    main()
