"""The end of a command's time limit, shared by every step it runs (search, engineering, simulation).

``--time-limit`` bounds the whole command: the search takes what it needs of it, and each later
step asks how much is left. A step that finds the time gone is not started and is reported as cut,
so the command ends at about the limit plus the one step that was running when it passed.

A command run as ``fabric-planner`` counts from its process's start (``Deadline.for_command``:
the interpreter's start-up and the imports are part of the command), and keeps a share of the
limit for writing its reports (``Deadline.keep_for_reports``, ``REPORTS_SHARE``): the search,
the post-solve steps and the simulation end that much earlier, so that the files are written
within the limit too; pictures are drawn only while ``PICTURES_MIN_SHARE`` of the limit is left.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

#: Least time given to a step that must run for the result to exist (engineering the circuits of
#: a chosen OCS design), even when the search used up the limit.
MIN_STEP_S = 1.0
#: A suggested time limit leaves this many times the estimated time of the steps that were cut:
#: a step's time varies with its traffic and with the machine's load.
HINT_MARGIN = 1.5
#: Without a finished step to estimate from, the suggestion is this many times the time spent.
HINT_FALLBACK_FACTOR = 2.0
#: Share of a command's time limit kept for writing its reports (tables, report.md, pictures,
#: report.html): the steps before the writing end this share of the time left earlier. Writing
#: took 3 to 7 s for the 16k-65k-GPU examples on a shared 2-core machine, about twice that
#: under heavy load; 12 s is this share of the default 60 s limit.
REPORTS_SHARE = 0.2
#: Pictures are drawn only while this share of the command's limit is left when the writing
#: starts (half the reports' share), and at least PICTURES_MIN_S; otherwise they are left out,
#: and the report says so.
PICTURES_MIN_SHARE = 0.1
#: Least time (s) left in which pictures are drawn: matplotlib's import and the five pictures
#: of a small design take 1 to 3 s with a core to themselves, those of a 16k-GPU design 5 to 10.
PICTURES_MIN_S = 3.0


@dataclass(frozen=True)
class Deadline:
    """A moment on ``clock`` (seconds) after which no new step starts; None: no limit."""

    at_s: float | None = None
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False)
    started_s: float = field(default_factory=time.perf_counter, compare=False)
    """Real time (``time.perf_counter``) at which the deadline was made: the command's start,
    from which a suggested time limit counts (``suggest_time_limit_s``)."""
    pace: Callable[[], float] = field(default=time.perf_counter, compare=False)
    """The clock that spaces a step's inner readings of ``clock`` (``Watch``, every POLL_S of
    it): real time. A test whose ``clock`` counts its readings passes a ``pace`` that stands
    still, so that only the steps' own readings move it, however long a step takes on a loaded
    machine."""
    kept_share: float = field(default=0.0, compare=False)
    """Share of the command's limit kept for what follows these steps (``keep_for_reports``):
    a suggested time limit (``suggest_time_limit``) leaves it again."""
    limit_s: float | None = field(default=None, compare=False)
    """The whole command's time limit (``for_command``), None where not known."""

    @classmethod
    def after(
        cls,
        seconds: float | None,
        clock: Callable[[], float] = time.perf_counter,
        pace: Callable[[], float] = time.perf_counter,
    ) -> Deadline:
        """The deadline ``seconds`` from now (None: never)."""
        return cls(None if seconds is None else clock() + seconds, clock, pace=pace)

    @classmethod
    def for_command(cls, seconds: float, *, since_process_start: bool = False) -> Deadline:
        """The end of a whole command's ``seconds``, on real time (``time.perf_counter``).

        With ``since_process_start`` (the process is the command: ``fabric-planner ...``) the
        seconds count from the process's start (``process_age_s``), so its interpreter's
        start-up and imports are inside the limit; otherwise (a call from Python, a test) from
        now. ``started_s`` is that start too, from which a suggested limit counts.
        """
        now = time.perf_counter()
        age = process_age_s() if since_process_start else None
        start = now - (age or 0.0)
        return cls(start + seconds, started_s=start, limit_s=seconds)

    def keep_for_reports(self, share: float = REPORTS_SHARE) -> Deadline:
        """The deadline of the steps before a command writes its reports.

        ``share`` of what is left now is kept for the writing (nothing without a limit).
        """
        if self.at_s is None:
            return self
        kept_s = share * self.remaining_s()
        return replace(self, at_s=self.at_s - kept_s, kept_share=share)

    def pictures_fit(self) -> bool:
        """Whether a command still has ``PICTURES_MIN_SHARE`` of its limit to draw pictures in.

        And at least ``PICTURES_MIN_S``. Always without a limit; when the limit is not known,
        ``PICTURES_MIN_S`` alone.
        """
        if self.at_s is None:
            return True
        share_s = 0.0 if self.limit_s is None else PICTURES_MIN_SHARE * self.limit_s
        return self.remaining_s() >= max(PICTURES_MIN_S, share_s)

    @staticmethod
    def cut_note(text: str) -> str:
        """A design note saying what the time limit cut (the module's ``cut_note``).

        For callers that reach this module only through ``planner.api.Deadline`` (the CLI).
        """
        return cut_note(text)

    def suggest_time_limit(self, step_s: Sequence[float], steps_cut: int) -> float | None:
        """``suggest_time_limit_s`` for the steps under this deadline.

        Counted from its start, leaving its ``kept_share`` for the reports again.
        """
        return suggest_time_limit_s(self.elapsed_s(), step_s, steps_cut, self.kept_share)

    def for_step(self, floor_s: float = MIN_STEP_S) -> Deadline:
        """The deadline of a step that must run: what is left, but at least ``floor_s``."""
        seconds = self.step_s(floor_s)
        return replace(self, at_s=self.clock() + seconds)

    def remaining_s(self) -> float:
        """Seconds left (inf without a limit, 0 once passed)."""
        if self.at_s is None:
            return math.inf
        return max(0.0, self.at_s - self.clock())

    @property
    def expired(self) -> bool:
        """Whether the time is up."""
        return self.remaining_s() <= 0.0

    def sooner(self, seconds: float) -> Deadline:
        """The earlier of this deadline and ``seconds`` from now (a share of what is left)."""
        at_s = self.clock() + seconds
        return replace(self, at_s=at_s if self.at_s is None else min(self.at_s, at_s))

    def step_s(self, floor_s: float = MIN_STEP_S) -> float:
        """Time for a step that must run: what is left, but at least ``floor_s``."""
        return max(floor_s, self.remaining_s())

    def elapsed_s(self) -> float:
        """Real seconds since the deadline was made (read from ``time.perf_counter``)."""
        return time.perf_counter() - self.started_s


def nice_ceil(seconds: float) -> float:
    """``seconds`` rounded up to two significant digits (87 -> 87, 123.4 -> 130, 0.3 -> 1)."""
    if seconds <= 1.0:
        return 1.0
    step = 10.0 ** (math.floor(math.log10(seconds)) - 1)
    return math.ceil(seconds / step - 1e-9) * step


def suggest_time_limit_s(
    elapsed_s: float, step_s: Sequence[float], steps_cut: int, kept_share: float = 0.0
) -> float | None:
    """A ``--time-limit`` under which the steps a run left out would have run too.

    elapsed + HINT_MARGIN x steps_cut x max(step_s): the time this run took, plus every cut step
    at the longest time a step that ran took (one stopped while running included: its time so
    far). With no step run, HINT_FALLBACK_FACTOR x elapsed. Divided by 1 - ``kept_share`` when
    the command keeps that share of its limit for writing its reports
    (``Deadline.keep_for_reports``). Rounded up (``nice_ceil``); None when nothing was cut.
    """
    if steps_cut <= 0:
        return None
    if not step_s:
        needed_s = HINT_FALLBACK_FACTOR * max(elapsed_s, MIN_STEP_S)
    else:
        needed_s = elapsed_s + HINT_MARGIN * steps_cut * max(step_s)
    return nice_ceil(needed_s / (1.0 - kept_share))


def process_age_s() -> float | None:
    """Seconds since this process started, from Linux's ``/proc`` (None where unknown).

    ``/proc/self/stat``'s 22nd field is the start in clock ticks since boot, ``/proc/uptime``'s
    first the seconds since boot, both counted on the same (boot-time) clock.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            stat = f.read()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime_s = float(f.read().split()[0])
        # The command name (field 2) is in parentheses and may hold spaces: fields after it.
        fields = stat.rsplit(")", 1)[1].split()
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    age_s = uptime_s - started_s
    return age_s if math.isfinite(age_s) and age_s >= 0.0 else None


#: No limit at all.
NO_DEADLINE = Deadline()

#: Least real time (s) between two readings of a deadline's clock inside one step: a reading is
#: cheap, but steps shorter than this never read it, so the steps' order of readings stays the
#: same as without inner checks (what a test clock that ticks per reading relies on).
POLL_S = 0.25


#: How a design's note on a step the time limit cut begins: ``report.md`` and the command's stderr
#: list these notes (``cut_notes``), so that what a cut left different is always said.
CUT_NOTE_PREFIX = "time limit: "


def cut_note(text: str) -> str:
    """A design note saying what the time limit cut (``CUT_NOTE_PREFIX`` and ``text``)."""
    return CUT_NOTE_PREFIX + text


def cut_notes(notes: Sequence[str]) -> list[str]:
    """The notes that say what the time limit cut, in order."""
    return [n for n in notes if n.startswith(CUT_NOTE_PREFIX)]


class DeadlineExpired(Exception):
    """The deadline passed inside a step; the step stops and is reported as cut."""


@dataclass
class Watch:
    """A deadline checked inside one step, from its start (``Deadline.watch``)."""

    deadline: Deadline
    next_poll_s: float | None = None
    """When (on the deadline's ``pace``) the deadline's clock is read next; None: POLL_S from
    the watch's start."""

    def __post_init__(self) -> None:
        if self.next_poll_s is None:
            self.next_poll_s = self.deadline.pace() + POLL_S

    def check(self) -> None:
        """Raise ``DeadlineExpired`` when the time is up (reads the clock at most every POLL_S)."""
        if self.deadline.at_s is None:
            return
        now = self.deadline.pace()
        assert self.next_poll_s is not None
        if now < self.next_poll_s:
            return
        self.next_poll_s = now + POLL_S
        if self.deadline.expired:
            raise DeadlineExpired("the time limit passed inside a step")


def watch(deadline: Deadline) -> Watch:
    """A ``Watch`` on ``deadline`` for a step starting now."""
    return Watch(deadline)
