"""Version-neutral requests and responses of the group RPCs (docs/architecture.md,
"Contracts between the parts").

Kafka's field names in snake_case; one dataclass per message, no wire
versions. Where a wire version changes the *behaviour* the coordinator must
show (KIP-394's MEMBER_ID_REQUIRED needs JoinGroup v4+, a returning static
leader needs v9+ to skip the assignment, ConsumerGroupHeartbeat v1 makes the
client generate its member id), the request carries a named flag that the
server sets from the version it decoded, so nothing below the server knows
about versions.

* ``classic``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (KIP-429 era).
* ``offsets``: OffsetCommit, OffsetFetch (both group types).
* ``consumer``: ConsumerGroupHeartbeat (KIP-848).
"""
