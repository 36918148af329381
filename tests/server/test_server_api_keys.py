"""``wire.api_keys.ApiKey`` against kio's message classes and the names the server uses."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.versions import API_NAMES

#: Kafka 4 keeps these inter-broker keys in ``ApiKeys``; kio 0.6.5 has no schema for them.
_NOT_IN_KIO = {
    ApiKey.LEADER_AND_ISR,
    ApiKey.STOP_REPLICA,
    ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN,
}


@pytest.mark.parametrize(
    "key", [k for k in ApiKey if not k.private and k not in _NOT_IN_KIO], ids=lambda k: k.name
)
def test_each_kafka_key_is_the_id_of_kios_message_of_that_name(key: ApiKey) -> None:
    package = importlib.import_module(f"kio.schema.{key.name.lower()}")
    first = min(m.name for m in pkgutil.iter_modules(package.__path__))
    module = importlib.import_module(f"kio.schema.{key.name.lower()}.{first}.request")
    request = getattr(module, f"{key.api_name}Request")  # the name: api_name is Kafka's
    assert request.__api_key__ == key


def test_the_names_the_server_logs_are_the_keys_api_names() -> None:
    assert {key: ApiKey(key).api_name for key in API_NAMES} == dict(API_NAMES)


def test_private_keys_are_above_kafkas_range() -> None:
    private = [key for key in ApiKey if key.private]
    assert private == [
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT,
        ApiKey.REGROUP_CONTROL,
    ]
    assert all(key < 1000 for key in ApiKey if not key.private)
