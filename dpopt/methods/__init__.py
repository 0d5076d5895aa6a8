"""Registered solution methods, one module per problem kind.

Importing this package fills :data:`dpopt.registry.REGISTRY`.
"""

from dpopt.methods import calibration, count_query, dx_linear_query, finite_query, multi_level, noise_adding, statistical_query  # noqa: F401
