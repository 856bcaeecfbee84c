"""Routes as data: the fraction of every flow on every directed link, and what is read from it.

``Routes`` holds a sparse matrix (links x flows) in two parts: the explicit part (the NIC links
of every flow, and for ECMP the whole path) and, for spraying, a pattern matrix (links x leaf
pairs, or x halves: ``planner.sim.spray_patterns``) with the pattern of each flow. Loads,
weights, path sums and the connected components of the link-flow graph are read from both.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from planner.sim.fabric import BoolArray, FloatArray, IntArray

#: Values per cell of the space above which ``distinct`` marks a table instead of sorting.
DISTINCT_DENSITY = 1 / 16


def distinct(values: IntArray, space: int) -> IntArray:
    """The distinct values among ``values`` (all in 0..space-1), sorted: ``np.unique``.

    When there are many of them for the space, they are marked in a table of ``space`` cells
    (linear time) instead of sorted.
    """
    if values.size < space * DISTINCT_DENSITY:
        return np.unique(values)
    seen = np.zeros(space, dtype=bool)
    seen[values] = True
    return np.flatnonzero(seen)


def gather_ranges(ptr: IntArray, which: IntArray) -> IntArray:
    """Positions ptr[w] .. ptr[w+1]-1 for every w in ``which``, concatenated."""
    start, stop = ptr[which], ptr[which + 1]
    lengths = stop - start
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(start - np.cumsum(lengths) + lengths, lengths)
    return offsets + np.arange(total)


@dataclass(frozen=True)
class Routes:
    """Fractions of every flow on every directed link (links x flows), explicit plus patterns."""

    flows: int
    links: int
    explicit: sp.csr_matrix
    """links x flows: the NIC links of every flow and, for ECMP, its whole path."""
    patterns: sp.csr_matrix | None
    """links x leaf pairs: the spraying pattern of every leaf pair."""
    flow_pattern: IntArray
    """Pattern (leaf pair, or the up half of one) of each flow, -1 for none."""
    connected: BoolArray
    """Flows that have a route; the others are cut off by failures."""
    flow_pattern_down: IntArray | None = None
    """Second pattern of each flow (-1 for none), when spraying patterns are held in halves
    (``spray_halves``): a flow's fractions are then the sum of its two patterns' columns."""

    @cached_property
    def _pattern_entries(self) -> tuple[IntArray, IntArray]:
        """(flow, pattern) of every pattern a flow uses (one or two per flow)."""
        flows = [np.flatnonzero(self.flow_pattern >= 0)]
        pats = [self.flow_pattern[flows[0]]]
        if self.flow_pattern_down is not None:
            flows.append(np.flatnonzero(self.flow_pattern_down >= 0))
            pats.append(self.flow_pattern_down[flows[1]])
        return np.concatenate(flows), np.concatenate(pats).astype(np.int64)

    def _patterns_of(self, flows: IntArray) -> IntArray:
        """Pattern ids (with repeats) used by these flows."""
        pats = [self.flow_pattern[flows]]
        if self.flow_pattern_down is not None:
            pats.append(self.flow_pattern_down[flows])
        out = np.concatenate(pats)
        return out[out >= 0]

    @cached_property
    def _by_flow(self) -> sp.csc_matrix:
        return self.explicit.tocsc()

    @cached_property
    def _flow_ptr(self) -> IntArray:
        return self._by_flow.indptr.astype(np.int64)

    @cached_property
    def _link_ptr(self) -> IntArray:
        return self.explicit.indptr.astype(np.int64)

    @cached_property
    def _pattern_link_ptr(self) -> IntArray:
        """The pattern matrix's row pointer (per link), as int64."""
        assert self.patterns is not None
        return self.patterns.indptr.astype(np.int64)

    @cached_property
    def components(self) -> tuple[IntArray, IntArray, int]:
        """Connected components of the link-flow graph: (component of each link, of each flow, count).

        Flows in different components share no link, so their rates and completions are
        independent; the simulator advances every component on its own clock.
        """
        L, M = self.links, self.flows
        coo = self.explicit.tocoo()
        rows = [coo.row.astype(np.int64)]
        cols = [L + coo.col.astype(np.int64)]
        n = L + M
        if self.patterns is not None:
            P = self.patterns.shape[1]
            pc = self.patterns.tocoo()
            rows.append(pc.row.astype(np.int64))
            cols.append(L + M + pc.col.astype(np.int64))
            has, pats = self._pattern_entries
            rows.append(L + has)
            cols.append(L + M + pats)
            n += P
        r, c = np.concatenate(rows), np.concatenate(cols)
        graph = sp.coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n, n))
        count, label = connected_components(graph, directed=False)
        return label[:L].astype(np.int64), label[L : L + M].astype(np.int64), int(count)

    @cached_property
    def _pattern_flows(self) -> tuple[IntArray, IntArray]:
        """Flows grouped by pattern: (pointer per pattern, flow ids)."""
        n = 0 if self.patterns is None else self.patterns.shape[1]
        has, pats = self._pattern_entries
        order = has[np.argsort(pats, kind="stable")]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(pats, minlength=n))])
        return ptr.astype(np.int64), order

    def _pattern_sum(self, per_flow: FloatArray) -> FloatArray:
        if self.patterns is None:
            return np.zeros(self.links)
        has, pats = self._pattern_entries
        per_pattern = np.bincount(pats, weights=per_flow[has], minlength=self.patterns.shape[1])
        return np.asarray(self.patterns @ per_pattern)

    def load(self, rate: FloatArray) -> FloatArray:
        """Traffic on every link for these flow rates."""
        return np.asarray(self.explicit @ rate) + self._pattern_sum(rate)

    def weight(self, active: BoolArray) -> FloatArray:
        """Sum over active flows of their fraction on every link."""
        return self.load(active.astype(np.float64))

    def square_load(self, per_flow: FloatArray) -> FloatArray:
        """Sum over flows of (fraction on the link)^2 x ``per_flow``, on every link.

        A flow's two halves (``flow_pattern_down``) cover disjoint links (climbs go up, descents
        down), so squaring each matrix's entries squares the flow's fractions.
        """
        out = np.asarray(self.explicit.power(2) @ per_flow)
        if self.patterns is not None:
            has, pats = self._pattern_entries
            per_pattern = np.bincount(pats, weights=per_flow[has], minlength=self.patterns.shape[1])
            out = out + np.asarray(self.patterns.power(2) @ per_pattern)
        return np.asarray(out, dtype=np.float64)

    def path_sum(self, per_link: FloatArray) -> FloatArray:
        """Per flow: the sum over links of its fraction there x ``per_link`` (its path average)."""
        out = np.asarray(self.explicit.T @ per_link, dtype=np.float64)
        if self.patterns is not None:
            per_pattern = np.asarray(self.patterns.T @ per_link)
            for column in (self.flow_pattern, self.flow_pattern_down):
                if column is not None:
                    on = column >= 0
                    out[on] += per_pattern[column[on]]
        return out

    def weight_of(self, flows: IntArray) -> FloatArray:
        """Sum over the given flows of their fraction on every link, touching only their entries."""
        links, fractions = self.entries_of(flows)
        out: FloatArray = np.bincount(links, weights=fractions, minlength=self.links).astype(
            np.float64
        )
        return out

    def entries_of(
        self, flows: IntArray, scale: FloatArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        """(link, fraction) entries of the given flows, each times its ``scale`` (default 1).

        Links may repeat. A pattern that several of the flows share gives its column once,
        times the sum of their scales.
        """
        per_flow = np.ones(flows.size) if scale is None else np.asarray(scale, dtype=np.float64)
        csc = self._by_flow
        ptr = self._flow_ptr
        pos = gather_ranges(ptr, flows)
        links = [csc.indices[pos].astype(np.int64)]
        fractions = [csc.data[pos] * np.repeat(per_flow, ptr[flows + 1] - ptr[flows])]
        if self.patterns is not None:
            pats = [self.flow_pattern[flows]]
            weights = [per_flow]
            if self.flow_pattern_down is not None:
                pats.append(self.flow_pattern_down[flows])
                weights.append(per_flow)
            pat, weight = np.concatenate(pats), np.concatenate(weights)
            has = pat >= 0
            if has.any():  # only these patterns' columns, each times its flows' scales
                uniq, inverse = np.unique(pat[has], return_inverse=True)
                times = np.bincount(inverse.ravel(), weights=weight[has], minlength=uniq.size)
                cptr, rows, data = self._patterns_by_column
                pos = gather_ranges(cptr, uniq)
                links.append(rows[pos])
                fractions.append(data[pos] * np.repeat(times, cptr[uniq + 1] - cptr[uniq]))
        return np.concatenate(links), np.concatenate(fractions)

    @cached_property
    def _patterns_by_column(self) -> tuple[IntArray, IntArray, FloatArray]:
        """The pattern matrix by column: (pointer per pattern, link of each entry, fraction)."""
        assert self.patterns is not None
        csc = self.patterns.tocsc()
        csc.sort_indices()
        return csc.indptr.astype(np.int64), csc.indices.astype(np.int64), csc.data

    def flows_on_links(self, links: IntArray) -> IntArray:
        """Flows with a positive fraction on any of these links (unique ids)."""
        csr = self.explicit
        pos = gather_ranges(self._link_ptr, links)
        parts = [csr.indices[pos][csr.data[pos] > 0].astype(np.int64)]
        if self.patterns is not None:
            p = self.patterns
            ppos = gather_ranges(self._pattern_link_ptr, links)
            pats = distinct(p.indices[ppos][p.data[ppos] > 0], p.shape[1])
            ptr, flows = self._pattern_flows
            parts.append(flows[gather_ranges(ptr, pats.astype(np.int64))])
        return distinct(np.concatenate(parts), self.flows)

    def touching(self, links: BoolArray) -> BoolArray:
        """Flows with a positive fraction on any of these links, as a mask."""
        hit = np.zeros(self.flows, dtype=bool)
        hit[self.flows_on_links(np.flatnonzero(links))] = True
        return hit

    def subset(self, flows: IntArray) -> Routes:
        """The routes of these flows only, renumbered 0..len(flows)-1."""
        return Routes(
            flows=int(flows.size),
            links=self.links,
            explicit=self._by_flow[:, flows].tocsr(),
            patterns=self.patterns,
            flow_pattern=self.flow_pattern[flows],
            connected=self.connected[flows],
            flow_pattern_down=(
                None if self.flow_pattern_down is None else self.flow_pattern_down[flows]
            ),
        )

    def flows_on(self) -> FloatArray:
        """Number of flows (by fraction) on every link, all flows counted."""
        return self.weight(self.connected)
