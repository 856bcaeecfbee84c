"""The hostile inputs of ``inputs`` run through the commands: instance files, ``--set`` values
and paths (devices, FIFOs, folders, names that leave the folder) through every command that reads
an instance, catalog files, design.json edits, texts and random mutations through validate and
simulate, mutations of the example instances, bad command lines; and the legitimately valid
inputs at the edges, which must give an answer.
"""

from __future__ import annotations

from planner.cli.typer_app import EXIT_FAILS
from tests.hostile.cases_base import (
    ANY_ANSWER,
    INSTANCE_COMMANDS,
    NONE_OR_BAD,
    REAL_DESIGN,
    Case,
    Content,
    _design_json,
    _instance_args,
    small_text,
    torus_text,
)
from tests.hostile.inputs import (
    design_mutations,
    design_random_mutations,
    design_texts,
    hostile_catalogs,
    hostile_instances,
    hostile_sets,
    instance_mutations,
)


def command_cases() -> list[Case]:
    """The hostile inputs through the commands, in a fixed order."""
    out: list[Case] = []
    small = small_text().encode()

    for name, kind, content, words in hostile_instances():
        for command in INSTANCE_COMMANDS:
            files: dict[str, Content] = {"instance.toml": content}
            kind_here = f"instance: {kind}"
            if command == "simulate":
                files["design.json"] = REAL_DESIGN
                kind_here = f"--instance: {kind}"
            out.append(
                Case(
                    f"{command}/instance/{name}",
                    command,
                    kind_here,
                    _instance_args(command),
                    files,
                    words=("instance.toml", *words),
                )
            )

    for name, kind, items, words in hostile_sets():
        for command in INSTANCE_COMMANDS:
            files = {"instance.toml": small}
            args = _instance_args(command)
            if command == "torus":
                files = {"instance.toml": torus_text().encode()}
            expected = words
            if command == "simulate":
                # simulate takes verify.* only: the others are refused by name.
                files["design.json"] = REAL_DESIGN
                args = ("simulate", "design.json", "-o", "out", "-q")
                heads = [i.split("=", 1)[0][:20] for i in items]
                others = [h for h in heads if not h.startswith("verify.")]
                expected = (others[0] or "path",) if others else words
            elif command == "evaluate" and name == "catalog-device":
                expected = ("search.pin",)  # evaluate asks for its pins before it reads a catalog
            set_args = tuple(a for i in items for a in ("--set", i))
            out.append(
                Case(
                    f"{command}/set/{name}",
                    command,
                    f"--set: {kind}",
                    args + set_args,
                    files,
                    words=expected,
                )
            )

    devices = [
        ("dev-zero", "device", "/dev/zero", ("/dev/zero", "not a regular file")),
        ("dev-urandom", "device", "/dev/urandom", ("/dev/urandom", "not a regular file")),
        ("fifo", "device", "fifo.toml", ("fifo.toml", "not a regular file")),
        ("folder", "device", "folder", ("folder", "folder")),
        ("missing", "device", "missing.toml", ("missing.toml", "not found")),
        ("nul-in-path", "nul in name", "a\x00b.toml", ("null byte",)),
        ("dotdot-path", "name with ..", "../../../../../../../dev/zero", ("not a regular file",)),
    ]
    for name, kind, target, words in devices:
        files = {"fifo.toml": None, "folder/keep": b"", "design.json": REAL_DESIGN}
        for command in INSTANCE_COMMANDS:
            args = tuple(target if a == "instance.toml" else a for a in _instance_args(command))
            where = "--instance" if command == "simulate" else "instance"
            out.append(
                Case(
                    f"{command}/{where.strip('-')}-path/{name}",
                    command,
                    f"{where}: {kind}",
                    args,
                    dict(files),
                    words=words,
                )
            )
        for command, args in (
            ("validate", ("validate", target)),
            ("simulate", ("simulate", target, "-o", "out", "-q")),
            ("catalog", ("catalog", "--catalog", target)),
            ("validate", ("validate", "design.json", "--catalog", target)),
        ):
            out.append(
                Case(
                    f"{command}/path/{'catalog-' if '--catalog' in args else ''}{name}",
                    command,
                    f"{'catalog file: ' if '--catalog' in args else 'design.json: '}{kind}",
                    args,
                    dict(files),
                    words=words,
                )
            )
        text = small_text().replace("[layout]", f'[search]\ncatalog = "{target}"\n\n[layout]')
        out.append(
            Case(
                f"solve/search-catalog/{name}",
                "solve",
                f"search.catalog: {kind}",
                _instance_args("solve"),
                {**files, "instance.toml": text.encode()},
                words=("NUL",) if "\x00" in target else words,
            )
        )

    for name, kind, content, words, reason in hostile_catalogs():
        files = {"catalog.toml": content, "design.json": REAL_DESIGN}
        text = small_text().replace("[layout]", '[search]\ncatalog = "catalog.toml"\n\n[layout]')
        runs = [
            ("catalog", ("catalog", "--catalog", "catalog.toml")),
            ("validate", ("validate", "design.json", "--catalog", "catalog.toml")),
            ("solve", _instance_args("solve")),
            ("compare-fabrics", _instance_args("compare-fabrics")),
        ]
        for command, args in runs:
            out.append(
                Case(
                    f"{command}/catalog/{name}",
                    command,
                    f"catalog file: {kind}",
                    args,
                    {**files, "instance.toml": text.encode()},
                    words=("catalog.toml", *words),
                    output_side=reason,
                )
            )

    for name, kind, edit, words in design_mutations():
        for command, args in (
            ("validate", ("validate", "design.json")),
            # No -o: the design's own instance name would choose the folder.
            ("simulate", ("simulate", "design.json", "-q")),
        ):
            out.append(
                Case(
                    f"{command}/design/{name}",
                    command,
                    f"design.json: {kind}",
                    args,
                    {"design.json": edit},
                    words=("design.json", *words),
                    outputs=("reports",),
                )
            )
    # The catalog a design names is read by validate like any other catalog file.
    for name, kind, target, words in (
        ("dev-zero", "device", "/dev/zero", ("/dev/zero", "not a regular file")),
        ("folder", "device", "/", ("folder",)),
        ("missing", "device", "missing.toml", ("missing.toml", "not found")),
        ("passwd", "name with ..", "../../../../../../etc/passwd", ("passwd",)),
    ):
        out.append(
            Case(
                f"validate/design-catalog/{name}",
                "validate",
                f"design.json: {kind}",
                ("validate", "design.json"),
                {"design.json": _design_json(lambda d, t=target: d.update(catalog=t))},
                words=words,
            )
        )
    for name, kind, content, words in design_texts():
        for command, args in (
            ("validate", ("validate", "design.json")),
            ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
        ):
            out.append(
                Case(
                    f"{command}/design-text/{name}",
                    command,
                    f"design.json: {kind}",
                    args,
                    {"design.json": content},
                    words=("design.json", *words),
                )
            )
    randoms = [
        (name, edit, both)
        for base, count, both in (("small", 40, True), ("h100", 30, False), ("ocs", 30, False))
        for name, edit in design_random_mutations(count, base=base)
    ]
    for i, (name, edit, both) in enumerate(randoms):
        runs = [("validate", ("validate", "design.json"))]
        if both or i % 3 == 0:  # simulate a third of the larger designs' mutations (time)
            runs.append(("simulate", ("simulate", "design.json", "-o", "out", "-q")))
        for command, args in runs:
            out.append(
                Case(
                    f"{command}/design-random/{name}",
                    command,
                    "design.json: random mutation",
                    args,
                    {"design.json": edit},
                    exit=ANY_ANSWER,
                )
            )

    commands = ("solve", "evaluate", "compare-fabrics", "torus")
    for i, (name, _example, text) in enumerate(instance_mutations()):
        command = commands[i % len(commands)]
        out.append(
            Case(
                f"{command}/example-mutation/{name}",
                command,
                "instance: example mutation",
                _instance_args(command),
                {"instance.toml": text},
                words=("instance.toml",),
            )
        )

    for name, args, words in (
        ("unknown-option", ("schema", "--bogus"), ("--bogus",)),
        ("extra-argument", ("schema", "extra"), ("extra",)),
        ("catalog-value", ("schema", "--catalog=yes"), ("--catalog",)),
        ("nul-argument", ("schema", "\x00"), ()),
        ("catalog-kind-bogus", ("catalog", "--kind", "router"), ("--kind",)),
    ):
        command = args[0]
        out.append(Case(f"{command}/usage/{name}", command, "command line", args, words=words))
    return out


def valid_edge_cases() -> list[Case]:
    """Valid inputs at the edges of what the inputs allow, in a fixed order."""
    out: list[Case] = []
    small = small_text().encode()
    # Legitimately valid inputs at the edges: they must give an answer (0 or 1), not a traceback.
    edge_caps = (
        "constraints.max_latency_ns=1e9",
        "constraints.max_power_kw=1e7",
        "constraints.max_capex_usd=1e13",
    )
    out += [
        Case(
            "solve/valid/largest-caps",
            "solve",
            "--set: edge of the caps",
            _instance_args("solve") + tuple(a for c in edge_caps for a in ("--set", c)),
            {"instance.toml": small},
            exit=frozenset({0}),
        ),
        Case(
            "torus/valid/untwistable-slice",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.slices=[[4,4,4],[4,4,8]]"),
            {"instance.toml": torus_text().encode()},
            exit=frozenset({0}),
        ),
        Case(
            "torus/valid/pod-too-large-for-ocs",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.slices=[[16,16,16],[16,16,16],[16,16,16]]"),
            {"instance.toml": torus_text().encode()},
            exit=frozenset({1}),
        ),
        Case(
            "torus/valid/cube-of-one",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.cube=1", "--set", "torus.twisted=false"),
            {"instance.toml": torus_text().encode()},
            exit=NONE_OR_BAD,
        ),
        Case(
            "validate/valid/real-design",
            "validate",
            "design.json: valid",
            ("validate", "design.json"),
            {"design.json": REAL_DESIGN},
            exit=frozenset({0}),
        ),
        Case(
            "schema/valid/instance",
            "schema",
            "command line",
            ("schema",),
            exit=frozenset({0}),
        ),
        Case(
            "catalog/valid/default",
            "catalog",
            "command line",
            ("catalog",),
            exit=frozenset({0}),
        ),
        Case(
            "solve/valid/leaf-lost-on-one-plane",
            "solve",
            "--set: failures",
            ("solve", "instance.toml", "-o", "out", "--time-limit", "5", "-q")
            + (
                "--set",
                'verify.failures=[{switches=["leaf0"]}]',
                "--set",
                "verify.routing=['spray']",
            ),
            {"instance.toml": small},
            exit=frozenset({0, 1, EXIT_FAILS}),
        ),
    ]
    return out
