"""Kafka's security for ``regroup serve``: listeners, SASL, TLS, and an ACL authorizer.

* ``scram`` / ``plain``: the SASL mechanisms' server sides (RFC 5802/7677, RFC 4616);
* ``credentials``: the users file (PLAIN passwords, SCRAM credentials as Kafka stores them);
* ``authenticator``: one connection's SASL exchange (Kafka's ``SaslServerAuthenticator``);
* ``acl`` / ``authorizer``: Kafka's ACL model and a pure ``StandardAuthorizer``;
* ``enforce``: which operation on which resource each API needs, and the answers when denied;
* ``acl_apis``: DescribeAcls, CreateAcls and DeleteAcls;
* ``config`` / ``listeners`` / ``service``: the broker configs by Kafka's names, the
  listeners (PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL), and the object the server holds.
"""
