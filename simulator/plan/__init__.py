"""Capacity planning (``simrun plan SPEC.yaml``): the cheapest Ceph cluster that meets a latency target.

Modules: ``spec`` (the plan file), ``catalog`` (parts and prices, models/catalog/), ``candidates``
(shapes x host counts: cost, capacity, structure), ``simulate`` (analytic bounds, the simulated slice,
probes, one shape's SLO search), ``solve`` (pruning, running, resuming, verdicts), ``report``
(table, CSV/JSON, Pareto plot). The load search itself is :mod:`simulator.search`.
"""
