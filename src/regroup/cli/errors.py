"""The one exception a subcommand raises for a user mistake."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """Bad input or options: printed as one line on stderr, exit code 2."""
