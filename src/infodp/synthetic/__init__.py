"""Differentially private synthetic data from measured marginals (non-interactive release).

A table's declared columns become a finite domain (:mod:`~infodp.synthetic.domain`); low-order
marginals are selected and measured with infodp's exact discrete Gaussian under zCDP
(:mod:`~infodp.synthetic.measure`, :mod:`~infodp.synthetic.budget`) by AIM (default,
:mod:`~infodp.synthetic.aim`; McKenna et al. 2022) or MST (:mod:`~infodp.synthetic.mst`;
McKenna, Miklau & Sheldon 2021); a graphical model is fitted to the noisy marginals — on a
junction tree for AIM (:mod:`~infodp.synthetic.junction`), on MST's tree for MST
(:mod:`~infodp.synthetic.model`) — and rows are drawn from it, with a fidelity report computed from
released values only (:mod:`~infodp.synthetic.fidelity`). The curator releases it through
:meth:`infodp.curator.Curator.release_synthetic`.

>>> from infodp.synthetic import METHODS
>>> METHODS
('aim', 'mst')
"""

from __future__ import annotations

from infodp.synthetic.aim import aim
from infodp.synthetic.budget import rho_for
from infodp.synthetic.domain import Domain
from infodp.synthetic.guarantee import ZCDPGuarantee
from infodp.synthetic.mst import mst
from infodp.synthetic.release import MAX_ROWS, METHODS, SyntheticData, synthesize
from infodp.synthetic.table import SyntheticTable

__all__ = [
    "MAX_ROWS",
    "METHODS",
    "Domain",
    "SyntheticData",
    "SyntheticTable",
    "ZCDPGuarantee",
    "aim",
    "mst",
    "rho_for",
    "synthesize",
]
