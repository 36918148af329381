"""The Kafka wire-protocol server (``regroup serve``): see ``app``."""
