"""The records that describe coordinator state, and (later) their durable store.

``base`` defines the record envelope; ``classic``, ``consumer`` and
``offsets`` define Kafka's record types for classic groups, KIP-848
consumer groups and committed offsets.
"""

from regroup.records import classic as _classic  # noqa: F401  (registers GroupMetadata)
from regroup.records import consumer as _consumer  # noqa: F401  (registers the KIP-848 records)
from regroup.records import offsets as _offsets  # noqa: F401  (registers OffsetCommit)
from regroup.records.base import (
    RECORD_TYPES,
    CoordinatorRecord,
    RecordKey,
    RecordValue,
    register_record_type,
)

__all__ = ["RECORD_TYPES", "CoordinatorRecord", "RecordKey", "RecordValue", "register_record_type"]
