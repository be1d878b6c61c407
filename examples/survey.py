"""A user's mechanism to audit: the coin-flip randomized response (ε = ln 3).

``infodp audit --callable examples.survey:release --dataset '[0]' --neighbour '[1]' ...``
(Dwork & Roth 2014, §3.2: report the true bit with probability 3/4.)
"""

from __future__ import annotations

import random


def release(dataset: list[int]) -> int:
    """Report the first bit truthfully with probability 3/4, flipped otherwise."""
    bit = dataset[0]
    return bit if random.random() < 0.75 else 1 - bit
