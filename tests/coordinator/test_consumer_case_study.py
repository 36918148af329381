"""KIP-848's case study ("Case Studies": A, B and C join a group on topic foo, 3 partitions).

Every epoch and assignment the KIP's text shows is asserted, step by step, with
the real ``uniform`` server-side assignor. regroup computes the target inside
the heartbeat that makes it necessary (as Kafka does), so the KIP's
"X joins" + "the coordinator computes and installs the new target" + "X sends
its next heartbeat" collapse when X has nothing to wait for (A's join); where
X is blocked (B, C) the join response already says what the KIP's next
heartbeat says: epoch 0, no partitions. The KIP's member-assignment tables are
asserted after the acknowledging heartbeat they describe.
"""

from __future__ import annotations

from regroup.consumer.group.group import ConsumerGroup
from regroup.model.errors import ErrorCode
from regroup.testing import CoordinatorTestContext


class CaseStudy:
    """The KIP's group: one coordinator (``regroup.testing``'s context), topic foo, time 0."""

    def __init__(self) -> None:
        self.ctx = CoordinatorTestContext(
            topics={"foo": 3}, config={"regroup.consumer.semantics": "kip-848"}
        )

    @property
    def group(self) -> ConsumerGroup:
        return self.ctx.consumer_group("g")

    def heartbeat(
        self, member: str, epoch: int, owned: list[int] | None = None, join: bool = False
    ) -> tuple[int, list[int] | None]:
        response = self.ctx.consumer_group_heartbeat(
            "g",
            member,
            epoch,
            rebalance_timeout_ms=300000 if join else -1,
            subscribed_topic_names=("foo",) if join else None,
            owned=None if owned is None else ({"foo": owned} if owned else {}),
        )
        assert response.error_code is ErrorCode.NONE
        partitions = None
        if response.assignment is not None:
            partitions = sorted(
                p for tp in response.assignment.topic_partitions for p in tp.partitions
            )
        return response.member_epoch, partitions

    def target(self) -> dict[str, list[int]]:
        return {
            m: sorted(p for ps in t.values() for p in ps)
            for m, t in sorted(self.group.target_assignment.items())
        }

    def members(self) -> dict[str, tuple[int, list[int]]]:
        return {
            m.member_id: (
                m.member_epoch,
                sorted(p for ps in m.assigned_partitions.values() for p in ps),
            )
            for m in sorted(self.group.members.values(), key=lambda m: m.member_id)
        }

    def rebuilt(self) -> ConsumerGroup:
        group = self.ctx.replay_into_new(through_json=False).groups["g"]
        assert isinstance(group, ConsumerGroup)
        return group


def test_the_kip_case_study_step_by_step() -> None:
    cs = CaseStudy()

    # Member A joins: group epoch 1, target epoch 1 = A: foo-0..2; A has nothing to
    # revoke, so it is answered epoch 1 with its three partitions directly.
    assert cs.heartbeat("A", 0, [], join=True) == (1, [0, 1, 2])
    assert (cs.group.group_epoch, cs.group.assignment_epoch) == (1, 1)
    assert cs.target() == {"A": [0, 1, 2]}
    # A acknowledges epoch 1 with its partitions.
    assert cs.heartbeat("A", 1, [0, 1, 2]) == (1, None)
    assert cs.members() == {"A": (1, [0, 1, 2])}
    assert cs.group.state_name() == "Stable"

    # Member B joins: group epoch 2, target epoch 2 = A: foo-0,1; B: foo-2.
    # B is blocked at epoch 0 until A revokes foo-2.
    assert cs.heartbeat("B", 0, [], join=True) == (0, [])
    assert (cs.group.group_epoch, cs.group.assignment_epoch) == (2, 2)
    assert cs.target() == {"A": [0, 1], "B": [2]}
    assert cs.members() == {"A": (1, [0, 1, 2]), "B": (0, [])}
    # A is told to revoke foo-2: it stays at epoch 1 and gets foo-0, foo-1.
    assert cs.heartbeat("A", 1, [0, 1, 2]) == (1, [0, 1])
    # A acknowledges the revocation: it moves to epoch 2.
    assert cs.heartbeat("A", 1, [0, 1]) == (2, [0, 1])
    assert cs.members() == {"A": (2, [0, 1]), "B": (0, [])}
    # Now B gets its assignment; then acknowledges.
    assert cs.heartbeat("B", 0) == (2, [2])
    assert cs.heartbeat("B", 2, [2]) == (2, None)
    assert cs.members() == {"A": (2, [0, 1]), "B": (2, [2])}
    assert cs.group.state_name() == "Stable"

    # Member C joins: group epoch 3, target epoch 3 = A: foo-0; B: foo-2; C: foo-1.
    assert cs.heartbeat("C", 0, [], join=True) == (0, [])
    assert (cs.group.group_epoch, cs.group.assignment_epoch) == (3, 3)
    assert cs.target() == {"A": [0], "B": [2], "C": [1]}
    assert cs.members() == {"A": (2, [0, 1]), "B": (2, [2]), "C": (0, [])}
    assert cs.group.state_name() == "Reconciling"
    # B's next heartbeat: epoch 3 and foo-2.
    assert cs.heartbeat("B", 2, [2]) == (3, [2])
    # C's next heartbeat: still epoch 0 and no partitions.
    assert cs.heartbeat("C", 0) == (0, [])
    # A's next heartbeat: epoch 2 and foo-0 (revoke foo-1).
    assert cs.heartbeat("A", 2, [0, 1]) == (2, [0])
    assert cs.members() == {"A": (2, [0]), "B": (3, [2]), "C": (0, [])}
    # A acknowledges: epoch 3.
    assert cs.heartbeat("A", 2, [0]) == (3, [0])
    assert cs.members() == {"A": (3, [0]), "B": (3, [2]), "C": (0, [])}
    # foo-1 is free: C advances to epoch 3 with foo-1, then acknowledges.
    assert cs.heartbeat("C", 0) == (3, [1])
    assert cs.heartbeat("C", 3, [1]) == (3, None)
    # All the members have eventually advanced to the group epoch (3).
    assert cs.members() == {"A": (3, [0]), "B": (3, [2]), "C": (3, [1])}
    assert cs.group.state_name() == "Stable"
    assert cs.rebuilt() == cs.group
