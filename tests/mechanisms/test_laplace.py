"""Tests of the Laplace mechanism on a grid and the discrete Laplace mechanism.

Independent values: the closed-form pmf of Lap_Z (Canonne, Kamath & Steinke 2020, Def. 2),
the pure-DP ratio P(k)/P(k+m) = e^{m/b}, and dp-accounting's Laplace / discrete Laplace PLDs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms import laplace
from infodp.mechanisms.laplace import DiscreteLaplaceMechanism, LaplaceMechanism
from infodp.mechanisms.sampling import InsecureSeededSource


@given(
    eps=st.floats(0.01, 10.0),
    sens=st.floats(0.01, 100.0),
    k=st.integers(-12, 4),
)
def test_calibration_never_overshoots(eps: float, sens: float, k: int) -> None:
    m = LaplaceMechanism.calibrate(eps, sensitivity=sens)
    assert m.profile().pure_epsilon() <= eps
    # independent: the release noise in grid units b/g, integer sensitivity ceil(D/g)+1
    g = m.grid or 0.0
    m_int = math.ceil(sens / g) + 1
    assert m_int * g / m.scale <= eps
    # and the scale is not wastefully large (within 1e-9 of the least admissible)
    assert m.scale <= (m_int * g / eps) * (1 + 1e-9)
    gm = LaplaceMechanism.calibrate(eps, sensitivity=sens, grid=2.0**k)
    assert gm.profile().pure_epsilon() <= eps
    dm = DiscreteLaplaceMechanism.calibrate(eps, sensitivity=max(1, round(sens)))
    assert dm.profile().pure_epsilon() <= eps


def test_release_profile_matches_dp_accounting_discrete_laplace() -> None:
    m = LaplaceMechanism(2.0, sensitivity=1.0, grid=0.25)
    # discrete Laplace with parameter 1/(b/g) = 1/8 and integer sensitivity 5 (dp-accounting)
    peer = dp_pld.from_discrete_laplace_mechanism(
        parameter=1 / 8, sensitivity=5, value_discretization_interval=1e-5
    )
    for eps in (0.1, 0.3, 0.6):
        assert m.profile().delta(eps) >= peer.get_delta_for_epsilon(eps) - 1e-5
        assert m.profile().delta(eps) <= peer.get_delta_for_epsilon(eps) + 1e-3
    assert m.profile().pure_epsilon() == pytest.approx(5 / 8)


def test_release_is_on_grid_and_fits_discrete_laplace() -> None:
    m = LaplaceMechanism(1.0, sensitivity=1.0, grid=0.5)
    src = InsecureSeededSource(11, i_understand_this_is_not_private=True)
    draws = np.array([m.release(3.2, source=src) for _ in range(2000)])
    units = draws * 2 - 6  # round(3.2*2) = 6
    assert np.all(units == np.round(units))
    q = math.exp(-0.5)  # b/g = 2
    ks = np.arange(-6, 7)
    probs = (1 - q) / (1 + q) * q ** np.abs(ks).astype(float)
    probs[0] += q**7 / (1 + q)
    probs[-1] += q**7 / (1 + q)
    observed = np.array([(np.clip(units, -6, 6) == k).sum() for k in ks])
    assert stats.chisquare(observed, probs * units.size).pvalue > 1e-3
    fast = m.simulate(3.2, 20000, rng=2) * 2 - 6
    observed = np.array([(np.clip(fast, -6, 6) == k).sum() for k in ks])
    assert stats.chisquare(observed, probs * fast.size).pvalue > 1e-3


def test_release_refuses_seed_and_bad_values() -> None:
    m = DiscreteLaplaceMechanism(2.0)
    with pytest.raises(ParameterError, match="seed"):
        m.release(3, source=42)
    with pytest.raises(ParameterError, match="integer"):
        m.release(3.5)
    assert isinstance(m.release(3), int)  # cryptographic source by default
    with pytest.raises(ParameterError):
        LaplaceMechanism(1.0).release(float("nan"))


def test_channel_view_is_exact_discrete_laplace() -> None:
    m = DiscreteLaplaceMechanism(1.5, sensitivity=1)
    view = m.channel([0, 1], tail=1e-10)
    w = view.channel.matrix
    # pure DP of the view equals e^{1/1.5} (ratio of adjacent rows, Mironov 2017 D_inf)
    assert view.channel.epsilon() == pytest.approx(1 / 1.5, rel=1e-9)
    outs = np.array(view.channel.outputs)
    q = math.exp(-1 / 1.5)
    assert w[0][outs == 0][0] == pytest.approx((1 - q) / (1 + q), rel=1e-12)
    assert view.tail_mass <= 2e-10


def test_laplace_channel_on_grid() -> None:
    m = LaplaceMechanism(1.0, sensitivity=1.0, grid=0.25)
    view = m.channel([0.0, 1.0])
    assert view.channel.epsilon() <= m.profile().pure_epsilon() + 1e-12
    assert view.channel.epsilon() == pytest.approx(1.0, rel=1e-9)  # shift by 4 units, b/g=4
    # default grid 2^-10: the window is merged into <= 100 outputs (post-processing), so
    # its epsilon can only drop below the release's
    fine = LaplaceMechanism(1.0, sensitivity=1.0)
    merged = fine.channel([0.0, 1.0], max_outputs=100)
    assert merged.channel.n_outputs <= 100 and "merged" in merged.description
    assert merged.channel.epsilon() <= fine.profile().pure_epsilon() * (1 + 1e-9)
    assert merged.channel.epsilon() > 0.9  # merging runs of ~200 points loses a little


def test_invalid_and_all() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        LaplaceMechanism.calibrate(0.0)
    with pytest.raises(ParameterError, match="sensitivity"):
        DiscreteLaplaceMechanism(1.0, sensitivity=0)
    with pytest.raises(AttributeError):
        LaplaceMechanism(1.0).scale = 3.0  # type: ignore[misc]
    public = {
        n
        for n, v in vars(laplace).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == laplace.__name__
    }
    assert public == set(laplace.__all__)


def test_release_depends_on_the_snapped_value_only() -> None:
    # Mironov (2012): textbook float Laplace leaks the input through the output's low-order
    # bits. Here the output is a function of round(x/grid) and the random source only: two
    # inputs on the same grid cell give bit-identical releases from identically seeded
    # sources, and every output is an exact multiple of the grid.
    m = LaplaceMechanism(1.0, sensitivity=1.0, grid=2.0**-10)
    a = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    b = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    xs = [m.release(0.3, source=a) for _ in range(200)]
    ys = [m.release(0.3 + 1e-9, source=b) for _ in range(200)]
    assert xs == ys
    assert all((x * 1024).is_integer() for x in xs)
    c = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    zs = [m.release(0.3 + 2**-10, source=c) for _ in range(200)]  # the next grid cell
    assert [z - 2**-10 for z in zs] == xs


@given(
    eps=st.floats(0.01, 20, allow_nan=False),
    sensitivity=st.floats(0.01, 100, allow_nan=False),
    integer_sensitivity=st.integers(1, 50),
)
def test_calibration_never_overshoots_in_exact_arithmetic(
    eps: float, sensitivity: float, integer_sensitivity: int
) -> None:
    # The release samples with the exact rational scale, so its ε is exactly (units·grid)/scale
    # (discrete Laplace, CKS 2020); a float division could round below it by half an ulp.
    from fractions import Fraction

    m = LaplaceMechanism.calibrate(eps, sensitivity=sensitivity)
    assert m.grid is not None
    exact = Fraction(m.integer_sensitivity) * Fraction(m.grid) / Fraction(m.scale)
    assert exact <= Fraction(eps)
    assert Fraction(m.profile().pure_epsilon()) >= exact
    d = DiscreteLaplaceMechanism.calibrate(eps, sensitivity=integer_sensitivity)
    assert Fraction(integer_sensitivity) / Fraction(d.scale) <= Fraction(eps)


def test_reviewed_overshoot_examples() -> None:
    from fractions import Fraction

    m = LaplaceMechanism.calibrate(0.5812516483449581, sensitivity=0.3)
    assert m.grid is not None
    exact = Fraction(m.integer_sensitivity) * Fraction(m.grid) / Fraction(m.scale)
    assert exact <= Fraction(0.5812516483449581)
    d = DiscreteLaplaceMechanism.calibrate(3.7365585313896807, sensitivity=2)
    assert Fraction(2) / Fraction(d.scale) <= Fraction(3.7365585313896807)


def test_laplace_release_refuses_a_source_without_the_insecure_opt_in() -> None:
    """A RandomSource that does not declare itself secure is refused by every release, as
    the curator's release path does; only the seeded source built with the explicit opt-in
    passes (regression: LaplaceMechanism.release accepted any RandomSource)."""
    import random

    from infodp.mechanisms import (
        DiscreteGaussianMechanism,
        GaussianMechanism,
        RandomizedResponse,
        StaircaseMechanism,
    )
    from infodp.mechanisms.sampling import RandomSource

    class Predictable(RandomSource):  # secure = False, and no opt-in anywhere
        def __init__(self) -> None:
            self._r = random.Random(0)

        def randbelow(self, n: int) -> int:
            return self._r.randrange(n)

    # An InsecureSeededSource made without __init__ skipped the opt-in too.
    bypass = InsecureSeededSource.__new__(InsecureSeededSource)
    bypass._random = random.Random(0)
    cases = [
        (LaplaceMechanism(1.0), 1.0),
        (DiscreteLaplaceMechanism(1.0), 1),
        (GaussianMechanism(1.0), 1.0),
        (DiscreteGaussianMechanism(1.0), 1),
        (RandomizedResponse(1.0, 2), 0),
        (StaircaseMechanism(1.0), 1.0),
    ]
    for mech, value in cases:
        for source in (Predictable(), bypass):
            with pytest.raises(ParameterError, match="secure RandomSource") as err:
                mech.release(value, source=source)
            assert err.value.argument == "source"
        seeded = InsecureSeededSource(0, i_understand_this_is_not_private=True)
        mech.release(value, source=seeded)  # the explicit opt-in is accepted
    with pytest.raises(ParameterError, match="secure RandomSource"):
        LaplaceMechanism(1.0).release_batch([0, 1], source=Predictable())
