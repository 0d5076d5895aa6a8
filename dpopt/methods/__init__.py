"""Registered solution methods, one module per problem kind.

Importing this package fills :data:`dpopt.registry.REGISTRY`.
"""

from dpopt.methods import count_query, multi_level  # noqa: F401
