"""dp_accounting event trees accounted by infodp, checked against dp_accounting's own PLD.

The reference is dp_accounting's pessimistic PLD (connect-the-dots; Doroshenko, Ghazi, Kamath,
Kumar & Manurangsi 2022) at a fine grid, an independent implementation: infodp's certified ε
must not be below it by more than that grid's own discretisation, and not above it by more
than 1e-3 relatively. The reference PLD is built leaf by leaf from dp_accounting's PLD
constructors, because its ``PLDAccountant`` composes a randomized-response event once
whatever its count (dp_accounting 0.6.0: ``SelfComposedDpEvent(RR, 30)`` gives the ε of one
RR); for trees without randomized response the accountant itself is compared too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from dp_accounting import dp_event as de
from dp_accounting.pld import privacy_loss_distribution as dpa
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

from infodp.accounting import gaussian_profile, laplace_profile, subsampled_gaussian_profile
from infodp.accounting.interop import (
    DpEventAccountant,
    UnsupportedEvent,
    event_from_profile,
    profile_from_event,
)
from infodp.errors import ParameterError

FINE = 5e-5  # dp_accounting's grid for the reference (its default is 1e-4)
DELTA = 1e-6


def _leaf(rng: np.random.Generator, relation: str) -> Any:
    kind = rng.integers(4 if relation == "add_remove" else 3)
    if kind == 0:
        return de.GaussianDpEvent(float(rng.uniform(3.0, 30.0)))
    if relation == "replace_one" and kind == 1:
        k = int(rng.integers(2, 6))
        return de.RandomizedResponseDpEvent(float(rng.uniform(0.6, 0.95)), k)
    if kind == 1 or kind == 2:
        return (
            de.LaplaceDpEvent(float(rng.uniform(10.0, 100.0)))
            if relation == "add_remove"
            else (de.GaussianDpEvent(float(rng.uniform(5.0, 30.0))))
        )
    return de.PoissonSampledDpEvent(
        float(rng.uniform(0.002, 0.03)), de.GaussianDpEvent(float(rng.uniform(0.8, 3.0)))
    )


def _tree(rng: np.random.Generator, relation: str, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 2 or roll < 0.35:
        return _leaf(rng, relation)
    if roll < 0.65:
        return de.SelfComposedDpEvent(_tree(rng, relation, depth + 1), int(rng.integers(2, 40)))
    children = [_tree(rng, relation, depth + 1) for _ in range(int(rng.integers(1, 4)))]
    if rng.random() < 0.3:
        children.append(de.NoOpDpEvent())
    return de.ComposedDpEvent(children)


def _leaves(event: Any, count: int, out: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
    if isinstance(event, de.SelfComposedDpEvent):
        return _leaves(event.event, count * event.count, out)
    if isinstance(event, de.ComposedDpEvent):
        for e in event.events:
            _leaves(e, count, out)
        return out
    if not isinstance(event, de.NoOpDpEvent):
        out.append((event, count))
    return out


def _reference(event: Any, count: int, rel: NeighboringRelation) -> float:
    pld = dpa.identity(value_discretization_interval=FINE)
    for leaf, k in _leaves(event, count, []):
        if isinstance(leaf, de.GaussianDpEvent):
            one = dpa.from_gaussian_mechanism(
                leaf.noise_multiplier, value_discretization_interval=FINE, neighboring_relation=rel
            )
        elif isinstance(leaf, de.LaplaceDpEvent):
            one = dpa.from_laplace_mechanism(
                leaf.noise_multiplier, value_discretization_interval=FINE
            )
        elif isinstance(leaf, de.RandomizedResponseDpEvent):
            one = dpa.from_randomized_response(
                leaf.noise_parameter,
                leaf.num_buckets,
                value_discretization_interval=FINE,
                neighboring_relation=rel,
            )
        else:
            one = dpa.from_gaussian_mechanism(
                leaf.event.noise_multiplier,
                sampling_prob=leaf.sampling_probability,
                value_discretization_interval=FINE,
                neighboring_relation=rel,
            )
        pld = pld.compose(one.self_compose(k))
    return float(pld.get_epsilon_for_delta(DELTA))


def _cases() -> list[tuple[int, str]]:
    return [(i, "add_remove") for i in range(24)] + [(i, "replace_one") for i in range(24, 30)]


@pytest.mark.slow  # dp-accounting's fine-grid PLD: seconds of CPU per tree
@pytest.mark.parametrize(("seed", "relation"), _cases())
def test_random_trees_match_dp_accounting_fine_pld(seed: int, relation: str) -> None:
    rng = np.random.default_rng(seed)
    event = _tree(rng, relation)
    count = int(rng.integers(1, 4))
    rel = (
        NeighboringRelation.ADD_OR_REMOVE_ONE
        if relation == "add_remove"
        else NeighboringRelation.REPLACE_ONE
    )
    ref = _reference(event, count, rel)
    ours = DpEventAccountant(rel)
    assert ours.supports(event)
    eps = ours.compose(event, count).get_epsilon(DELTA)
    # dp_accounting rounds every composed mechanism's losses up by less than one grid step,
    # so its fine value exceeds the true ε by at most (number of mechanisms) × FINE; for 90
    # RR(0.303) the exact binomial value is 16.4032142, dp_accounting's 16.40450 at 2e-5.
    uses = sum(k for _, k in _leaves(event, count, []))
    assert eps >= ref - uses * FINE
    assert eps <= ref * (1 + 1e-3) + 1e-9
    if not any(isinstance(leaf, de.RandomizedResponseDpEvent) for leaf, _ in _leaves(event, 1, [])):
        accountant = PLDAccountant(rel, value_discretization_interval=FINE)
        assert accountant.supports(event)
        assert accountant.compose(event, count).get_epsilon(DELTA) == pytest.approx(ref, rel=1e-6)


def test_poisson_sampled_gaussian_is_the_subsampled_profile() -> None:
    event = de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.1)), 1000)
    profile = profile_from_event(event)
    assert profile == subsampled_gaussian_profile(1.1, 0.01).repeat(1000)
    # Never above dp_accounting's RDP accountant (Mironov, Talwar & Zhang 2019).
    rdp = RdpAccountant().compose(event).get_epsilon(1e-5)
    assert profile.epsilon(1e-5) <= rdp


def test_sampled_without_replacement_is_dominated_like_rdp_says() -> None:
    # dp_accounting's RDP accountant supports fixed-size sampling (replace-one; Wang, Balle &
    # Kasiviswanathan 2019): infodp's bound must be a bound of the same run, so no tighter
    # than the true curve; check it is within the RDP figure's ballpark from above or below
    # and that the Poisson figure (noise z, sensitivity 1) is smaller than both.
    event = de.SampledWithoutReplacementDpEvent(10_000, 100, de.GaussianDpEvent(2.0))
    acc = DpEventAccountant(NeighboringRelation.REPLACE_ONE).compose(event, 500)
    rdp = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE).compose(event, 500)
    poisson = subsampled_gaussian_profile(2.0, 0.01).repeat(500).epsilon(1e-5)
    ours = acc.get_epsilon(1e-5)
    assert poisson < ours
    assert poisson < rdp.get_epsilon(1e-5)


def test_non_private_and_no_op_events() -> None:
    acc = DpEventAccountant()
    acc.compose(de.NoOpDpEvent(), 5)
    assert acc.get_epsilon(1e-5) == 0.0
    acc.compose(de.NonPrivateDpEvent())
    assert acc.get_epsilon(1e-5) == math.inf
    assert acc.get_delta(10.0) == 1.0
    assert DpEventAccountant().compose(de.GaussianDpEvent(0.0)).get_epsilon(0.5) == math.inf


def test_unsupported_events_are_refused_not_guessed() -> None:
    acc = DpEventAccountant()
    rr = de.RandomizedResponseDpEvent(0.5, 2)  # private under replace-one only
    assert not acc.supports(rr)
    with pytest.raises(UnsupportedEvent, match="replace_one"):
        acc.compose(rr)
    assert not acc.supports(de.UnsupportedDpEvent())
    tree = de.PoissonSampledDpEvent(0.1, de.LaplaceDpEvent(1.0))
    assert not acc.supports(tree)
    assert acc.get_epsilon(1e-5) == 0.0  # nothing was composed
    with pytest.raises(ParameterError, match="neighboring_relation"):
        DpEventAccountant("substitute")


def test_profiles_round_trip_through_events() -> None:
    for profile in (
        gaussian_profile(2.0),
        laplace_profile(3.0),
        subsampled_gaussian_profile(1.2, 0.02).repeat(7),
    ):
        again = profile_from_event(event_from_profile(profile))
        assert again.epsilon(1e-6) == pytest.approx(profile.epsilon(1e-6), rel=1e-12)


def test_neighbouring_relation_is_named() -> None:
    acc = DpEventAccountant(NeighboringRelation.REPLACE_ONE)
    assert acc.neighboring_relation is NeighboringRelation.REPLACE_ONE
    assert acc.relation == "replace_one"
    # replace-one doubles the Gaussian's sensitivity (dp_accounting's REPLACE adjacency).
    eps = acc.compose(de.GaussianDpEvent(4.0)).get_epsilon(1e-5)
    assert eps == pytest.approx(gaussian_profile(2.0).epsilon(1e-5), rel=1e-9)
