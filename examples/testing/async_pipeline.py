"""An application: an aiokafka consumer that commits after every batch and rides out
a coordinator that moves.

When the group coordinator moves (a broker restarts, ``__consumer_offsets``
leadership changes), group requests are answered NOT_COORDINATOR until the
client finds the new one. aiokafka marks the coordinator dead and looks it up
again; a commit that failed meanwhile raises a *retriable* error, which this
application retries after a short backoff instead of crashing or skipping it.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError


class Pipeline:
    def __init__(self, bootstrap: str, group_id: str, topic: str, client_id: str = "pipeline"):
        self.topic = topic
        self.seen: list[tuple[int, int, bytes]] = []
        self.commit_retries = 0
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=3000,
            heartbeat_interval_ms=300,
            retry_backoff_ms=100,
        )

    async def start(self) -> None:
        await self.consumer.start()

    async def stop(self) -> None:
        await self.consumer.stop()

    async def run_once(self) -> None:
        """One batch: process it, then commit it (retrying while the coordinator moves)."""
        batches = await self.consumer.getmany(timeout_ms=100)
        for tp, records in batches.items():
            for record in records:
                self.seen.append((tp.partition, record.offset, record.value))
        if batches:
            await self._commit()

    async def _commit(self) -> None:
        for _ in range(100):
            try:
                await self.consumer.commit()
                return
            except KafkaError as exc:
                if not getattr(exc, "retriable", False):
                    raise
                self.commit_retries += 1
                await asyncio.sleep(0.1)
        raise RuntimeError("the commit kept failing")
