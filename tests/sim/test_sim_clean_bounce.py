"""A clean reassignment processes nothing twice.

4 members, 32 partitions, 50 records/s per partition, 1 ms per record,
500-record polls, no restore, a rolling bounce 10 s apart with 2 s down.
Under KIP-848 a member used to commit the revoked partitions' positions while
a batch was still being processed and revoke them when the batch ended,
without committing the batch's end: the new owner started from the older
offset (100 duplicates with seed 0). Kafka's consumer reconciles inside the
application's ``poll()`` when auto-commit is on (``maybeReconcile(canCommit)``),
after the previous batch is done.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.events import OffsetsCommitted, PartitionsRevoked, RecordsProcessed
from regroup.model import TopicPartition
from regroup.sim.scenario import load_scenario
from regroup.sim.simulation import Settings, run_simulation

SCENARIO = Path(__file__).parent / "scenarios" / "clean-bounce-duplicates.toml"


@pytest.mark.parametrize(
    ("protocol", "seed"),
    [("consumer", 0), ("consumer", 1), ("eager", 0), ("cooperative", 0)],
)
def test_a_clean_rolling_bounce_processes_no_record_twice(protocol: str, seed: int) -> None:
    result = run_simulation(
        Settings(scenario=load_scenario(str(SCENARIO)), protocol=protocol, seed=seed)
    )
    assert result.metrics.duplicates == 0
    assert result.metrics.violations == []


def test_a_kip848_revocation_commits_the_end_of_the_finished_batch() -> None:
    """Every revoked partition's last commit before its revocation covers every record
    the member processed from it (the new owner resumes right after them)."""
    result = run_simulation(
        Settings(scenario=load_scenario(str(SCENARIO)), protocol="consumer", seed=0)
    )
    processed_to: dict[tuple[str, TopicPartition], int] = {}
    committed: dict[TopicPartition, int] = {}
    revocations = 0
    for event in result.events:
        if isinstance(event, RecordsProcessed):
            processed_to[(event.member_id, event.partition)] = event.last_offset + 1
        elif isinstance(event, OffsetsCommitted):
            committed.update(event.offsets)
        elif isinstance(event, PartitionsRevoked):
            for tp in event.partitions:
                end = processed_to.get((event.member_id, tp))
                if end is not None:
                    revocations += 1
                    assert committed.get(tp) == end, (event.ts_ms, tp)
    assert revocations > 0
