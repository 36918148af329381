"""What the parts of one run share: built first by the simulation, handed down to each part.

Rule 1: no part of a run holds the ``Simulation``. Each is given this context
for what everyone reads (the clock, the group's names, the cluster's
metadata, the data plane) and for the one way to publish (``emit``; a batch's
processed records in aggregate, ``records_processed``); what a
part does *to another part* is a callable injected into it (a consumer's
``send`` is the transport's, its ``changed`` the stability watch's). So the
modules import downwards only, and ``regroup.sim.simulation`` is imported by
its callers alone.

Rule 2: the context is the run's state that more than one part reads, not a
service locator: the coordinator and the network are not in it (only the
transport and the director talk to them, and they are given them).

Rule 3: ``topics`` and ``metadata`` are the cluster as the consumers see it;
one writer changes them, the director's ``add_partitions``, which replaces
``metadata`` with a new image (read anew by each reader) and updates
``topics`` in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from regroup.events import Event
from regroup.model import TopicPartition
from regroup.model.metadata import MetadataImage
from regroup.sim.data_plane import DataPlane
from regroup.sim.scenario import DataConfig
from regroup.sim.world import World

__all__ = ["RunContext"]


@dataclass(slots=True, eq=False)
class RunContext:
    """The shared state of one run (see the module docstring)."""

    group_id: str
    #: ``classic`` or ``consumer``: the run's ``group.protocol`` (a consumer may override it).
    group_protocol: str
    #: The run's seed: each KIP-848 member's randomness is derived from it.
    seed: int
    #: The virtual clock and the loop: ``world.now_ms``, ``world.at(time, action, *args)``.
    world: World
    #: Publish one event (the journal's ``emit``).
    emit: Callable[[Event], None]
    #: Topic name -> partition count (Rule 3).
    topics: dict[str, int]
    #: The cluster's topics as the members resolve them (Rule 3).
    metadata: MetadataImage
    #: The scenario's data settings: processing cost, restore time, poll sizes.
    data: DataConfig
    #: The partition logs' end offsets, and when records are produced next.
    plane: DataPlane
    #: Publish a batch's processed chunks ``(partition, first, last)`` at once
    #: (the journal's ``records_processed``: ``ts_ms, group_id, member_id, chunks``).
    records_processed: Callable[[int, str, str, Sequence[tuple[TopicPartition, int, int]]], None]
