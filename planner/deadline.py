"""The end of a command's time limit, shared by every step it runs (search, engineering, simulation).

``--time-limit`` bounds the whole command: the search takes what it needs of it, and each later
step asks how much is left. A step that finds the time gone is not started and is reported as cut,
so the command ends at about the limit plus the one step that was running when it passed.
"""

from __future__ import annotations

import math
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

    @classmethod
    def after(
        cls,
        seconds: float | None,
        clock: Callable[[], float] = time.perf_counter,
        pace: Callable[[], float] = time.perf_counter,
    ) -> Deadline:
        """The deadline ``seconds`` from now (None: never)."""
        return cls(None if seconds is None else clock() + seconds, clock, pace=pace)

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


def suggest_time_limit_s(elapsed_s: float, step_s: Sequence[float], steps_cut: int) -> float | None:
    """A ``--time-limit`` under which the steps a run left out would have run too.

    elapsed + HINT_MARGIN x steps_cut x max(step_s): the time this run took, plus every cut step
    at the longest time a step that ran took (one stopped while running included: its time so
    far). With no step run, HINT_FALLBACK_FACTOR x elapsed. Rounded up (``nice_ceil``); None
    when nothing was cut.
    """
    if steps_cut <= 0:
        return None
    if not step_s:
        return nice_ceil(HINT_FALLBACK_FACTOR * max(elapsed_s, MIN_STEP_S))
    return nice_ceil(elapsed_s + HINT_MARGIN * steps_cut * max(step_s))


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
