"""The event schema shared by everything that observes a group (see ``schema``)."""

from regroup.events.schema import *  # noqa: F403
from regroup.events.schema import __all__ as _schema_all

__all__ = list(_schema_all)
