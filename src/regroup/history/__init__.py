"""Kafka's own logs read back into regroup: the group coordinator's log lines, by version.

``formats`` holds the table of Kafka's log line formats (rules as data) with a parser and a
renderer derived from each row; ``lines`` turns one raw line into a recognised record;
``rebalances`` rebuilds each group's rebalances from those records; ``findings`` names the
patterns operators look for; ``scenario_out`` turns an incident into a scenario file;
``spark`` runs the parse as Spark tasks. This package is outside the sans-IO core: the core
never imports it.
"""
