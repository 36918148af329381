"""KIP-848's consumer group, broker side: epochs, target assignment, reconciliation.

Modules: ``group_member`` (one member, immutable), ``group`` (the group
state and its derived state), ``reconciliation`` (one member's step towards
its target), ``target_assignment`` (the server-side assignor run),
``subscription`` (regular expressions, subscription type) and
``client_assignors`` (KIP-848's client-side assignor selection and
validation). No module here imports the client side (``regroup.consumer.member``).
"""
