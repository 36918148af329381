"""The API versions the server advertises in ApiVersions (KIP-35, KIP-511).

Rule 1: advertise a *range* for every API, never one version. Clients pick the
highest version inside the intersection of their range and ours; aiokafka 0.14
speaks only non-flexible versions (Metadata <= 5, JoinGroup 0-5, Heartbeat <= 1,
OffsetCommit 2-3, Fetch <= 11, ListOffsets <= 3), so each range reaches down
to the lowest version kio 0.6.5 can decode (Kafka 4 removed the older ones,
KIP-896).

Rule 2: Produce >= 3 is advertised. librdkafka enables its MsgVer2 feature
(record batches v2) only when Produce >= 3 and Fetch >= 4 are both advertised;
without it a pure consumer never sends Fetch.

Rule 3: Metadata reaches v12 (topic ids). librdkafka's KIP-848 consumer asks for
metadata *by topic id* once an assignment arrives, and aborts the process when
the broker's Metadata is older than v12. ConsumerGroupHeartbeat is 0-1:
librdkafka sends v1 only (KIP-1082, client-generated member ids).

Rule 4: OffsetCommit and OffsetFetch stop at v9 (names, not topic ids; v10,
Kafka 4.1's, switches to topic ids); librdkafka's KIP-848 consumer needs >= 9
of both. kio 0.6.5 has the v10 schemas, but no client of the interop matrix
sends v10 (librdkafka 2.16 caps both at 9, kafka-python 3.0 at 8, aiokafka
lower), and a Kafka 4.1+ client negotiates down to 9.

Rule 5: SaslHandshake 0-1, SaslAuthenticate 0-2 and the ACL APIs 1-3 are
advertised on every listener, as Kafka's broker does (Kafka 4 removed ACL v0,
KIP-896); a PLAINTEXT listener answers the SASL ones ILLEGAL_SASL_STATE and,
without an authorizer, the ACL ones SECURITY_DISABLED
(``regroup.server.security``).

The client-side assignor RPCs of KIP-848 ("Client-Side Assignor":
ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment) were
removed from Apache Kafka before release and have no API key. regroup serves
them on two keys from the top of the int16 range, which Kafka will not reach:
``PREPARE_ASSIGNMENT_KEY`` and ``INSTALL_ASSIGNMENT_KEY``, version 0 only,
request header v1 and response header v0 (non-flexible bodies, see
``regroup.server.wire.assignor_rpc``). They are *not* listed in ApiVersions, so no
real client ever sees them; only regroup's own Python member uses them
(``regroup.server.clients.wire_member``), together with the private tagged field of
``regroup.server.wire.heartbeat_codec`` that carries its ``ClientAssignors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from regroup.server.wire.api_keys import ApiKey

__all__ = [
    "ADVERTISED",
    "API_NAMES",
    "INSTALL_ASSIGNMENT_KEY",
    "PREPARE_ASSIGNMENT_KEY",
    "VersionRange",
    "supports",
]

VersionRange = tuple[int, int]

#: Our private API keys for the KIP-848 client-side assignor RPCs.
PREPARE_ASSIGNMENT_KEY = ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT
INSTALL_ASSIGNMENT_KEY = ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT

API_NAMES: Mapping[int, str] = MappingProxyType(
    {
        0: "Produce",
        1: "Fetch",
        2: "ListOffsets",
        3: "Metadata",
        8: "OffsetCommit",
        9: "OffsetFetch",
        10: "FindCoordinator",
        11: "JoinGroup",
        12: "Heartbeat",
        13: "LeaveGroup",
        14: "SyncGroup",
        15: "DescribeGroups",
        16: "ListGroups",
        17: "SaslHandshake",
        18: "ApiVersions",
        19: "CreateTopics",
        22: "InitProducerId",
        29: "DescribeAcls",
        30: "CreateAcls",
        31: "DeleteAcls",
        36: "SaslAuthenticate",
        42: "DeleteGroups",
        68: "ConsumerGroupHeartbeat",
        69: "ConsumerGroupDescribe",
        PREPARE_ASSIGNMENT_KEY: "ConsumerGroupPrepareAssignment",
        INSTALL_ASSIGNMENT_KEY: "ConsumerGroupInstallAssignment",
    }
)

#: api key -> (min, max) advertised in ApiVersions.
ADVERTISED: Mapping[int, VersionRange] = MappingProxyType(
    {
        0: (3, 11),  # Produce (rule 2)
        1: (4, 17),  # Fetch: kafka-python caps at 12, aiokafka 11, librdkafka 16
        2: (1, 9),  # ListOffsets
        3: (0, 12),  # Metadata (rule 3)
        8: (2, 9),  # OffsetCommit (rule 4)
        9: (1, 9),  # OffsetFetch (rule 4)
        10: (0, 6),  # FindCoordinator
        11: (0, 9),  # JoinGroup
        12: (0, 4),  # Heartbeat
        13: (0, 5),  # LeaveGroup
        14: (0, 5),  # SyncGroup
        15: (0, 5),  # DescribeGroups
        16: (0, 5),  # ListGroups
        17: (0, 1),  # SaslHandshake (rule 5)
        18: (0, 4),  # ApiVersions
        19: (2, 7),  # CreateTopics
        22: (0, 5),  # InitProducerId: kafka-python's and librdkafka's idempotent producers
        29: (1, 3),  # DescribeAcls (rule 5)
        30: (1, 3),  # CreateAcls
        31: (1, 3),  # DeleteAcls
        36: (0, 2),  # SaslAuthenticate (rule 5)
        42: (0, 2),  # DeleteGroups: kafka-consumer-groups.sh --delete
        68: (0, 1),  # ConsumerGroupHeartbeat (rule 3)
        69: (0, 1),  # ConsumerGroupDescribe
    }
)

#: Served but not advertised (see the module docstring).
_PRIVATE: Mapping[int, VersionRange] = MappingProxyType(
    {PREPARE_ASSIGNMENT_KEY: (0, 0), INSTALL_ASSIGNMENT_KEY: (0, 0)}
)


def supports(api_key: int, api_version: int) -> bool:
    """Whether the server serves ``api_key`` at ``api_version``."""
    bounds = ADVERTISED.get(api_key) or _PRIVATE.get(api_key)
    return bounds is not None and bounds[0] <= api_version <= bounds[1]
