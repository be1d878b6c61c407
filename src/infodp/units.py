"""Units of information: nats inside the code, bits at the edges (docs/architecture.md,
"Contracts that cross modules").

One bit is ln 2 nats (Shannon 1948, §6: the choice of logarithm base is the choice of unit).
Every conversion between the two goes through this module, so ln 2 has one spelling.

>>> nats_to_bits(LN2), bits_to_nats(1.0) == LN2
(1.0, True)
>>> round(bits_to_nats(nats_to_bits(0.3)), 15)
0.3
"""

from __future__ import annotations

import math

__all__ = ["LN2", "bits_to_nats", "nats_to_bits"]

#: Nats in one bit: ln 2.
LN2 = math.log(2.0)


def nats_to_bits(nats: float) -> float:
    """An information quantity in nats, in bits (÷ ln 2).

    >>> nats_to_bits(math.log(4.0))
    2.0
    """
    return nats / LN2


def bits_to_nats(bits: float) -> float:
    """An information quantity in bits, in nats (× ln 2).

    >>> round(bits_to_nats(2.0), 12) == round(math.log(4.0), 12)
    True
    """
    return bits * LN2
