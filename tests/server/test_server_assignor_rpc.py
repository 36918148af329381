"""The private-key codec of the KIP-848 client-side assignor RPCs round-trips."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.model.errors import ErrorCode
from regroup.model.requests.consumer import (
    ConsumerGroupInstallAssignmentMember,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentMember,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PartitionMetadata,
    TopicPartitions,
)
from regroup.model.uuid import Uuid
from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.wire import assignor_rpc, codec
from regroup.server.wire.versions import INSTALL_ASSIGNMENT_KEY, PREPARE_ASSIGNMENT_KEY

ids = st.builds(Uuid, st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
text = st.text(max_size=10)
tps = st.lists(
    st.builds(TopicPartitions, ids, st.lists(st.integers(0, 99), max_size=4).map(tuple)),
    max_size=3,
).map(tuple)


class _Encoder(RequestEncoder):
    def __init__(self) -> None:
        super().__init__("me")


@settings(max_examples=60, deadline=None)
@given(text, text, st.integers(-1, 50), st.integers(-1, 50), tps)
def test_server_install_request_round_trips(
    group: str, member: str, epoch: int, group_epoch: int, parts: tuple[TopicPartitions, ...]
) -> None:
    request = ConsumerGroupInstallAssignmentRequest(
        group, member, epoch, group_epoch, 0, (ConsumerGroupInstallAssignmentMember(member, parts),)
    )
    _, frame = _Encoder().encode(INSTALL_ASSIGNMENT_KEY, 0, request)
    decoded = codec.decode_request(frame[4:])
    assert decoded.body == request and decoded.client_id == "me"


def test_server_prepare_request_and_responses_round_trip() -> None:
    request = ConsumerGroupPrepareAssignmentRequest("g", "m", 4)
    _, frame = _Encoder().encode(PREPARE_ASSIGNMENT_KEY, 0, request)
    assert codec.decode_request(frame[4:]).body == request
    tid = Uuid.for_name("t")
    prepare = ConsumerGroupPrepareAssignmentResponse(
        ErrorCode.NONE,
        None,
        7,
        "mine",
        (
            ConsumerGroupPrepareAssignmentMember(
                "m", 4, None, (tid,), 1, 0, b"meta", (TopicPartitions(tid, (0, 1)),)
            ),
        ),
        (PartitionMetadata(tid, 3),),
    )
    body = assignor_rpc.encode_response(prepare)
    assert assignor_rpc.decode_response(PREPARE_ASSIGNMENT_KEY, body) == prepare
    install = ConsumerGroupInstallAssignmentResponse(ErrorCode.STALE_MEMBER_EPOCH, "stale")
    body = assignor_rpc.encode_response(install)
    assert assignor_rpc.decode_response(INSTALL_ASSIGNMENT_KEY, body) == install
