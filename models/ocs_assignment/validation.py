"""OCS circuit assignment: validators.

``check_problem`` (everything wrong with a problem's data, run by ``build``) and
``validate_assignment`` (an assignment checked from the raw data alone, independent of the
model).

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

from collections import Counter

from models.ocs_assignment.data import Assignment, AssignmentProblem, Key, Pair

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
    under ``keep_surviving``, and the reported counts.
    """
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
