"""The API keys of Kafka's wire protocol, by Kafka's names (Kafka's ``ApiKeys``).

Rule 1: every key Apache Kafka 4.x assigns is here under the name its
``org.apache.kafka.common.protocol.ApiKeys`` constant has, with the id of its
message definition; a key the server does not serve is still named, so a log
line or an error about it says what the client asked for.
Rule 2: regroup's private keys sit at the top of the int16 range, which Kafka
will not reach, and are named apart from Kafka's: the KIP-848 client-side
assignor RPCs (``wire.versions``, ``wire.assignor_rpc``) and the test harness's
control channel (``control.commands``).
Rule 3: code names an API by its member here, never by its number; the server's
routing table (``app.ROUTES``) is keyed by these members, and
``tests/architecture/test_server_routing.py`` fails on a comparison of an API
key with a number anywhere in ``regroup.server``.

``api_name`` is the message's name on the wire (``ListOffsets``), as Kafka's
``ApiKeys.name`` and the ``apiKey`` names of Kafka's JSON message definitions.
"""

from __future__ import annotations

import enum

__all__ = ["ApiKey"]


class ApiKey(enum.IntEnum):
    """One API of the Kafka protocol (Kafka's ``ApiKeys``), plus regroup's private ones."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    # Rule 2: regroup's own, never advertised in ApiVersions.
    CONSUMER_GROUP_PREPARE_ASSIGNMENT = 32000
    CONSUMER_GROUP_INSTALL_ASSIGNMENT = 32001
    REGROUP_CONTROL = 32002

    @property
    def api_name(self) -> str:
        """The message's name on the wire: ``LIST_OFFSETS`` -> ``ListOffsets``."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def private(self) -> bool:
        """One of regroup's own keys (rule 2), not Kafka's."""
        return self >= ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT
