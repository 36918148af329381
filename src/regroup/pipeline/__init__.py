"""regroup.pipeline: scenario sweeps and event-log analytics on Apache Spark (PySpark).

``spark`` builds the session (embedded ``local[*]`` by default, ``--master``
for a cluster); ``schema`` is the event log's explicit ``StructType`` and the
converter from ``regroup.events`` to its rows; ``sweep`` turns a grid of run
specs into a DataFrame and simulates every run inside a Spark task, writing the
event logs as Parquet; ``analytics`` computes the simulator's metrics
(``regroup.sim.metrics``, the same definitions) as Spark DataFrame transforms.
"""
