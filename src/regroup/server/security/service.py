"""The security the server holds: listeners, TLS, sessions, SASL, and the authorizer's checks.

``Security`` is built once from ``SecurityConfig`` (loading the users file and
the ACL file: a bad one raises ``SecurityError``/``CredentialsError``/
``InvalidAclError`` before anything listens). Each connection gets a
``Session``: its listener, its peer host and its principal, which is
``User:ANONYMOUS`` on PLAINTEXT (Kafka's ``KafkaPrincipal.ANONYMOUS``), the
client certificate's subject on SSL with a client certificate (``User:CN=..,O=..``
in the JDK's RFC 2253 form, ``principal``), and the SASL
user once a SASL exchange completes (``authenticator``). Until then every
frame of a SASL listener goes to ``serve_unauthenticated``.

With an authorizer, ``coordinate`` and ``denial`` apply ``group_rules`` to the
group requests and ``guard`` applies ``cluster_rules`` to the others; without
one, nothing is checked (Kafka without ``authorizer.class.name``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import ssl
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regroup.model.requests.consumer import ConsumerGroupHeartbeatRequest
from regroup.model.uuid import Uuid
from regroup.server.net.connection import CloseConnection
from regroup.server.security import cluster_rules, group_rules
from regroup.server.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_acls,
    validate_binding,
)
from regroup.server.security.acl_apis import ACL_KEYS, serve_acl_api
from regroup.server.security.authenticator import Authenticator
from regroup.server.security.authorizer import Authorizer, AuthorizerConfig
from regroup.server.security.config import (
    Listener,
    SecurityConfig,
    SecurityError,
    SecurityProtocol,
)
from regroup.server.security.credentials import Credentials, load_credentials
from regroup.server.security.principal import (
    ANONYMOUS,
    CertificateNameError,
    certificate_principal,
)
from regroup.server.wire import codec
from regroup.server.wire.api_keys import ApiKey
from regroup.server.wire.codec import DecodedRequest, MalformedRequestError, UnsupportedApiError

__all__ = ["ACL_KEYS", "ANONYMOUS", "Security", "Session"]

logger = logging.getLogger("regroup.server")

#: With ``--data-dir``: the ACL set as CreateAcls/DeleteAcls left it.
ACLS_STORE = "acls.json"


@dataclass(eq=False, slots=True)
class Session:
    listener: Listener
    host: str
    principal: str = ANONYMOUS
    authenticator: Authenticator | None = None
    #: The listener's bound address, answered in Metadata and FindCoordinator.
    advertised: tuple[str, int] | None = field(default=None)
    #: (authorizer version, heartbeat request) last allowed: a steady member's hot path
    #: reuses its decoded request, so the decision is reused until an ACL changes.
    allowed: tuple[int, object] | None = None
    #: (heartbeat request, the same with this session's request context): reused likewise.
    contextual: tuple[object, object] | None = None

    #: ``sasl.server.max.receive.size``: the largest frame read while not authenticated.
    max_receive_size: int = 0

    @property
    def authenticated(self) -> bool:
        return self.authenticator is None or self.authenticator.complete


class Security:
    def __init__(
        self, config: SecurityConfig, host: str, port: int, data_dir: Path | None = None
    ) -> None:
        config.check()
        self.config = config
        self.listeners = config.listeners or (Listener(SecurityProtocol.PLAINTEXT, host, port),)
        self.credentials = (
            load_credentials(config.credentials_file)
            if config.credentials_file is not None
            else Credentials()
        )
        self._ssl = self._ssl_context() if any(lst.protocol.tls for lst in self.listeners) else None
        self.authorizer: Authorizer | None = None
        #: Where ACLs changed over the wire are kept (``--data-dir``), else ``None``.
        self.acls_store = None if data_dir is None else data_dir / ACLS_STORE
        if config.authorizer_enabled:
            source = config.acls_file
            if self.acls_store is not None and self.acls_store.exists():
                source = self.acls_store
                logger.info(
                    "ACLs from %s (changed over the wire), not from regroup.acls.file", source
                )
            acls = [] if source is None else _load_acls(source, self.acls_store)
            self.authorizer = Authorizer(
                AuthorizerConfig(config.super_users, config.allow_everyone_if_no_acl_found), acls
            )
        #: Each listener's bound (host, port), filled in by the server when it listens.
        self.bound: dict[Listener, tuple[str, int]] = {}

    def _ssl_context(self) -> ssl.SSLContext:
        config = self.config
        assert config.ssl_keystore_location is not None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(
                str(config.ssl_keystore_location), password=config.ssl_key_password
            )
            if config.ssl_truststore_location is not None:
                context.load_verify_locations(cafile=str(config.ssl_truststore_location))
        except (OSError, ssl.SSLError) as exc:
            raise SecurityError(f"ssl.keystore.location / ssl.truststore.location: {exc}") from None
        context.verify_mode = {
            "none": ssl.CERT_NONE,
            "requested": ssl.CERT_OPTIONAL,
            "required": ssl.CERT_REQUIRED,
        }[config.ssl_client_auth]
        return context

    def ssl_for(self, listener: Listener) -> ssl.SSLContext | None:
        return self._ssl if listener.protocol.tls else None

    # -- sessions and authentication ---------------------------------------------------

    def new_session(self, listener: Listener, host: str, peercert: bytes | None) -> Session:
        """``peercert``: the verified client certificate in DER, or ``None``.
        ``CloseConnection`` when its subject cannot be read."""
        session = Session(listener, host, advertised=self.bound.get(listener))
        if listener.protocol is SecurityProtocol.SSL:
            try:
                session.principal = certificate_principal(peercert)
            except CertificateNameError as exc:
                # Verified by the TLS layer yet unreadable here: no principal, so no
                # connection (Kafka closes a channel whose principal cannot be built).
                logger.warning("connection from %s: client certificate: %s", host, exc)
                raise CloseConnection(None) from None
        if listener.protocol.sasl:
            session.authenticator = Authenticator(
                self.config.sasl_enabled_mechanisms, self.credentials
            )
            session.max_receive_size = self.config.sasl_server_max_receive_size
        return session

    def serve_unauthenticated(
        self, session: Session, body: bytes, api_versions: Callable[[DecodedRequest], Any]
    ) -> bytes:
        """One frame before the SASL exchange completed (``authenticator``'s rules)."""
        authenticator = session.authenticator
        assert authenticator is not None
        if authenticator.raw_tokens:
            step = authenticator.on_raw_token(body)
            if step.close:
                raise CloseConnection(None, failed_login=True)
            self._authenticated(session)
            return codec.frame(step.response)
        try:
            req = codec.decode_request(body)
        except UnsupportedApiError as exc:
            if exc.api_key == codec.API_VERSIONS_KEY:
                return codec.api_versions_fallback(exc.correlation_id)
            raise CloseConnection(None) from None
        except MalformedRequestError:
            raise CloseConnection(None) from None
        step = authenticator.on_request(req.api_key, req.api_version, req.body)
        response = api_versions(req) if step.api_versions else step.response
        framed = (
            None
            if response is None
            else codec.encode_response(req.api_key, req.api_version, req.correlation_id, response)
        )
        if step.close:
            logger.info(
                "connection from %s on %s: authentication failed (%s)",
                session.host,
                session.listener.name,
                authenticator.mechanism or "no handshake",
            )
            raise CloseConnection(framed)
        self._authenticated(session)
        return framed if framed is not None else b""

    @staticmethod
    def _authenticated(session: Session) -> None:
        authenticator = session.authenticator
        if authenticator is not None and authenticator.complete:
            assert authenticator.principal is not None
            session.principal = authenticator.principal

    # -- authorization -------------------------------------------------------------------

    def check_for(self, session: Session) -> group_rules.Check:
        authorizer = self.authorizer
        assert authorizer is not None
        principal, host = session.principal, session.host

        def check(operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
            return authorizer.authorize(principal, host, operation, resource_type, name)

        return check

    def control_refusal(self, session: Session | None) -> str | None:
        """Whether ``session`` may use the control channel (``regroup.server.control.commands``):
        ``None`` when it may, else the reason. A SASL connection not yet authenticated is
        closed without an answer (``CloseConnection``), as any request but ApiVersions and
        SaslHandshake is before the login; with an authorizer the principal needs ALTER on
        the CLUSTER, what Kafka asks of the requests that change the cluster's state
        (CreateAcls, DeleteAcls, ElectLeaders, AlterPartitionReassignments)."""
        if session is None:
            return None
        if not session.authenticated:
            raise CloseConnection(None)
        if self.authorizer is None or self.check_for(session)(
            AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
        ):
            return None
        return (
            f"CLUSTER_AUTHORIZATION_FAILED: {session.principal} may not use the control "
            "channel (it needs ALTER on the CLUSTER)"
        )

    def with_context(
        self, session: Session, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatRequest:
        """The heartbeat with the session's request context (``may_describe_topic``), which
        the coordinator resolves the group's regexes under (Kafka's
        ``GroupMetadataManager.refreshRegularExpressions``)."""
        cached = session.contextual
        if cached is not None and cached[0] is request:
            return cached[1]  # type: ignore[return-value]
        check = self.check_for(session)
        bound = dataclasses.replace(
            request,
            may_describe_topic=lambda name: check(AclOperation.DESCRIBE, ResourceType.TOPIC, name),
        )
        session.contextual = (request, bound)
        return bound

    def denial(self, session: Session, request: object) -> Any:
        """The answer to a heartbeat the principal may not send, else ``None``."""
        authorizer = self.authorizer
        assert authorizer is not None
        allowed = session.allowed
        if allowed is not None and allowed[1] is request and allowed[0] == authorizer.version:
            return None
        plan = group_rules.plan(self.check_for(session), request)
        if plan.forward is None:
            return plan.finish(None)
        session.allowed = (authorizer.version, request)
        return None

    def coordinate(
        self,
        session: Session,
        requests: list[object],
        coordinate: Callable[[list[object]], list[Any] | Coroutine[Any, Any, list[Any]]],
    ) -> list[Any] | Coroutine[Any, Any, list[Any]]:
        """``coordinate`` the authorized part of ``requests``; every answer, in order."""
        check = self.check_for(session)
        plans = [group_rules.plan(check, request) for request in requests]
        forwarded = [p.forward for p in plans if p.forward is not None]
        answers = coordinate(forwarded) if forwarded else []
        if isinstance(answers, Coroutine):
            return self._finish_later(plans, answers)
        return self._finish(plans, answers)

    @staticmethod
    def _finish(plans: list[group_rules.Plan], answers: list[Any]) -> list[Any]:
        given = iter(answers)
        return [p.finish(None if p.forward is None else next(given)) for p in plans]

    async def _finish_later(
        self, plans: list[group_rules.Plan], pending: Coroutine[Any, Any, list[Any]]
    ) -> list[Any]:
        return self._finish(plans, await pending)

    def guard(
        self,
        session: Session | None,
        req: DecodedRequest,
        inner: Callable[[DecodedRequest], Any],
        log: Any,
    ) -> Any:
        """A non-group API: ``cluster_rules`` with an authorizer, and the listener's address."""
        served: Any
        if self.authorizer is not None and session is not None:
            authorizer = self.authorizer

            def topic_name(topic_id: Uuid) -> str | None:
                topic = log.topic_by_id(topic_id)
                return None if topic is None else str(topic.name)

            served = cluster_rules.guard(
                self.check_for(session),
                req,
                inner,
                topic_name=topic_name,
                topic_exists=lambda name: log.topic(name) is not None,
                any_topic_write=lambda: authorizer.authorize_any_topic_write(
                    session.principal, session.host
                ),
            )
        else:
            served = inner(req)
        if session is None or session.advertised is None or req.api_key not in _ADVERTISED_ADDRESS:
            return served
        return _advertise(served, session.advertised)

    def acl_api(self, session: Session | None, req: DecodedRequest) -> Any:
        authorizer = self.authorizer
        check = None if session is None or authorizer is None else self.check_for(session)
        before = None if authorizer is None else authorizer.version
        response = serve_acl_api(authorizer, check, req)
        if authorizer is not None and authorizer.version != before:
            self._save_acls(authorizer)
        return response

    def _save_acls(self, authorizer: Authorizer) -> None:
        """Keep the ACL set in ``DIR/acls.json`` (whole, replaced atomically) so a restart
        has the ACLs CreateAcls and DeleteAcls left, as Kafka's metadata log keeps them."""
        store = self.acls_store
        if store is None:
            return
        rows = [
            {
                "resource_type": acl.resource_type.name,
                "resource_name": acl.resource_name,
                "pattern_type": acl.pattern_type.name,
                "principal": acl.principal,
                "host": acl.host,
                "operation": acl.operation.name,
                "permission": acl.permission.name,
            }
            for acl in authorizer.acls()
        ]
        scratch = store.with_suffix(".tmp")
        try:
            with scratch.open("w", encoding="utf-8") as out:
                json.dump({"version": 1, "acls": rows}, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(scratch, store)
        except OSError as exc:  # the change holds in memory; say the restart would lose it
            logger.error("cannot keep the ACLs in %s: %s", store, exc)


def _load_acls(source: Path, store: Path | None) -> list[AclBinding]:
    """The ACL file (text lines), or the store a run with ``--data-dir`` wrote (JSON)."""
    text = _read(source)
    if source != store:
        return parse_acls(text, str(source))
    try:
        rows = json.loads(text)["acls"]
        acls = [
            AclBinding(
                resource_type=ResourceType[row["resource_type"]],
                resource_name=row["resource_name"],
                pattern_type=PatternType[row["pattern_type"]],
                principal=row["principal"],
                host=row["host"],
                operation=AclOperation[row["operation"]],
                permission=AclPermissionType[row["permission"]],
            )
            for row in rows
        ]
        for acl in acls:
            validate_binding(acl)
    except (ValueError, KeyError, TypeError) as exc:
        raise SecurityError(
            f"{source} is not a valid ACL store ({type(exc).__name__}: {exc}); restore it, or "
            "delete it to start from regroup.acls.file"
        ) from None
    return acls


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SecurityError(f"cannot read {path}: {exc}") from None


#: The responses that name the listener's address (``_advertise``).
_ADVERTISED_ADDRESS = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR})


def _advertise(response: Any, address: tuple[str, int]) -> Any:
    """Metadata and FindCoordinator name the listener the client connected to."""
    host, port = address
    if hasattr(response, "brokers"):
        brokers = tuple(dataclasses.replace(b, host=host, port=port) for b in response.brokers)
        return dataclasses.replace(response, brokers=brokers)
    if hasattr(response, "coordinators"):
        coordinators = tuple(
            c if c.node_id < 0 else dataclasses.replace(c, host=host, port=port)
            for c in response.coordinators
        )
        return dataclasses.replace(response, coordinators=coordinators)
    if getattr(response, "node_id", -1) >= 0:
        return dataclasses.replace(response, host=host, port=port)
    return response
