"""``target_assignment_computed`` keeps its member ids sorted between epochs (``NamedTargets``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regroup.coordinator.partition_names import NamedTargets
from regroup.model.uuid import Uuid

_ids = st.sets(st.sampled_from([f"m{i:02d}" for i in range(40)]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ids, min_size=1, max_size=12))
def test_sync_ids_keeps_the_sorted_member_ids(rounds: list[set[str]]) -> None:
    cache = NamedTargets(None, None)
    for ids in rounds:
        targets: dict[str, dict[Uuid, frozenset[int]]] = {
            member_id: {} for member_id in sorted(ids, reverse=True)
        }
        cache.sync_ids(targets)
        assert cache.ids == sorted(ids)
        assert cache.named.keys() == targets.keys()
