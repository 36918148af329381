"""regroup: Apache Kafka's consumer-group rebalance protocols, built for real in Python.

See docs/architecture.md ("The layers"); the package's sans-IO core is
``model``, ``assignors``, ``classic``, ``consumer``, ``coordinator``,
``records`` and ``events``.
"""

__version__ = "0.1.0"
