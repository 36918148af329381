"""A simulated consumer's ``client.rack``: null or empty is no rack, as in Kafka."""

from __future__ import annotations

import pytest

from regroup.sim.configs import consumer_member_config


@pytest.mark.parametrize("value", [None, ""])
def test_null_or_empty_client_rack_is_no_rack(value: str | None) -> None:
    # Kafka's KIP-848 consumer sends no RackId for the default client.rack ""; sending ""
    # would be refused by the coordinator ("RackId can't be empty.").
    config = consumer_member_config("g", "c", {"client.rack": value})
    assert config.client_rack is None


def test_a_client_rack_is_kept() -> None:
    assert consumer_member_config("g", "c", {"client.rack": "r1"}).client_rack == "r1"


def test_a_null_remote_assignor_is_the_coordinators_default() -> None:
    assert (
        consumer_member_config("g", "c", {"group.remote.assignor": None}).group_remote_assignor
        is None
    )
