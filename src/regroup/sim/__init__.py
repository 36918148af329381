"""regroup.sim: whole consumer groups on a virtual clock, driving the real protocol code.

One coordinator (``regroup.coordinator``), N simulated consumers each running
the real member of its protocol (classic eager or cooperative, KIP-848), a
network with latency, jitter, loss and cut-off members, and partition logs
with records arriving at a rate. Time jumps straight to the next delivery or
deadline (``world``). Scenarios are data (``scenario``); invariants are
checked online (``invariants``); metrics come from the event log alone
(``metrics``), both keeping per-partition state in columns by partition
number (``partition_table``); ``timeline`` draws partition ownership over time.

``simulation`` builds a run and is imported by its callers only: it hands a
``RunContext`` (``context``) and injected callables to the consumers
(``consumer``), the ``transport`` and the ``director``; every event goes
through the ``journal``; the group's stability (``stability``) is evaluated
after each step of the loop.

(scenario, seed) -> the same event log, byte for byte.
"""
