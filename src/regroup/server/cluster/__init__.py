"""Several brokers in one process: leadership (``topology``), Kafka's answers to a
request on the wrong broker (``routing``) and the listeners and failovers (``brokers``)."""
