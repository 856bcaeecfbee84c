"""``sweep`` cases: ``--grid`` items that are no grid, grids no study may hold (values the
instance refuses, too many scenarios), bad options and output folders.
"""

from __future__ import annotations

from tests.hostile.cases_base import (
    BAD,
    NONE_OR_BAD,
    SWEEP_GRID,
    SWEEP_OPTIONS,
    Case,
    small_text,
    sweep_args,
)

# ---- sweep: --grid values, scenario values, options ------------------------------------------


def sweep_grid_cases() -> list[Case]:
    """``sweep --grid`` items that are no grid, grids no study may hold, and bad options."""
    small = small_text().encode()
    deep = "[" * 5000 + "]" * 5000
    # (name, kind, grids, extra options, words, exit statuses, known bug)
    rows: list[
        tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], frozenset[int], str]
    ]
    rows = [
        ("no-equals", "grid syntax", ("nonsense",), (), ("--grid", "PATH=V1,V2"), BAD, ""),
        ("empty-path", "grid syntax", ("=64,128",), (), ("--grid", "path"), BAD, ""),
        ("empty-values", "grid syntax", ("cluster.gpus=",), (), ("cluster.gpus",), BAD, ""),
        ("only-commas", "grid syntax", ("cluster.gpus=,,,",), (), ("cluster.gpus",), BAD, ""),
        (
            "given-twice",
            "grid syntax",
            ("cluster.gpus=64", "cluster.gpus=128"),
            (),
            ("given twice",),
            BAD,
            "",
        ),
        ("path-5000-dots", "deep nesting", ("." * 5000 + "=1,2",), (), ("--grid",), BAD, ""),
        (
            "path-20-parts",
            "deep nesting",
            ("cluster." + "a." * 20 + "b=1,2",),
            (),
            ("dotted field path",),
            BAD,
            "",
        ),
        (
            "deep-array",
            "deep nesting",
            (f"cluster.gpus={deep}",),
            (),
            ("nested more than",),
            BAD,
            "",
        ),
        ("int-5000-digits", "huge int", ("cluster.gpus=" + "9" * 5000,), (), ("digits",), BAD, ""),
        ("int-30-digits", "huge int", ("cluster.gpus=64," + "9" * 30,), (), ("64-bit",), BAD, ""),
        ("value-nul", "nul", ('name="a\x00b","c"',), (), ("NUL",), BAD, ""),
        (
            "value-too-long",
            "huge file",
            ("description=" + "x" * 70_000,),
            (),
            ("longer than",),
            BAD,
            "",
        ),
        ("unknown-field", "grid syntax", ("cluster.bogus=1,2",), (), ("bogus",), BAD, ""),
        ("below-a-number", "wrong type", ("cluster.gpus.x=1,2",), (), ("cluster.gpus",), BAD, ""),
        (
            "too-many-scenarios",
            "exhausting value",
            tuple(
                f"{k}={','.join(str(v) for v in range(64, 164))}"
                for k in ("cluster.gpus", "verify.seed", "layout.racks_per_row")
            ),
            (),
            ("1,000,000 scenarios", "at most 100,000"),
            BAD,
            "",
        ),
        (
            "same-value-twice",
            "grid syntax",
            ("cluster.gpus=64,64",),
            (),
            (),  # one scenario (merged; said on stderr unless --quiet)
            frozenset({0}),
            "",
        ),
        # Valid TOML, a value the field refuses: the scenario and the field are named before
        # anything runs.
        (
            "gpus-zero",
            "scenario value",
            ("cluster.gpus=64,0",),
            (),
            ("gpus=0", "cluster.gpus"),
            BAD,
            "",
        ),
        (
            "gpus-negative",
            "scenario value",
            ("cluster.gpus=-8,64",),
            (),
            ("cluster.gpus",),
            BAD,
            "",
        ),
        (
            "gpus-string",
            "scenario value",
            ('cluster.gpus="many",64',),
            (),
            ("cluster.gpus",),
            BAD,
            "",
        ),
        (
            "latency-inf",
            "scenario value",
            ("constraints.max_latency_ns=inf,1000",),
            (),
            ("max_latency_ns",),
            BAD,
            "",
        ),
        (
            "latency-nan",
            "scenario value",
            ("constraints.max_latency_ns=nan,1000",),
            (),
            ("max_latency_ns",),
            BAD,
            "",
        ),
        (
            "power-1e300",
            "scenario value",
            ("constraints.max_power_kw=1e300",),
            (),
            ("max_power_kw",),
            BAD,
            "",
        ),
        (
            "capex-minus-inf",
            "scenario value",
            ("constraints.max_capex_usd=-inf",),
            (),
            ("max_capex_usd",),
            BAD,
            "",
        ),
        (
            "family-bogus",
            "scenario value",
            ('search.families=["hypercube"],["clos"]',),
            (),
            ("search.families",),
            BAD,
            "",
        ),
        (
            "family-bare-word",
            "scenario value",
            ("search.families=clos,hypercube",),
            (),
            ("search.families",),
            BAD,
            "",
        ),
        (
            "monte-carlo-100k",
            "scenario value",
            ("verify.monte_carlo_trials=1,100000",),
            (),
            ("monte_carlo_trials",),
            BAD,
            "",
        ),
        ("seed-negative", "scenario value", ("verify.seed=-1,1",), (), ("verify.seed",), BAD, ""),
        ("name-dotdot", "scenario value", ('name="../../escape","x"',), (), ("name",), BAD, ""),
        ("cluster-scalar", "scenario value", ("cluster=1,2",), (), ("cluster",), BAD, ""),
        (
            "nic-ports-zero",
            "scenario value",
            ("cluster.nic_ports=[0],[1]",),
            (),
            ("cluster.nic_ports",),
            BAD,
            "",
        ),
        (
            "traffic-bogus",
            "scenario value",
            ('verify.traffic=[{kind="nope"}]',),
            (),
            ("verify.traffic",),
            BAD,
            "",
        ),
        (
            "workload-without-model",
            "scenario value",
            ("workload.parallelism.data=2,4",),
            (),
            ("workload",),
            BAD,
            "",
        ),
        # Refused when the scenario is planned (a catalog that is no file, one GPU): an error
        # row, exit 1 (documented), or exit 2 once scenarios are checked before anything runs.
        (
            "catalog-device",
            "scenario value",
            ('search.catalog="/dev/zero","default"',),
            (),
            ("/dev/zero",),
            NONE_OR_BAD,
            "",
        ),
        ("one-gpu", "scenario value", ("cluster.gpus=1,2",), (), ("gpus=1",), NONE_OR_BAD, ""),
        # Options.
        ("workers-zero", "options", (SWEEP_GRID,), ("--workers", "0"), ("--workers",), BAD, ""),
        ("workers-text", "options", (SWEEP_GRID,), ("--workers", "many"), ("--workers",), BAD, ""),
        (
            "workers-and-dask",
            "options",
            (SWEEP_GRID,),
            ("--workers", "2", "--dask", "tcp://127.0.0.1:9"),
            ("--dask",),
            BAD,
            "",
        ),
        (
            "time-limit-zero",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "0"),
            ("--time-limit",),
            BAD,
            "",
        ),
        (
            "time-limit-nan",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "nan"),
            ("--time-limit",),
            BAD,
            "",
        ),
        (
            "time-limit-inf",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "inf"),
            (),
            frozenset({0, 2}),  # no limit, or refused
            "",
        ),
    ]
    out = []
    for name, kind, grids, extra, words, codes, bug in rows:
        args = sweep_args(*grids) + extra
        out.append(
            Case(
                f"sweep/grid/{name}",
                "sweep",
                f"sweep --grid: {kind}",
                args,
                {"instance.toml": small},
                exit=codes,
                words=words,
                known_bug=bug,
                slow=0 in codes,
            )
        )
    out.append(
        Case(
            "sweep/grid/no-grid",
            "sweep",
            "sweep --grid: grid syntax",
            ("sweep", "instance.toml", *SWEEP_OPTIONS, "-o", "out"),
            {"instance.toml": small},
            words=("at least one --grid",),
        )
    )
    # Where the study is written.
    for name, target, files, words in (
        ("output-is-a-file", "taken.txt", {"taken.txt": b"x"}, ("taken.txt",)),
        ("output-dev-null", "/dev/null", {}, ("/dev/null",)),
        ("output-holds-other-files", "out", {"out/notes.txt": b"mine"}, ("notes.txt",)),
    ):
        out.append(
            Case(
                f"sweep/output/{name}",
                "sweep",
                "sweep --grid: output folder",
                sweep_args(out=target),
                {"instance.toml": small, **files},
                words=words,
            )
        )
    return out
