"""The fault-schedule soak: random schedules per seed, every invariant checked, failures minimised.

``schedule`` draws a seed's scenario, ``check`` runs and checks it, ``minimise``
reduces a failing one, ``files`` writes it as a scenario file. ``regroup soak``
(``regroup.cli.soak``) drives them; ``regroup.pipeline.soak`` spreads seeds over Spark.
See docs/soak.md.
"""
