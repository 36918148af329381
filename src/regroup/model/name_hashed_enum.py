"""``NameHashedEnum``: an ``Enum`` whose members hash in compiled code.

``Enum.__hash__`` is ``hash(self._name_)``, written in Python: under the
compiled build (``regroup.native``) every dict lookup or set test keyed by an
enum member still runs it as an interpreted call, about 1,300 instructions.
This base class states the same function again, so mypyc compiles it: the
same hash value (dicts and sets keep their order, so event logs do not
change), without the interpreter. The state enums of the members and groups
derive from it; they are looked up by state on every step of a run.
"""

from __future__ import annotations

import enum

__all__ = ["NameHashedEnum"]


class NameHashedEnum(enum.Enum):
    """An ``Enum`` with ``Enum.__hash__`` restated, so that it compiles."""

    def __hash__(self) -> int:
        return hash(self._name_)
