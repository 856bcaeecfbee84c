"""Root causes found by the hostile-input generator, each pinned by a direct test."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from models.scaling import usd_to_units, w_to_units
from planner.api import plan
from planner.errors import InputError
from planner.families.ocs_direct import circuits as ocs
from planner.families.ocs_torus.pod import plan_torus
from planner.loading import load_catalog
from planner.output import (
    LOCK,
    MANIFEST_FORMAT,
    MARKER,
    STAGING_PREFIX,
    FolderBusy,
    Writer,
    is_complete,
    read_manifest,
    text_writer,
    write_set,
)
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


def test_demand_that_stays_inside_blocks_engineers_uniform_circuits(catalog: Catalog) -> None:
    # compare-fabrics with consecutive groups of 2 GPUs: no byte leaves a block, and the
    # engineering raised "the demand matrix has no positive entry".
    inst = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False, time_limit_s=20)
    assert result.design is not None
    blocks = result.design.pods
    inside = np.diag(np.full(blocks, 1e9))
    got = ocs.engineer(result.design, inside, time_limit_s=10)
    uniform = ocs.engineer(result.design, None, time_limit_s=10)
    assert got.circuits == uniform.circuits


def _torus(**torus: object) -> Instance:
    spec = {"cube": 4, "slices": [[4, 4, 8]], "cube_availability": 0.995} | torus
    return Instance.model_validate({"name": "pod", "cluster": {"gpus": 64}, "torus": spec})


def test_a_slice_with_no_twisted_form_stays_a_plain_torus(catalog: Catalog) -> None:
    # twisted = true on a 4x4x4 slice raised "a twisted torus needs a k x k x 2k ... shape".
    result = plan_torus(_torus(slices=[[4, 4, 4], [4, 4, 8]]), catalog)
    rows = result.slices.to_dicts()
    assert [r["twisted"] for r in rows] == [False, True]
    assert all(r["torus_ok"] for r in rows)


def test_a_pod_too_large_for_the_ocs_is_no_pod(catalog: Catalog) -> None:
    # Spares found but too few OCS ports: the row said spares=N with no price, and the CLI
    # printed a pod and failed formatting its missing capex.
    result = plan_torus(_torus(slices=[[16, 16, 16]] * 3), catalog)
    pod = result.pod.row(0, named=True)
    assert pod["status"] == "infeasible"
    assert pod["spares"] is None
    assert pod["cubes"] is None
    assert pod["capex_usd"] is None
    assert "ports per OCS" in pod["reason"]
    assert result.slices.is_empty()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e300, 1e18])
def test_scaling_refuses_what_cp_sat_cannot_hold(value: float) -> None:
    # A cap of 1e300 became a 300-digit integer that CP-SAT's API refused with a TypeError;
    # inf raised OverflowError.
    with pytest.raises(ValueError, match="beyond what the integer models hold"):
        usd_to_units(value)
    with pytest.raises(ValueError, match="beyond what the integer models hold"):
        w_to_units(value)


def test_scaling_keeps_what_it_can_hold() -> None:
    assert usd_to_units(1e13) == 10**15
    assert w_to_units(1e10) == 10**13


@pytest.mark.parametrize("routing", ["direct", "wcmp"])
def test_an_ocs_device_can_be_named_in_a_failure(catalog: Catalog, routing: str) -> None:
    # 'ocsN' is documented for verify.failures, but the name pattern left it out:
    # "unknown switch 'ocs0'; expected one of leafN, spineN, circuitN".
    from planner.families import fabric_of
    from planner.schema.verify import FailureSpec
    from planner.sim.scenarios import named_scenario

    inst = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"], "ocs_routing": routing},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False, time_limit_s=20)
    assert result.design is not None
    fabric = fabric_of(result.design)
    scenario = named_scenario(fabric, FailureSpec(switches=["ocs0"]))
    failed = scenario.failed_fabric(fabric)
    assert failed is not None  # the device's circuits are gone: less capacity between blocks
    assert failed.capacity_gbps.sum() < fabric.capacity_gbps.sum()
    with pytest.raises(InputError, match="ocs99.*no such (OCS )?device"):
        named_scenario(fabric, FailureSpec(switches=["ocs99"]))


# ---- folder states: the report folder's rule holds for every file the planner writes ----------
# Each test builds a hostile state in a folder and writes a set into it with
# planner.output.write_set, the one door every command (and a study) writes through.
def _text(data: str) -> Writer:
    return text_writer(data)


def _digest(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


def _manifest(listed: dict[str, str], **changes: object) -> dict[str, object]:
    """A manifest as the planner writes it, listing ``listed`` (name -> content), then changed."""
    data: dict[str, object] = {
        "writer": "fabric-planner",
        "format": MANIFEST_FORMAT,
        "set": "0" * 32,
        "command": "solve",
        "complete": True,
        "written_utc": "2026-01-01T00:00:00+00:00",
        "files": {name: _digest(text) for name, text in listed.items()},
        "staging": "",
        "replaces": {},
    }
    data.update(changes)
    return data


def _json(data: object) -> bytes:
    return json.dumps(data).encode()


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A folder holding one set the planner wrote: summary.csv and report.md."""
    folder = tmp_path / "out"
    write_set(folder, {"summary.csv": _text("v1"), "report.md": _text("# v1")}, command="solve")
    return folder


def test_a_dangling_lock_link_creates_nothing_outside(written: Path, tmp_path: Path) -> None:
    # The lock was a file opened with O_CREAT: through a dangling link it created the target.
    target = tmp_path / "outside.lock"
    (written / LOCK).symlink_to(target)
    write_set(written, {"summary.csv": _text("v2")}, command="solve")
    assert not target.exists()
    assert (written / LOCK).is_symlink()  # not the planner's: left alone
    assert (written / "summary.csv").read_text() == "v2"


def test_a_set_leaves_no_lock_file_and_removes_an_old_empty_one(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    write_set(folder, {"summary.csv": _text("v1")}, command="solve")
    assert not (folder / LOCK).exists()
    (folder / LOCK).write_bytes(b"")  # what older versions left behind
    write_set(folder, {"summary.csv": _text("v2")}, command="solve")
    assert sorted(p.name for p in folder.iterdir()) == [MARKER, "summary.csv"]


def test_the_folder_itself_is_the_lock(written: Path) -> None:
    fd = os.open(written, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(FolderBusy, match="another fabric-planner run is writing"):
            write_set(written, {"summary.csv": _text("v2")}, command="solve")
    finally:
        os.close(fd)
    assert (written / "summary.csv").read_text() == "v1"
    assert not (written / LOCK).exists()


@pytest.fixture
def no_folder_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system that cannot flock a folder, as NFS (an exclusive lock needs a writable file)."""
    real = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)


@pytest.mark.usefixtures("no_folder_locks")
def test_where_folders_cannot_be_locked_a_lock_file_is_held_then_removed(written: Path) -> None:
    seen: list[bool] = []

    def summary(path: Path) -> None:
        seen.append((written / LOCK).is_file())
        path.write_text("v2")

    write_set(written, {"summary.csv": summary}, command="solve")
    assert seen == [True]
    assert not (written / LOCK).exists()
    assert (written / "summary.csv").read_text() == "v2"


@pytest.mark.usefixtures("no_folder_locks")
def test_where_folders_cannot_be_locked_a_held_lock_file_makes_the_folder_busy(
    written: Path,
) -> None:
    fd = os.open(written / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(FolderBusy):
            write_set(written, {"summary.csv": _text("v2")}, command="solve")
    finally:
        os.close(fd)
    assert (written / "summary.csv").read_text() == "v1"


@pytest.mark.usefixtures("no_folder_locks")
@pytest.mark.parametrize("kind", ["dangling-symlink", "their-file", "fifo"])
def test_where_folders_cannot_be_locked_a_lock_that_is_not_ours_is_refused(
    written: Path, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "outside.lock"
    if kind == "dangling-symlink":
        (written / LOCK).symlink_to(target)
    elif kind == "their-file":
        (written / LOCK).write_text("theirs")
    else:
        os.mkfifo(written / LOCK)
    with pytest.raises(InputError, match=r"\.fabric-planner\.lock"):
        write_set(written, {"summary.csv": _text("v2")}, command="solve")
    assert not target.exists()
    assert os.path.lexists(written / LOCK)
    assert (written / "summary.csv").read_text() == "v1"


#: Markers that are not a valid manifest, each listing summary.csv with its true SHA-256 (so a
#: planner that trusted them would replace or remove the user's file); from the path of a file
#: outside the folder, which some of them name.
BAD_MARKERS: dict[str, Callable[[Path], bytes]] = {
    "not-json": lambda _: b"This folder holds fabric-planner output; solve may rewrite it.\n",
    "not-utf8": lambda _: b"\xff\xfe{}",
    "not-an-object": lambda _: b"[]",
    "no-writer": lambda _: _json(_manifest({"summary.csv": "mine"}, writer="someone-else")),
    "format-1": lambda _: _json(_manifest({"summary.csv": "mine"}, format=1)),
    "format-3": lambda _: _json(_manifest({"summary.csv": "mine"}, format=3)),
    "files-a-list": lambda _: _json(_manifest({}, files=["summary.csv"])),
    "complete-a-string": lambda _: _json(_manifest({"summary.csv": "mine"}, complete="yes")),
    "digest-not-hex": lambda _: _json(_manifest({}, files={"summary.csv": "x" * 64})),
    "name-with-a-slash": lambda _: _json(_manifest({"summary.csv": "mine", "sub/x.csv": "mine"})),
    "name-dot-dot": lambda _: _json(_manifest({"summary.csv": "mine", "../outside.csv": "mine"})),
    "absolute-name": lambda outside: _json(
        _manifest({"summary.csv": "mine", str(outside): "mine"})
    ),
    "reserved-name": lambda _: _json(_manifest({"summary.csv": "mine", LOCK: "mine"})),
    "staging-outside": lambda _: _json(
        _manifest({"summary.csv": "mine"}, complete=False, staging="../outside")
    ),
    "replaces-dot-dot": lambda _: _json(
        _manifest({"summary.csv": "mine"}, replaces={"../outside.csv": _digest("mine")})
    ),
}


def _bad_marker(tmp_path: Path, kind: str) -> Path:
    """A folder with the user's summary.csv and notes.txt, a file beside it, and a bad marker."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "summary.csv").write_text("mine")
    (folder / "notes.txt").write_text("keep me")
    outside = tmp_path / "outside.csv"
    outside.write_text("mine")
    (folder / MARKER).write_bytes(BAD_MARKERS[kind](outside))
    return folder


def _untouched(folder: Path) -> None:
    assert (folder / "summary.csv").read_text() == "mine"
    assert (folder / "notes.txt").read_text() == "keep me"
    assert (folder.parent / "outside.csv").read_text() == "mine"


@pytest.mark.parametrize("kind", BAD_MARKERS)
def test_a_marker_that_is_no_manifest_is_refused_without_force(tmp_path: Path, kind: str) -> None:
    folder = _bad_marker(tmp_path, kind)
    with pytest.raises(InputError, match=r"is not a fabric-planner manifest .*--force"):
        write_set(folder, {"report.md": _text("# new")}, command="solve")
    _untouched(folder)
    assert not (folder / "report.md").exists()


@pytest.mark.parametrize("kind", BAD_MARKERS)
def test_force_beside_a_marker_that_is_no_manifest_replaces_and_removes_nothing(
    tmp_path: Path, kind: str
) -> None:
    folder = _bad_marker(tmp_path, kind)
    with pytest.raises(InputError, match=r"holds summary\.csv, not written by fabric-planner"):
        write_set(folder, {"summary.csv": _text("new")}, command="solve", force=True)
    _untouched(folder)
    write_set(folder, {"report.md": _text("# new")}, command="solve", force=True)
    _untouched(folder)
    assert (folder / "report.md").read_text() == "# new"
    manifest = read_manifest(folder)
    assert manifest is not None
    assert manifest.valid
    assert set(manifest.files) == {"report.md"}


@pytest.mark.parametrize("kind", ["symlink", "folder", "fifo"])
@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_marker_that_is_no_file_is_never_replaced(
    written: Path, tmp_path: Path, kind: str, force: bool
) -> None:
    # A link to another folder's manifest would let that manifest vouch for files here.
    other = tmp_path / "other"
    write_set(other, {"summary.csv": _text("mine")}, command="solve")
    (written / MARKER).unlink()
    (written / "summary.csv").write_text("mine")
    if kind == "symlink":
        (written / MARKER).symlink_to(other / MARKER)
    elif kind == "folder":
        (written / MARKER).mkdir()
    else:
        os.mkfifo(written / MARKER)
    with pytest.raises(
        InputError, match=rf"\.fabric-planner is a {'FIFO' if kind == 'fifo' else ''}"
    ):
        write_set(written, {"summary.csv": _text("v2")}, command="solve", force=force)
    assert (written / "summary.csv").read_text() == "mine"
    assert (other / MARKER).is_file()


def _make_entry(path: Path, kind: str, target: Path) -> None:
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "dangling-symlink":
        path.symlink_to(target.with_name("nowhere"))
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


ENTRY_KINDS = {
    "symlink": "a symbolic link",
    "dangling-symlink": "a symbolic link",
    "fifo": "a FIFO",
    "folder": "a folder",
}


@pytest.mark.parametrize("kind", ENTRY_KINDS)
@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_an_entry_that_is_no_file_where_a_file_goes_is_refused_by_name(
    written: Path, tmp_path: Path, kind: str, force: bool
) -> None:
    target = tmp_path / "target.csv"
    target.write_text("v1")  # the content the planner wrote: the link's target looks like ours
    (written / "summary.csv").unlink()
    _make_entry(written / "summary.csv", kind, target)
    with pytest.raises(InputError, match=rf"summary\.csv \({ENTRY_KINDS[kind]}\)"):
        write_set(written, {"summary.csv": _text("v2")}, command="solve", force=force)
    assert target.read_text() == "v1"
    assert (written / "report.md").read_text() == "# v1"


@pytest.mark.parametrize("kind", ENTRY_KINDS)
def test_an_entry_that_is_no_file_where_an_old_file_was_is_left_alone(
    written: Path, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "target.csv"
    target.write_text("v1")
    (written / "summary.csv").unlink()
    _make_entry(written / "summary.csv", kind, target)
    write_set(written, {"report.md": _text("# v2")}, command="solve")  # summary.csv goes
    assert os.path.lexists(written / "summary.csv")
    assert target.read_text() == "v1"
    assert is_complete(written)


def test_a_linked_staging_folder_moves_nothing_in_from_outside(
    written: Path, tmp_path: Path
) -> None:
    # A killed swap's manifest names a staging folder; here it is a link to the user's folder.
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "summary.csv").write_text("their summary")
    staging = STAGING_PREFIX + "f" * 32
    (written / staging).symlink_to(theirs)
    (written / MARKER).write_text(
        json.dumps(
            _manifest(
                {"summary.csv": "their summary"},
                complete=False,
                staging=staging,
                replaces={"summary.csv": _digest("v1"), "report.md": _digest("# v1")},
            )
        )
    )
    write_set(written, {"report.md": _text("# v2")}, command="solve")
    assert (theirs / "summary.csv").read_text() == "their summary"
    assert sorted(p.name for p in theirs.iterdir()) == ["summary.csv"]
    assert (written / staging).is_symlink()  # not the planner's: left alone
    assert is_complete(written)


def test_a_killed_swap_is_not_finished_over_a_file_put_in_its_way(written: Path) -> None:
    staging = STAGING_PREFIX + "e" * 32
    (written / staging).mkdir()
    (written / staging / "bom.csv").write_text("staged")
    (written / MARKER).write_text(
        json.dumps(
            _manifest(
                {"bom.csv": "staged", "summary.csv": "v1"},
                complete=False,
                staging=staging,
                replaces={"summary.csv": _digest("v1")},
            )
        )
    )
    (written / "bom.csv").write_text("my bom")
    with pytest.raises(InputError, match=r"holds bom\.csv, not written by fabric-planner"):
        write_set(written, {"summary.csv": _text("v2")}, command="solve")
    assert (written / "bom.csv").read_text() == "my bom"


def test_a_hard_link_to_a_report_keeps_its_content(written: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.csv"
    os.link(written / "summary.csv", kept)
    write_set(written, {"summary.csv": _text("v2"), "report.md": _text("# v2")}, command="solve")
    assert kept.read_text() == "v1"
    assert (written / "summary.csv").read_text() == "v2"
    write_set(written, {"report.md": _text("# v3")}, command="solve")  # summary.csv goes
    assert kept.read_text() == "v1"
    assert not (written / "summary.csv").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_anything_is_written(written: Path) -> None:
    written.chmod(0o555)
    try:
        with pytest.raises(InputError, match="cannot write into"):
            write_set(written, {"summary.csv": _text("v2")}, command="solve")
    finally:
        written.chmod(0o755)
    assert (written / "summary.csv").read_text() == "v1"


def _study(folder: Path) -> None:
    """A study's folder as planner.study writes it: its set, and parts/ beside it."""
    write_set(folder, {"study.json": _text("{}"), "study.csv": _text("a")}, command="sweep")
    (folder / "parts").mkdir()
    (folder / "parts" / "k.parquet").write_text("part")


@pytest.mark.parametrize("command", ["solve", "simulate", "torus", "simulate --htsim"])
def test_another_commands_set_is_replaced_only_with_force(tmp_path: Path, command: str) -> None:
    folder = tmp_path / "study"
    _study(folder)
    with pytest.raises(InputError, match=r"holds the output of `sweep` \(2 files: study\.csv"):
        write_set(folder, {"report.md": _text("# r")}, command=command)
    assert (folder / "study.json").is_file()
    write_set(folder, {"report.md": _text("# r")}, command=command, force=True)
    assert sorted(p.name for p in folder.iterdir()) == [MARKER, "parts", "report.md"]
    assert (folder / "parts" / "k.parquet").read_text() == "part"


@pytest.mark.parametrize(
    ("first", "then"),
    [("solve", "simulate"), ("simulate", "solve"), ("solve", "torus"), ("torus", "solve")],
)
def test_report_commands_share_a_folder(tmp_path: Path, first: str, then: str) -> None:
    folder = tmp_path / "out"
    write_set(folder, {"summary.csv": _text("v1")}, command=first)
    write_set(folder, {"summary.csv": _text("v2")}, command=then)
    assert (folder / "summary.csv").read_text() == "v2"
