"""Accounting benchmark: infodp's certified ε against Google's dp-accounting, same run.

Scenarios (the published reference values):

(a) DP-SGD: Poisson sampling rate 0.01, noise multiplier 1.0, 10 000 steps, δ = 1e-5;
(b) 1000 Laplace mechanisms of scale 10 (sensitivity 1), δ = 1e-6.

For each: dp-accounting's PLD accountant (value_discretization_interval 1e-4, connect-the-dots)
and its RDP accountant; infodp's PLD at the default grid 1e-4 and at a coarser grid, and
``profile.epsilon`` (PLD and RDP combined, caches cleared). The "tight" value is bracketed by
an optimistic (lower) dp-accounting PLD and a pessimistic infodp PLD on a fine grid.
Timings are the median of several runs after one warm-up run.

Run: ``python -m benchmarks.accounting`` (writes the "accounting" section of BENCHMARKS.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from dp_accounting.rdp import rdp_privacy_accountant

from benchmarks._report import markdown_table, write_section
from infodp.accounting import laplace_profile, subsampled_gaussian_profile
from infodp.accounting import profile as _profile
from infodp.accounting.pld import PrivacyLossDistribution

REPEATS = 5


def _timed(fn: Callable[[], float], repeats: int = REPEATS) -> tuple[float, float]:
    value = fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def _scenario(
    name: str,
    event: dp_event.DpEvent,
    delta: float,
    ours_pld: Callable[[float], float],
    ours_profile: Callable[[], float],
    lower_bound: Callable[[], float] | None,
    coarse: float,
    fine: float,
) -> tuple[list[list[str]], str]:
    def dpa_pld_eps() -> float:
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(event)
        return float(acc.get_epsilon(delta))

    def dpa_rdp_eps() -> float:
        acc = rdp_privacy_accountant.RdpAccountant()
        acc.compose(event)
        return float(acc.get_epsilon(delta))

    tight_hi = ours_pld(fine)
    tight = tight_hi  # the smallest certified value we know
    rows = []
    results = [
        ("dp-accounting PLD (1e-4)", *_timed(dpa_pld_eps)),
        ("dp-accounting RDP", *_timed(dpa_rdp_eps)),
        ("infodp PLD (1e-4)", *_timed(lambda: ours_pld(1e-4))),
        (f"infodp PLD ({coarse:g})", *_timed(lambda: ours_pld(coarse))),
        ("infodp profile.epsilon (PLD+RDP)", *_timed(ours_profile)),
    ]
    base_time = results[0][2]
    for label, eps, seconds in results:
        rows.append(
            [
                name,
                label,
                f"{eps:.6f}",
                f"{100 * (eps - tight) / tight:+.4f}%",
                f"{seconds * 1000:.1f}",
                f"{seconds / base_time:.2f}",
            ]
        )
    if lower_bound is not None:
        note = (
            f"{name}: true ε ∈ [{lower_bound():.6f}, {tight_hi:.6f}] (optimistic dp-accounting "
            f"PLD on a fine grid, pessimistic infodp PLD at {fine:g})."
        )
    else:
        note = (
            f"{name}: true ε ≤ {tight_hi:.6f} (pessimistic infodp PLD at {fine:g}); the literature "
            "quotes the tight value as ≈ 6.1877. An optimistic bracket from dp-accounting's "
            "privacy buckets is too loose here (≈ 6.09 at 2e-5) to be informative."
        )
    return rows, note


def main() -> None:
    sgd_event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 10_000
    )

    def sgd_pld(h: float) -> float:
        pld = PrivacyLossDistribution.from_subsampled_gaussian(1.0, 0.01, h)
        return pld.self_compose(10_000).epsilon(1e-5)

    def sgd_profile() -> float:
        _profile._cached_pld.cache_clear()
        _profile._cached_rdp_grid.cache_clear()
        return subsampled_gaussian_profile(1.0, 0.01).repeat(10_000).epsilon(1e-5)

    lap_event = dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(10.0), 1000)

    def lap_pld(h: float) -> float:
        return PrivacyLossDistribution.from_laplace(10.0, 1.0, h).self_compose(1000).epsilon(1e-6)

    def lap_profile() -> float:
        _profile._cached_pld.cache_clear()
        _profile._cached_rdp_grid.cache_clear()
        return laplace_profile(10.0).repeat(1000).epsilon(1e-6)

    def lap_lower() -> float:
        pld = dpa_pld.from_laplace_mechanism(
            10.0,
            value_discretization_interval=1e-5,
            pessimistic_estimate=False,
            use_connect_dots=False,
        )
        return float(pld.self_compose(1000).get_epsilon_for_delta(1e-6))

    rows_a, note_a = _scenario(
        "(a) DP-SGD q=0.01 σ=1 ×10⁴, δ=1e-5",
        sgd_event,
        1e-5,
        sgd_pld,
        sgd_profile,
        None,
        coarse=2e-4,
        fine=2e-5,
    )
    rows_b, note_b = _scenario(
        "(b) Laplace(10) ×1000, δ=1e-6",
        lap_event,
        1e-6,
        lap_pld,
        lap_profile,
        lap_lower,
        coarse=1e-3,
        fine=1e-5,
    )
    table = markdown_table(
        ["scenario", "method", "ε", "vs tight", "time (ms)", "time / dp-acc PLD"],
        rows_a + rows_b,
    )
    body = "\n".join(
        [
            "Certified ε (upper bounds) against Google's dp-accounting "
            f"{_dpa_version()} in the same process; median of {REPEATS} runs after a warm-up.",
            '"vs tight" is relative to the smallest certified value (infodp\'s pessimistic PLD '
            "on a fine grid), itself an upper bound on the true ε. Target: within 0.01% of "
            "the tight value in at most 1/5 of dp-accounting PLD's time.",
            "",
            table,
            "",
            f"- {note_a}",
            f"- {note_b}",
            "- infodp builds the per-step PLD by connect-the-dots (Doroshenko et al. 2022) and "
            "computes the k-fold composition with one FFT power on a Chernoff-bounded window; "
            "`profile.epsilon` also evaluates the RDP curve (≈200 orders) and takes the minimum.",
        ]
    )
    write_section("accounting", "python -m benchmarks.accounting", body)
    print(body)


def _dpa_version() -> str:
    try:
        from importlib.metadata import version

        return version("dp-accounting")
    except Exception:  # pragma: no cover - metadata missing
        return "(unknown version)"


if __name__ == "__main__":
    main()
