"""Discrete channels P(Y|X) and their capacities, with certified brackets.

A privacy mechanism seen from one individual's row is a noisy channel. Modules:
:mod:`~infodp.channel.channel` (the :class:`Channel` value), :mod:`~infodp.channel.result`
(:class:`CapacityResult`), :mod:`~infodp.channel.shannon`, :mod:`~infodp.channel.sibson` and
:mod:`~infodp.channel.renyi` (the solvers), :mod:`~infodp.channel.certificates` (certified
upper bounds on cells of the input simplex), :mod:`~infodp.channel.newton` (the one damped
Newton routine) and :mod:`~infodp.channel.relations` (DP against information cost,
information privacy, identifiability and MI-DP's missing group property).

>>> from infodp.channel import Channel
>>> Channel.binary_symmetric(0.25).n_inputs
2
"""

from infodp.channel.channel import DEFINITIONS, Channel
from infodp.channel.relations import (
    dp_from_information_privacy,
    identifiability_level,
    identifiability_range,
    information_cost_bound,
    information_privacy_level,
    max_entropy_drop,
    mi_dp_group_example,
    prior_spread,
    randomized_response_protocol,
)
from infodp.channel.result import CapacityResult

__all__ = [
    "DEFINITIONS",
    "CapacityResult",
    "Channel",
    "dp_from_information_privacy",
    "identifiability_level",
    "identifiability_range",
    "information_cost_bound",
    "information_privacy_level",
    "max_entropy_drop",
    "mi_dp_group_example",
    "prior_spread",
    "randomized_response_protocol",
]
