"""Ctrl-C that stops a run, even inside a CP-SAT solve.

CP-SAT catches SIGINT by default (``SatParameters.catch_sigint_signal``): a Ctrl-C during a solve
ends that solve as if its time limit had run out, the search goes on to the next structure, and
the run finishes as if nothing happened. Worse, once the solve returns, OR-Tools resets SIGINT to
the default action, so a later Ctrl-C kills the process on the spot, without cleanup.

:func:`interruptible` fixes both for the span of a command, without touching the models:

* every ``CpSolver.solve`` runs with ``catch_sigint_signal = False``, so Python's own SIGINT
  handler stays installed and raises ``KeyboardInterrupt`` once control returns to Python;
* a watcher thread, woken through ``signal.set_wakeup_fd`` the moment a SIGINT arrives (the
  solver holds no GIL while it searches), calls ``stop_search`` on the solves in progress, so
  control does return to Python promptly.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

_lock = threading.Lock()
_active: set[Any] = set()


def _stop_all() -> None:
    with _lock:
        solvers = list(_active)
    for solver in solvers:
        solver.stop_search()


def _watch(sock: socket.socket) -> None:
    while True:
        try:
            data = sock.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            _stop_all()


#: The unpatched ``CpSolver.solve`` while a patch is in place.
_original: Any = None
#: Open ``interruptible`` blocks.
_depth = 0


def _solve(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``CpSolver.solve`` without CP-SAT's own SIGINT handler, stoppable by the watcher."""
    self.parameters.catch_sigint_signal = False
    with _lock:
        _active.add(self)
    try:
        return _original(self, *args, **kwargs)
    finally:
        with _lock:
            _active.discard(self)


def patch_cp_sat() -> None:
    """Route CP-SAT solves through the watcher, if a block is open and CP-SAT is loaded.

    ``interruptible`` calls it on entry, and ``planner.api`` once it has loaded the solvers, so a
    command whose input is bad never pays for loading OR-Tools.
    """
    global _original
    module = sys.modules.get("ortools.sat.python.cp_model")
    if _depth == 0 or _original is not None or module is None:
        return
    _original = module.CpSolver.solve
    module.CpSolver.solve = _solve


def _unpatch() -> None:
    global _original
    module = sys.modules.get("ortools.sat.python.cp_model")
    if _original is not None and module is not None:
        module.CpSolver.solve = _original
    _original = None


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C raises KeyboardInterrupt promptly, CP-SAT solves included.

    Only in the main thread (signals are delivered there); elsewhere it does nothing.
    """
    global _depth
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    _depth += 1
    patch_cp_sat()
    watcher = threading.Thread(target=_watch, args=(reader,), daemon=True)
    watcher.start()
    try:
        yield
    finally:
        _unpatch()
        _depth -= 1
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        writer.close()
        reader.shutdown(socket.SHUT_RDWR)
        reader.close()
