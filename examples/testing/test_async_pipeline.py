"""An aiokafka consumer survives a coordinator move (``coordinator_unavailable``).

For a second and a half every group request is answered NOT_COORDINATOR and
FindCoordinator COORDINATOR_NOT_AVAILABLE, as while a coordinator moves; records
keep arriving. The client looks the coordinator up again (the broker's request
tracking shows it), the application retries its commits, and once the
coordinator is back every record has been processed once and committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from async_pipeline import Pipeline

from regroup.testing import Broker


async def _run_until(
    pipeline: Pipeline, condition: Callable[[], bool], timeout: float = 20.0
) -> None:
    async def loop() -> None:
        while not condition():
            await pipeline.run_once()

    await asyncio.wait_for(loop(), timeout)


@pytest.mark.regroup_broker(topics={"events": 2})
def test_the_pipeline_survives_a_coordinator_move(regroup_broker: Broker) -> None:
    broker = regroup_broker

    async def scenario() -> None:
        broker.produce("events", [f"e{i}" for i in range(6)])
        pipeline = Pipeline(broker.bootstrap, "pipeline", "events")
        await pipeline.start()
        try:
            await _run_until(pipeline, lambda: len(pipeline.seen) == 6)
            (member_id,) = broker.members("pipeline")

            broker.start_request_tracking()
            broker.coordinator_unavailable(duration_ms=1500, error="NOT_COORDINATOR")
            broker.produce("events", [f"e{i}" for i in range(6, 12)])
            await _run_until(pipeline, lambda: len(pipeline.seen) == 12)
            await _run_until(
                pipeline, lambda: broker.committed("pipeline") == {"events": {0: 6, 1: 6}}
            )
            # It stayed in the group: the same member, no new join.
            assert list(broker.members("pipeline")) == [member_id]
        finally:
            await pipeline.stop()
        # Every record once: nothing lost, nothing read twice.
        assert sorted((p, o) for p, o, _ in pipeline.seen) == [
            (p, o) for p in (0, 1) for o in range(6)
        ]
        # The client noticed: requests were refused, and it looked the coordinator up again.
        assert broker.pending_faults()["errors_injected"] > 0
        assert len(broker.requests("FindCoordinator")) >= 1

    asyncio.run(scenario())
