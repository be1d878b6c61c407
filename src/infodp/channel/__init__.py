"""Discrete channels P(Y|X) and their capacities, with certified brackets.

A privacy mechanism seen from one individual's row is a noisy channel. Modules:
:mod:`~infodp.channel.channel` (the :class:`Channel` value), :mod:`~infodp.channel.result`
(:class:`CapacityResult`), :mod:`~infodp.channel.shannon`, :mod:`~infodp.channel.sibson` and
:mod:`~infodp.channel.renyi` (the solvers), :mod:`~infodp.channel.certificates` (certified
upper bounds on cells of the input simplex) and :mod:`~infodp.channel.newton` (the one damped
Newton routine).

>>> from infodp.channel import Channel
>>> Channel.binary_symmetric(0.25).n_inputs
2
"""

from infodp.channel.channel import DEFINITIONS, Channel
from infodp.channel.result import CapacityResult

__all__ = ["DEFINITIONS", "CapacityResult", "Channel"]
