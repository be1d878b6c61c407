"""Mechanism design from information: the least-leaking channel for a distortion budget.

Given a prior on one person's value (or the worst case), a distortion measure and a budget D
on the expected distortion, find the channel P(Y|X) that leaks the least, measured as pure ε
(the privacy–distortion function of Wang, Ying & Zhang 2016), as mutual information (the
rate–distortion function, Blahut 1972), as Sibson's α-information or as maximal leakage
(Issa, Wagner & Kamath 2020) — Ünsal & Önen 2023, §5. Every answer is a certified bracket in
nats and a :class:`~infodp.channel.Channel` that attains the upper end.

>>> from infodp.design import design
>>> r = design([0.25] * 4, "hamming", 0.2, objective="mutual-information")
>>> r.gap <= 1e-9, round(r.distortion, 9)
(True, 0.2)
"""

from __future__ import annotations

from infodp.design.api import design, tradeoff_curve
from infodp.design.distortion import (
    DISTORTIONS,
    as_distortion,
    distortion_matrix,
    read_distortion_csv,
)
from infodp.design.epsilon import NEIGHBOURS, min_distortion, min_epsilon
from infodp.design.html import render_curve_html, write_curve_html
from infodp.design.leakage import min_maximal_leakage, min_sibson
from infodp.design.problem import Problem, as_problem
from infodp.design.rate_distortion import blahut_arimoto_rd, rate_distortion
from infodp.design.result import OBJECTIVES, DesignResult

__all__ = [
    "DISTORTIONS",
    "NEIGHBOURS",
    "OBJECTIVES",
    "DesignResult",
    "Problem",
    "as_distortion",
    "as_problem",
    "blahut_arimoto_rd",
    "design",
    "distortion_matrix",
    "min_distortion",
    "min_epsilon",
    "min_maximal_leakage",
    "min_sibson",
    "rate_distortion",
    "read_distortion_csv",
    "render_curve_html",
    "tradeoff_curve",
    "write_curve_html",
]
