"""Information bounds of each mechanism's profile against its channel view's capacities.

"DP and Information Theory" (2022): Sibson radius ≤ C_α ≤ diameter, and a mechanism's
profile().information(α) must be
an upper bound on C_α (nats per individual). Each mechanism's channel view (a post-processing
of its release: windowed outputs with the tails lumped) has capacities ≤ the release's, so
every certified *lower* end of the view's capacity brackets, and its diameter (the RDP ε(α)
of the view), must stay below profile().information(α) / profile().rdp(α).
"""

from __future__ import annotations

import math

import pytest

from infodp.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    ReportNoisyMax,
    StaircaseMechanism,
    SubsampledGaussian,
)
from infodp.mechanisms.base import ChannelView

INF = math.inf
TOL = 1e-9


def _views() -> list[tuple[str, object, ChannelView]]:
    lap = LaplaceMechanism(1.0, sensitivity=1.0, grid=0.25)
    gau = GaussianMechanism(1.0, sensitivity=1.0, grid=0.25)
    dlap = DiscreteLaplaceMechanism(1.5, sensitivity=2)
    dgau = DiscreteGaussianMechanism(1.2, sensitivity=1)
    st = StaircaseMechanism(1.0, sensitivity=1.0, grid=0.25)
    rr = RandomizedResponse(1.0, k=3)
    em = ExponentialMechanism(1.0)
    pf = ReportNoisyMax(1.0)
    sg = SubsampledGaussian(0.8, 0.3, clip_norm=1.0, grid=0.25)
    utilities = [[0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [0.5, 0.5, 1.0]]
    gdef = GaussianMechanism.calibrate(1.0, 1e-5)  # grid 2^-10: merged window
    return [
        ("laplace", lap, lap.channel([0.0, 0.5, 1.0], tail=1e-8)),
        ("gaussian", gau, gau.channel([0.0, 1.0], tail=1e-8)),
        ("discrete-laplace", dlap, dlap.channel([0, 1, 2], tail=1e-8)),
        ("discrete-gaussian", dgau, dgau.channel([0, 1], tail=1e-8)),
        ("staircase", st, st.channel([0.0, 1.0], tail=1e-8)),
        ("randomized-response", rr, rr.channel()),
        ("exponential", em, em.channel(utilities)),
        ("permute-and-flip", pf, pf.channel(utilities)),
        ("subsampled-gaussian", sg, sg.channel([None, 1.0], tail=1e-8)),
        ("gaussian-default-grid", gdef, gdef.channel([0.0, 1.0], max_outputs=400)),
    ]


VIEWS = _views()


@pytest.mark.parametrize(("name", "mech", "view"), VIEWS, ids=[v[0] for v in VIEWS])
@pytest.mark.parametrize("alpha", [1.0, 2.0, INF])
def test_information_bounds_capacity(
    name: str, mech: object, view: ChannelView, alpha: float
) -> None:
    profile = mech.profile()  # type: ignore[attr-defined]
    info = profile.information(alpha)
    ch = view.channel
    sib = ch.sibson_capacity(alpha, tol=1e-7)
    assert sib.lower <= info + TOL, (name, alpha, sib.lower, info)
    ren = ch.renyi_capacity(alpha, n_starts=1)
    assert ren.lower <= info + TOL, (name, alpha, ren.lower, info)
    # the view's diameter is its RDP epsilon: never above the profile's RDP curve
    assert ch.diameter(alpha) <= float(profile.rdp(alpha)) * (1 + 1e-9) + TOL


def test_bounds_are_not_vacuous() -> None:
    # The check can fail: a mechanism with half the noise leaks more than the profile of
    # the original allows (view of Laplace scale 0.5 vs information of Laplace scale 1).
    loud = LaplaceMechanism(0.5, sensitivity=1.0, grid=0.25).channel([0.0, 1.0], tail=1e-8)
    quiet = LaplaceMechanism(1.0, sensitivity=1.0, grid=0.25)
    assert loud.channel.diameter(INF) > quiet.profile().information(INF)
    assert loud.channel.diameter(2.0) > quiet.profile().information(2.0)
    # and for randomized response the bound is tight at alpha = inf: C_inf = diameter = eps
    rr = RandomizedResponse(1.0, k=2)
    assert rr.channel().channel.diameter(INF) == pytest.approx(rr.profile().information(INF))


def test_package_all_matches_public_names() -> None:
    import infodp.mechanisms as pkg

    exported = {n for n in dir(pkg) if not n.startswith("_")}
    submodules = {"base", "exponential", "gaussian", "laplace", "randomized_response"}
    submodules |= {"sampling", "staircase", "subsampled", "annotations", "partition", "quantile"}
    submodules |= {"registry", "error_law"}
    assert set(pkg.__all__) == exported - submodules


@pytest.mark.parametrize(("name", "mech", "view"), VIEWS, ids=[v[0] for v in VIEWS])
def test_mechanisms_are_immutable(name: str, mech: object, view: ChannelView) -> None:
    import dataclasses

    field = dataclasses.fields(mech)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mech, field, 123.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.tail_mass = 0.5  # type: ignore[misc]
