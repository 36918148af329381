"""Kafka's wire protocol as bytes and kio messages; no sockets, no state of a server.

* ``api_keys``: the API keys by Kafka's names (Kafka's ``ApiKeys``);
* ``versions``: the versions the server advertises in ApiVersions (KIP-35, KIP-511);
* ``frame_check`` / ``tags``: every length and count proved to fit in its frame, and unknown
  tagged fields skipped (KIP-482), before kio reads a request;
* ``codec``: request headers and bodies to kio's messages and back;
* ``mapping``: each wire version of the group APIs <-> the version-neutral requests;
* ``heartbeat_codec``: ConsumerGroupHeartbeat by hand, the hot path;
* ``error_responses``: the response of a request that fails as a whole with one error code;
* ``kio_build``: kio messages from plain values; ``assignor_rpc``: regroup's private assignor APIs.
"""
