"""The engine behind ``sticky`` and ``cooperative-sticky`` (Kafka: ``AbstractStickyAssignor``).

Private to the two assignors. Modules, one idea each:

* ``indexing``: integer-indexed topics/partitions and the lazy ``PartitionList``;
* ``user_data``: the assignors' user-data bytes;
* ``member_data``: previous ownership, validated by generation;
* ``racks``: KIP-881 rack information;
* ``constrained``: the fast path for identical subscriptions;
* ``general``: the path for differing subscriptions, with ``movements``;
* ``cooperative``: what cooperative-sticky withholds;
* ``engine``: the whole assignment.
"""

from regroup.assignors.classic.sticky_engine.engine import StickyResult, sticky_assign
from regroup.assignors.classic.sticky_engine.indexing import PartitionList, TopicIndex
from regroup.assignors.classic.sticky_engine.member_data import MemberData

__all__ = ["MemberData", "PartitionList", "StickyResult", "TopicIndex", "sticky_assign"]
