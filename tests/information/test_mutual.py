"""Tests for infodp.information.mutual.

References:
[CT06]  Cover & Thomas 2006, "Elements of Information Theory": eq. (2.28) (MI), eq. (2.60)
        (conditional MI), Thm 2.5.2 (chain rule), Thm 2.8.1 (data processing).
[Seed]  "Differential Privacy and Information Theory" (seeds/000): I_α = D_α(P_XY‖P_X P_Y); the
        binary symmetric channel's radius log 2 − H_α(p) and Sibson's I^s_∞ = log(2 max(p, 1−p)).
[Ver15] Verdú 2015, "α-mutual information", ITA, and Esposito, Gastpar & Issa 2024
        (arXiv:2405.08352) Sec. 3, Thm 4.1: Sibson's closed form as a minimum over Q,
        monotonicity in α, data processing.
[Smi09] Smith 2009, "On the foundations of quantitative information flow", FoSSaCS.
[IWK20] Issa, Wagner & Kamath 2020, "An operational approach to information leakage".
[BCP09] Braun, Chatzikokolakis & Palamidessi 2009, "Quantitative notions of leakage for
        one-try attacks", MFPS (min-entropy leakage ≤ capacity = log Σ_y max_x W, equality at
        the uniform prior).
Peers: dit (bits, converted with ln 2).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext

import dit
import numpy as np
import pytest
from dit.other import sibson_mutual_information_pmf
from hypothesis import given
from hypothesis import strategies as st

from infodp.errors import ParameterError
from infodp.information import mutual
from infodp.information.divergence import max_divergence, renyi_divergence
from infodp.information.entropy import binary_entropy, binary_renyi_entropy, shannon_entropy
from infodp.information.mutual import (
    conditional_mutual_information,
    joint_mutual_information,
    maximal_leakage,
    min_entropy_leakage,
    mutual_information,
    renyi_mutual_information,
    sibson_mutual_information,
)
from infodp.testing import channels, joint_distributions, probability_vectors, renyi_orders

LN2 = math.log(2.0)


def _bsc(p: float) -> list[list[float]]:
    return [[1 - p, p], [p, 1 - p]]


def _dit_joint(joint: np.ndarray) -> dit.Distribution:
    outcomes = ["".join(str(i) for i in idx) for idx in itertools.product(*map(range, joint.shape))]
    return dit.Distribution(outcomes, list(joint.ravel()), validate=False, trim=False)


@st.composite
def prior_and_channel(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n_in = draw(st.integers(1, 4))
    prior = draw(probability_vectors(n_in))
    W = draw(channels(n_in))
    return prior, W


# ------------------------------------------------------------------------------------------
# closed forms: the binary symmetric channel


@pytest.mark.parametrize("p", [0.0, 0.01, 0.1, 0.3, 0.5])
def test_bsc_shannon_capacity(p: float) -> None:
    # [CT06, Sec. 7.1.4]: I = log 2 − h(p) at the uniform prior.
    expected = LN2 - binary_entropy(p)
    assert mutual_information([0.5, 0.5], _bsc(p)) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 10.0, 1e6])
@pytest.mark.parametrize("p", [0.01, 0.1, 0.3])
def test_bsc_radius_is_log2_minus_binary_renyi(p: float, alpha: float) -> None:
    # "Sufficient vs Necessary": at P_X uniform both the "DP and Information Theory" (2022)
    # article's I_α and
    # Sibson's I^s_α equal the radius log 2 − H_α(p) (P_Y is uniform, so P_X P_Y = P_X Q*).
    expected = LN2 - binary_renyi_entropy(p, alpha)
    assert renyi_mutual_information([0.5, 0.5], _bsc(p), alpha) == pytest.approx(
        expected, rel=1e-11, abs=1e-14
    )
    if alpha > 0:
        assert sibson_mutual_information([0.5, 0.5], _bsc(p), alpha) == pytest.approx(
            expected, rel=1e-11, abs=1e-14
        )


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3])
def test_bsc_sibson_infinity_and_diameter(p: float) -> None:
    # Sibson's definition: I^s_∞ = log(2 max(p, 1−p)) whereas the ε of the channel
    # (its diameter at α = ∞) is log((1−p)/p).
    W = _bsc(p)
    assert sibson_mutual_information([0.5, 0.5], W, math.inf) == pytest.approx(
        math.log(2 * max(p, 1 - p)), rel=1e-14
    )
    assert maximal_leakage(W) == pytest.approx(math.log(2 * (1 - p)), rel=1e-14)
    assert max_divergence(W[0], W[1]) == pytest.approx(math.log((1 - p) / p), rel=1e-14)
    # [Seed]: radius ≤ C_∞ ≤ diameter, so I_∞ at any prior stays below log((1−p)/p).
    assert renyi_mutual_information([p, 1 - p], W, math.inf) <= math.log((1 - p) / p) + 1e-14


def test_identity_channel_leaks_the_whole_input() -> None:
    # A noiseless channel: I(X;Y) = H(X); min-entropy leakage = H_∞(X) [Smi09];
    # maximal leakage = log |X| [IWK20, Example after Thm 1].
    prior = [0.5, 0.3, 0.2]
    W = np.eye(3)
    assert mutual_information(prior, W) == pytest.approx(shannon_entropy(prior), rel=1e-14)
    assert min_entropy_leakage(prior, W) == pytest.approx(-math.log(0.5), rel=1e-14)
    assert maximal_leakage(W) == pytest.approx(math.log(3), rel=1e-14)


def test_randomized_response_leakages() -> None:
    # ln3-RR (seeds/002): maximal leakage log(3/4 + 3/4) = log 1.5; min-entropy leakage at the
    # uniform prior equals it [BCP09]; at a skewed prior it is smaller.
    W = [[0.75, 0.25], [0.25, 0.75]]
    assert maximal_leakage(W) == pytest.approx(math.log(1.5), rel=1e-14)
    assert min_entropy_leakage([0.5, 0.5], W) == pytest.approx(math.log(1.5), rel=1e-14)
    # Skewed prior (0.9, 0.1): Σ_y max_x P(x)W(y|x) = 0.675 + 0.225 = 0.9 → leakage 0.
    assert min_entropy_leakage([0.9, 0.1], W) == pytest.approx(0.0, abs=1e-15)


def test_sibson_order_zero_limit() -> None:
    # I^s_0 = −log max_y P_X({x: W(y|x) > 0}), the α ↓ 0 limit of [Ver15]'s closed form.
    prior = [0.5, 0.3, 0.2]
    W = [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]]
    expected = -math.log(0.5)
    assert sibson_mutual_information(prior, W, 0.0) == pytest.approx(expected, rel=1e-14)
    assert sibson_mutual_information(prior, W, 1e-4) == pytest.approx(expected, rel=1e-3)


# ------------------------------------------------------------------------------------------
# peers: dit


def test_mutual_information_matches_dit() -> None:
    rng = np.random.default_rng(2006)
    for _ in range(10):
        prior = rng.dirichlet(np.ones(3))
        W = rng.dirichlet(np.ones(4), size=3)
        joint = prior[:, None] * W
        ref = dit.shannon.mutual_information(_dit_joint(joint), [0], [1]) * LN2
        assert mutual_information(prior, W) == pytest.approx(ref, rel=1e-10)
        assert joint_mutual_information(joint) == pytest.approx(ref, rel=1e-10)


def test_conditional_mutual_information_matches_dit() -> None:
    rng = np.random.default_rng(260)
    for _ in range(10):
        joint = rng.dirichlet(np.ones(2 * 3 * 2)).reshape(2, 3, 2)
        ref = dit.multivariate.coinformation(_dit_joint(joint), [[0], [1]], [2]) * LN2
        assert conditional_mutual_information(joint) == pytest.approx(ref, rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("alpha", [0.2, 0.7, 1.0, 1.01, 2.0, 5.0, math.inf])
def test_sibson_matches_dit(alpha: float) -> None:
    # (dit divides by α − 1 directly, so it is only compared away from α = 1; near 1 we check
    # continuity to Shannon MI in test_orders_near_one_agree_with_shannon.)
    rng = np.random.default_rng(1969)
    for _ in range(10):
        prior = rng.dirichlet(np.ones(3))
        W = rng.dirichlet(np.ones(4) * 0.7, size=3)
        ref = sibson_mutual_information_pmf(prior[:, None] * W, alpha) * LN2
        assert sibson_mutual_information(prior, W, alpha) == pytest.approx(ref, rel=1e-8)


def test_maximal_leakage_matches_dit() -> None:
    rng = np.random.default_rng(2020)
    for _ in range(10):
        W = rng.dirichlet(np.ones(5), size=4)
        prior = rng.dirichlet(np.ones(4))
        d = _dit_joint(prior[:, None] * W)
        ref = dit.other.maximal_leakage(d, [0], [1]) * LN2
        assert maximal_leakage(W) == pytest.approx(ref, rel=1e-10)


def test_renyi_mi_equals_divergence_of_joint_from_product() -> None:
    # [Seed]: I_α(X;Y) = D_α(P_XY ‖ P_X P_Y), here through renyi_divergence on flattened tables.
    rng = np.random.default_rng(3)
    prior = rng.dirichlet(np.ones(3))
    W = rng.dirichlet(np.ones(3), size=3)
    joint = prior[:, None] * W
    product = np.outer(prior, prior @ W)
    alphas = [0.0, 0.5, 1.0, 3.0, math.inf]
    assert renyi_mutual_information(prior, W, alphas) == pytest.approx(
        renyi_divergence(joint.ravel(), product.ravel(), alphas), rel=1e-11, abs=1e-15
    )


# ------------------------------------------------------------------------------------------
# extreme numerics


def _decimal_sibson(prior: list[float], W: list[list[float]], alpha: float) -> float:
    """[Ver15] closed form in 700-digit decimals (no overflow or underflow possible)."""
    with localcontext(Context(prec=700, Emax=999_999_999, Emin=-999_999_999)):
        a = Decimal(alpha)
        total = Decimal(0)
        for y in range(len(W[0])):
            inner = sum(
                Decimal(px) * (a * Decimal(row[y]).ln()).exp()
                for px, row in zip(prior, W, strict=True)
                if row[y] > 0
            )
            total += (inner.ln() / a).exp()
        return float(a / (a - 1) * total.ln())


@pytest.mark.parametrize("alpha", [0.5, 2.0, 1e6])
def test_sibson_with_tiny_transitions_against_decimal(alpha: float) -> None:
    prior = [0.5, 0.5]
    W = [[1e-300, 1.0 - 1e-300], [0.25, 0.75]]
    ours = sibson_mutual_information(prior, W, alpha)
    assert math.isfinite(ours)
    assert ours == pytest.approx(_decimal_sibson(prior, W, alpha), rel=1e-9)


@pytest.mark.parametrize("alpha", [1e100, 1e300, 1.7e308])
def test_astronomical_orders_reach_the_infinite_order(alpha: float) -> None:
    # I^s_α ↑ I^s_∞ and I_α ↑ I_∞ (monotone limits, [Ver15]; [vEH14, Thm 6]); at α ≥ 1e100 the
    # gap is below rounding, and W^α underflows for every entry < 1 in a naive evaluation.
    prior = [0.5, 0.3, 0.2]
    W = [[1e-300, 0.5, 0.5], [0.25, 0.7, 0.05], [0.1, 0.2, 0.7]]
    for info in (sibson_mutual_information, renyi_mutual_information):
        assert info(prior, W, alpha) == pytest.approx(info(prior, W, math.inf), rel=1e-12)


@pytest.mark.parametrize("delta", [1e-12, -1e-12])
def test_orders_near_one_agree_with_shannon(delta: float) -> None:
    prior = [0.2, 0.3, 0.5]
    W = [[0.7, 0.2, 0.1], [1e-300, 0.5, 0.5], [0.1, 0.1, 0.8]]
    mi = mutual_information(prior, W)
    assert sibson_mutual_information(prior, W, 1 + delta) == pytest.approx(mi, rel=1e-9)
    assert renyi_mutual_information(prior, W, 1 + delta) == pytest.approx(mi, rel=1e-9)


# ------------------------------------------------------------------------------------------
# laws (hypothesis)


@given(joint_distributions(ndim=3))
def test_chain_rule(joint: np.ndarray) -> None:
    # [CT06, Thm 2.5.2]: I(X;YZ) = I(X;Z) + I(X;Y|Z).
    x_yz = joint.reshape(joint.shape[0], -1)
    x_z = joint.sum(axis=1)
    lhs = joint_mutual_information(x_yz)
    rhs = joint_mutual_information(x_z) + conditional_mutual_information(joint)
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-12)


@pytest.mark.slow  # ~0.5 CPU-s (measured)
@given(prior_and_channel(), renyi_orders(min_value=1e-3))
def test_sibson_below_renyi_mi_and_maximal_leakage(
    pw: tuple[np.ndarray, np.ndarray], alpha: float
) -> None:
    # I^s_α = min_Q D_α(P_XY‖P_X Q) ≤ D_α(P_XY‖P_X P_Y) = I_α [Seed; Ver15], and
    # I^s_α ≤ I^s_∞ ≤ log Σ_y max_x W(y|x) = maximal leakage [Ver15; IWK20].
    prior, W = pw
    s = sibson_mutual_information(prior, W, alpha)
    assert 0.0 <= s <= renyi_mutual_information(prior, W, alpha) + 1e-9 * max(1.0, s)
    assert s <= maximal_leakage(W) + 1e-9


@given(prior_and_channel(), st.lists(renyi_orders(), min_size=2, max_size=4))
def test_information_non_decreasing_in_alpha(
    pw: tuple[np.ndarray, np.ndarray], orders: list[float]
) -> None:
    # I_α inherits monotonicity from D_α [vEH14, Thm 3]; I^s_α is non-decreasing [Ver15].
    prior, W = pw
    alphas = sorted(orders)
    for values in (
        renyi_mutual_information(prior, W, alphas),
        sibson_mutual_information(prior, W, alphas),
    ):
        for lo, hi in itertools.pairwise(values):
            assert hi >= lo - 1e-9 * max(1.0, lo)


@pytest.mark.slow  # ~0.5 CPU-s (measured)
@given(prior_and_channel(), st.integers(1, 4), st.data())
def test_post_processing_never_increases_information(
    pw: tuple[np.ndarray, np.ndarray], n_out: int, data: st.DataObject
) -> None:
    # [Seed] "I_α(X; g(Y)) ≤ I_α(X; Y)" and [CT06, Thm 2.8.1]; also for Sibson [Ver15] and
    # maximal leakage [IWK20]. g is a random channel from Y to Z.
    prior, W = pw
    G = data.draw(channels(W.shape[1], n_out))
    WG = W @ G
    WG = WG / WG.sum(axis=1, keepdims=True)
    alpha = data.draw(renyi_orders(min_value=1e-3))
    tol = 1e-9
    assert mutual_information(prior, WG) <= mutual_information(prior, W) + tol
    assert sibson_mutual_information(prior, WG, alpha) <= (
        sibson_mutual_information(prior, W, alpha) * (1 + tol) + tol
    )
    assert maximal_leakage(WG) <= maximal_leakage(W) + tol


@given(prior_and_channel())
def test_shannon_bounds_and_leakage_ordering(pw: tuple[np.ndarray, np.ndarray]) -> None:
    prior, W = pw
    mi = mutual_information(prior, W)
    # 0 ≤ I(X;Y) ≤ min(H(X), log |Y|) [CT06, eq. (2.45) and Thm 2.6.4].
    assert 0.0 <= mi <= min(shannon_entropy(prior), math.log(W.shape[1])) + 1e-9
    # Min-entropy leakage ≤ maximal leakage (min-entropy capacity) [BCP09; IWK20] and the
    # maximal leakage never exceeds the channel's pure ε (largest row max-divergence).
    leak = min_entropy_leakage(prior, W)
    assert 0.0 <= leak <= maximal_leakage(W) + 1e-9
    eps = max(max_divergence(a, b) for a in W for b in W)
    assert maximal_leakage(W) <= eps + 1e-9


@given(prior_and_channel(), renyi_orders())
def test_never_nan_never_negative(pw: tuple[np.ndarray, np.ndarray], alpha: float) -> None:
    prior, W = pw
    for value in (
        renyi_mutual_information(prior, W, alpha),
        sibson_mutual_information(prior, W, alpha),
    ):
        assert value >= 0.0
        assert math.isfinite(value)  # I_α ≤ D_α(P_XY‖P_X P_Y) is finite: supports nest


# ------------------------------------------------------------------------------------------
# inputs and validation


@dataclass(frozen=True)
class _HasMatrix:
    matrix: np.ndarray


def test_accepts_objects_with_a_matrix_attribute() -> None:
    W = np.array(_bsc(0.2))
    assert mutual_information([0.5, 0.5], _HasMatrix(W)) == mutual_information([0.5, 0.5], W)
    assert maximal_leakage(_HasMatrix(W)) == maximal_leakage(W)


@pytest.mark.parametrize(
    ("channel", "needle"),
    [
        ([[0.5, 0.5], [0.7, -0.1, 0.4]], "channel"),
        ([[0.5, 0.5], [1.2, -0.2]], "channel row 1 must be non-negative"),
        ([[0.5, 0.5], [0.5, float("nan")]], "channel row 1 must contain only finite"),
        ([[0.5, 0.5], [0.6, 0.6]], "channel row 1 must sum to 1"),
        ([0.5, 0.5], "channel must be a non-empty 2-d array"),
        ([["a", "b"]], "channel"),
    ],
)
def test_bad_channel_names_the_row(channel: object, needle: str) -> None:
    with pytest.raises(ParameterError, match=needle):
        mutual_information([0.5, 0.5], channel)


def test_bad_prior_and_joint() -> None:
    with pytest.raises(ParameterError, match="prior"):
        mutual_information([1.0], _bsc(0.1))
    with pytest.raises(ParameterError, match="prior must sum to 1"):
        sibson_mutual_information([0.5, 0.6], _bsc(0.1), 2)
    with pytest.raises(ParameterError, match="alpha"):
        sibson_mutual_information([0.5, 0.5], _bsc(0.1), -1)
    with pytest.raises(ParameterError, match="joint must sum to 1"):
        joint_mutual_information([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ParameterError, match="joint must be a non-empty 3-d"):
        conditional_mutual_information([[0.5, 0.5]])
    with pytest.raises(ParameterError, match="joint must be non-negative"):
        joint_mutual_information([[1.5, -0.5]])


def test_vectorised_over_alpha() -> None:
    alphas = np.array([[0.5, 1.0], [2.0, math.inf]])
    out = sibson_mutual_information([0.5, 0.5], _bsc(0.1), alphas)
    assert isinstance(out, np.ndarray)
    assert out.shape == (2, 2)
    assert out[1, 1] == sibson_mutual_information([0.5, 0.5], _bsc(0.1), math.inf)
    assert isinstance(renyi_mutual_information([0.5, 0.5], _bsc(0.1), 2), float)


def test_all_matches_public_names() -> None:
    defined_here = {
        n
        for n, obj in vars(mutual).items()
        if not n.startswith("_")
        and callable(obj)
        and getattr(obj, "__module__", "") == mutual.__name__
    }
    assert set(mutual.__all__) == defined_here
