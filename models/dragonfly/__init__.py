"""The dragonfly's formulation (Kim, Dally, Scott, Abts, ISCA 2008), pure functions.

``structure`` the wiring rule, its closed forms and the load ratios each routing is sized for;
``layout`` the cable lengths of groups laid out as rows of racks; ``model`` the sizing model
(data, one function per constraint family in ``CONSTRAINTS``, build, then an exact best-first
search). The family's glue (designs, plane, routing, checks) is ``planner.families.dragonfly``.
"""
