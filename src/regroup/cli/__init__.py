"""The ``regroup`` command."""
