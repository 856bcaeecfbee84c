"""OCS circuit assignment: validators.

``check_problem`` (everything wrong with a problem's data, run by ``build``) and
``validate_assignment`` (an assignment checked from the raw data alone, independent of the
model).

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from models.ocs_assignment.data import Assignment, AssignmentProblem, Key, Pair

#: Circuits from which ``validate_assignment`` first checks in bulk (numpy) and walks the
#: circuits one by one only when the bulk check finds something to say.
BULK_CHECK_FROM = 10_000

# --------------------------------------------------------------------------- validation


def check_problem(p: AssignmentProblem) -> list[str]:
    """Everything wrong with a problem's data (empty when it can be built)."""
    issues: list[str] = []
    n, m = p.blocks, p.devices
    if n < 0 or m < 0:
        return [f"negative size: {n} blocks, {m} devices"]
    if len(p.ports) != n or any(len(row) != m for row in p.ports):
        issues.append(f"ports must be {n} x {m}")
    elif any(v < 0 for row in p.ports for v in row):
        issues.append("ports must be non-negative")
    pairs: set[Pair] = set()
    for i, j, x in p.circuits:
        if not 0 <= i < j < n:
            issues.append(f"circuit pair ({i}, {j}) must have 0 <= i < j < {n}")
        if x < 0:
            issues.append(f"x[{i},{j}] = {x} is negative")
        if (i, j) in pairs:
            issues.append(f"pair ({i}, {j}) listed twice")
        pairs.add((i, j))
    keys: set[Key] = set()
    for i, j, o, y in p.current:
        if not (0 <= i < j < n and 0 <= o < m):
            issues.append(f"current ({i}, {j}, {o}) is out of range")
        if y <= 0:
            issues.append(f"current y0[{i},{j},{o}] = {y} must be positive")
        if (i, j, o) in keys:
            issues.append(f"current ({i}, {j}, {o}) listed twice")
        keys.add((i, j, o))
    issues += [f"failed device {o} out of range" for o in p.failed_devices if not 0 <= o < m]
    issues += [f"failed block {b} out of range" for b in p.failed_blocks if not 0 <= b < n]
    return issues


def validate_assignment(problem: AssignmentProblem, assignment: Assignment) -> list[str]:
    """Everything wrong with an assignment, recomputed from the raw data alone.

    Independent of the model: it uses none of the functions above. Checks indices, that every
    OCS port carries at most one circuit (per block and OCS, the circuits through it are at most
    its ports), that no circuit sits on a failed OCS or block, that no pair gets more circuits
    than asked (exactly as many unless failures or best effort allow fewer), the kept circuits
    under ``keep_surviving``, and the reported counts. Large assignments are first checked in
    bulk (``_clean``); the messages come from the walk below, which runs when that finds a fault.
    """
    if len(assignment.circuits) >= BULK_CHECK_FROM and _clean(problem, assignment):
        return []
    issues: list[str] = []
    if not assignment.status.has_solution:
        if assignment.circuits:
            issues.append(f"status {assignment.status} comes with circuits")
        return issues
    n, m = problem.blocks, problem.devices
    asked = {(i, j): x for i, j, x in problem.circuits}
    got: Counter[tuple[int, int]] = Counter()
    used: Counter[tuple[int, int]] = Counter()
    seen: set[tuple[int, int, int]] = set()
    for i, j, o, y in assignment.circuits:
        if not (0 <= i < j < n and 0 <= o < m):
            issues.append(f"circuit ({i}, {j}, {o}) is out of range")
            continue
        if y <= 0:
            issues.append(f"circuit ({i}, {j}, {o}) has count {y}")
        if (i, j, o) in seen:
            issues.append(f"circuit ({i}, {j}, {o}) listed twice")
        seen.add((i, j, o))
        if o in problem.failed_devices:
            issues.append(f"{y} circuit(s) {i}-{j} on failed OCS {o}")
        for b in (i, j):
            if b in problem.failed_blocks:
                issues.append(f"{y} circuit(s) {i}-{j} on OCS {o} use failed block {b}")
        got[i, j] += y
        used[i, o] += y
        used[j, o] += y
    for (b, o), count in sorted(used.items()):
        if count > problem.ports[b][o]:
            issues.append(f"block {b} uses {count} ports on OCS {o}, has {problem.ports[b][o]}")
    for pair, count in sorted(got.items()):
        if count > asked.get(pair, 0):
            issues.append(f"pair {pair} has {count} circuits, asked {asked.get(pair, 0)}")
    partial = problem.best_effort or problem.failed_devices or problem.failed_blocks
    if not partial:
        for pair, x in sorted(asked.items()):
            if got[pair] != x:
                issues.append(f"pair {pair} has {got[pair]} circuits, asked exactly {x}")
    realised = sum(got.values())
    requested = sum(asked.values())
    if assignment.realised != realised:
        issues.append(f"realised {assignment.realised} reported, {realised} found")
    if assignment.requested != requested:
        issues.append(f"requested {assignment.requested} reported, {requested} asked")
    if realised > requested:
        issues.append(f"realised {realised} exceeds requested {requested}")
    before = {(i, j, o): y for i, j, o, y in problem.current}
    after = {(i, j, o): y for i, j, o, y in assignment.circuits}
    keys = before.keys() | after.keys()
    removed = sum(max(0, before.get(k, 0) - after.get(k, 0)) for k in keys)
    added = sum(max(0, after.get(k, 0) - before.get(k, 0)) for k in keys)
    if (assignment.removed, assignment.added) != (removed, added):
        issues.append(
            f"churn (removed, added) = ({assignment.removed}, {assignment.added}) reported, "
            f"({removed}, {added}) found"
        )
    if problem.keep_surviving:
        for (i, j, o), y0 in sorted(before.items()):
            alive = o not in problem.failed_devices and not {i, j} & problem.failed_blocks
            if alive and after.get((i, j, o), 0) < y0:
                issues.append(f"surviving circuit(s) {i}-{j} on OCS {o} were not kept")
    return issues


def _clean(problem: AssignmentProblem, assignment: Assignment) -> bool:
    """Whether ``validate_assignment`` has nothing to say, decided on arrays (True: no issue).

    The same rules, in bulk: False whenever any of them could fail, so the walk then finds
    and words every issue.
    """
    if not assignment.status.has_solution:
        return not assignment.circuits
    n, m = problem.blocks, problem.devices
    y = np.array(assignment.circuits, dtype=np.int64).reshape(-1, 4)
    i, j, o, k = y.T
    if not ((0 <= i) & (i < j) & (j < n) & (0 <= o) & (o < m) & (k > 0)).all():
        return False
    key = (i * n + j) * m + o
    if len(np.unique(key)) != len(key):
        return False
    if problem.failed_devices and np.isin(o, list(problem.failed_devices)).any():
        return False
    if problem.failed_blocks:
        dead = list(problem.failed_blocks)
        if (np.isin(i, dead) | np.isin(j, dead)).any():
            return False
    ports = np.array(problem.ports, dtype=np.int64).reshape(n, m)
    used = np.bincount(
        np.concatenate([i, j]) * m + np.concatenate([o, o]),
        weights=np.concatenate([k, k]),
        minlength=n * m,
    )
    if (used > ports.ravel()).any():
        return False
    got = np.bincount(i * n + j, weights=k, minlength=n * n).astype(np.int64)
    asked = np.zeros(n * n, dtype=np.int64)
    for a, b, x in problem.circuits:
        if not 0 <= a < b < n:
            return False
        asked[a * n + b] = x
    if (got > asked).any():
        return False
    partial = problem.best_effort or problem.failed_devices or problem.failed_blocks
    if not partial and (got != asked).any():
        return False
    realised, requested = int(got.sum()), int(asked.sum())
    if (assignment.realised, assignment.requested) != (realised, requested):
        return False
    if realised > requested:
        return False
    y0 = np.array(problem.current, dtype=np.int64).reshape(-1, 4)
    if (
        len(y0)
        and not (
            (0 <= y0[:, 0])
            & (y0[:, 0] < y0[:, 1])
            & (y0[:, 1] < n)
            & (0 <= y0[:, 2])
            & (y0[:, 2] < m)
        ).all()
    ):
        return False
    both = np.concatenate([(y0[:, 0] * n + y0[:, 1]) * m + y0[:, 2], key])
    change = np.concatenate([-y0[:, 3], k])
    _, slot = np.unique(both, return_inverse=True)
    delta = np.bincount(slot, weights=change).astype(np.int64)
    if (assignment.removed, assignment.added) != (
        int(-delta[delta < 0].sum()),
        int(delta[delta > 0].sum()),
    ):
        return False
    if problem.keep_surviving and len(y0):
        alive = ~np.isin(y0[:, 2], list(problem.failed_devices)) & ~(
            np.isin(y0[:, 0], list(problem.failed_blocks))
            | np.isin(y0[:, 1], list(problem.failed_blocks))
        )
        # A surviving circuit is kept when y >= y0 on its key: where y0 lists a key once, that
        # key's change is y - y0 >= 0.
        _, counts = np.unique(slot[: len(y0)], return_counts=True)
        if (counts > 1).any() or (delta[slot[: len(y0)]][alive] < 0).any():
            return False
    return True
