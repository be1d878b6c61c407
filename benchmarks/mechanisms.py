"""Mechanisms benchmark: calibration against dp-accounting, exact samplers against OpenDP.

Peers, in the same process and run:
- dp-accounting (Google): ``get_sigma_gaussian`` (analytic Gaussian, Balle & Wang 2018) and
  its PLD for the δ our σ actually achieves;
- OpenDP: ``make_laplace`` / ``make_gaussian`` on integers (exact discrete samplers of
  Canonne, Kamath & Steinke 2020, like ours) and ``make_laplace`` on floats (snapped release).

Run: ``python -m benchmarks.mechanisms`` (writes the "mechanisms" section of BENCHMARKS.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import dp_accounting
import numpy as np
import opendp.prelude as dp
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from benchmarks._report import markdown_table, write_section
from infodp.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
)

N = 4000


def _rate(draw: Callable[[], object]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    xs = np.array([draw() for _ in range(N)], dtype=float)
    return N / (time.perf_counter() - start), xs


def calibration_rows() -> list[list[str]]:
    rows = []
    for eps, delta in [(0.1, 1e-5), (0.5, 1e-6), (1.0, 1e-5), (2.0, 1e-6), (8.0, 1e-9)]:
        ours = analytic_gaussian_sigma(eps, delta)
        peer = dp_accounting.get_sigma_gaussian(eps, delta)
        classic = f"{classic_gaussian_sigma(eps, delta):.6f}" if eps <= 1 else "refused (ε>1)"
        release = GaussianMechanism.calibrate(eps, delta)
        achieved = dp_pld.from_gaussian_mechanism(
            release.sigma / ((release.integer_sensitivity * (release.grid or 0)) or 1.0),
            value_discretization_interval=1e-5,
        ).get_delta_for_epsilon(eps)
        rows.append(
            [
                f"{eps:g}",
                f"{delta:g}",
                f"{ours:.6f}",
                f"{peer:.6f}",
                f"{(ours / peer - 1) * 1e6:+.2f}",
                classic,
                f"{release.sigma:.6f}",
                f"{achieved:.6g}",
            ]
        )
    return rows


def sampler_rows() -> list[list[str]]:
    dp.enable_features("contrib")
    ints = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    floats = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    cases = [
        (
            "discrete Laplace, scale 2",
            lambda: DiscreteLaplaceMechanism(2.0).release(0),
            dp.m.make_laplace(*ints, scale=2.0),
            0,
        ),
        (
            "discrete Gaussian, σ 2",
            lambda: DiscreteGaussianMechanism(2.0).release(0),
            dp.m.make_gaussian(*ints, scale=2.0),
            0,
        ),
        (
            "real Laplace, scale 1 (snapped)",
            lambda: LaplaceMechanism(1.0).release(0.3),
            dp.m.make_laplace(*floats, scale=1.0),
            0.3,
        ),
    ]
    rows = []
    for name, ours, peer, x in cases:
        rate_ours, a = _rate(ours)
        rate_peer, b = _rate(lambda peer=peer, x=x: peer(x))  # type: ignore[misc]
        rows.append(
            [
                name,
                f"{rate_ours:,.0f}",
                f"{rate_peer:,.0f}",
                f"{np.mean(np.abs(a - x)):.3f}",
                f"{np.mean(np.abs(b - x)):.3f}",
            ]
        )
    return rows


#: Vectorised batches: calls timed per case, the median per call.
BATCH_CALLS = 200


def _per_call(call: Callable[[], object]) -> float:
    call()  # warm-up (imports, cached constants)
    times = []
    for _ in range(BATCH_CALLS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def batch_rows() -> list[list[str]]:
    """Exact noise for many cells per call: what a grouped query releases.

    infodp: ``DiscreteLaplaceMechanism.noise_batches`` (one vectorised pass over every
    measurement, the OS CSPRNG read once; what the curator's release path calls) and
    ``DiscreteGaussianMechanism.release_batch``; OpenDP: ``make_laplace`` / ``make_gaussian``
    on a vector of integers (its exact samplers in Rust), one call per measurement.
    """
    from infodp.curator.release.noise import BufferedCryptoSource

    dp.enable_features("contrib")
    ints = dp.vector_domain(dp.atom_domain(T=int))
    src = BufferedCryptoSource()  # the curator's source: os.urandom in 64 KiB blocks
    zeros = [0] * 100
    count, total = DiscreteLaplaceMechanism(2.0), DiscreteLaplaceMechanism(4096000.0)
    sigma = 4.230779325643027  # the discrete Gaussian COUNT at (ε, δ) = (1, 1e-6)
    gauss = DiscreteGaussianMechanism(sigma)
    lap_count = dp.m.make_laplace(ints, dp.l1_distance(T=int), scale=2.0)
    lap_total = dp.m.make_laplace(ints, dp.l1_distance(T=int), scale=4096000.0)
    gauss_peer = dp.m.make_gaussian(ints, dp.l2_distance(T=int), scale=sigma)
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            "the service query's noise: 100 cells × (COUNT, scale 2; SUM, scale 4,096,000)",
            lambda: DiscreteLaplaceMechanism.noise_batches([count, total], 100, src),
            lambda: (lap_count(zeros), lap_total(zeros)),
        ),
        (
            "discrete Laplace, scale 2, 1000 cells",
            lambda: count.release_batch([0] * 1000, source=src),
            lambda: lap_count([0] * 1000),
        ),
        (
            f"discrete Gaussian, σ {sigma:.4f} (float-calibrated), 100 cells",
            lambda: gauss.release_batch(zeros, source=src),
            lambda: gauss_peer(zeros),
        ),
    ]
    return [
        [name, f"{_per_call(ours) * 1e3:.3f}", f"{_per_call(peer) * 1e3:.3f}"]
        for name, ours, peer in cases
    ]


def main() -> None:
    cal = markdown_table(
        [
            "ε",
            "δ",
            "infodp analytic σ",
            "dp-accounting σ",
            "diff (ppm)",
            "classic σ",
            "infodp release σ (grid 2⁻¹⁰)",
            "δ(ε) of release σ/Δ_eff (dp-accounting PLD)",
        ],
        calibration_rows(),
    )
    samp = markdown_table(
        [
            "exact sampler (cryptographic source)",
            "infodp draws/s",
            "OpenDP draws/s",
            "infodp mean abs(noise)",
            "OpenDP mean abs(noise)",
        ],
        sampler_rows(),
    )
    batch = markdown_table(
        ["exact noise, one call", "infodp ms/call", "OpenDP ms/call (vector)"], batch_rows()
    )
    body = (
        "Gaussian calibration (Δ = 1). The release σ includes the snapping of the value to the "
        "grid 2⁻¹⁰ (sensitivity 1025 grid units instead of 1024) and is rounded up until the "
        "release's own discrete-Gaussian profile meets δ.\n\n"
        f"{cal}\n\n"
        f"Exact samplers, {N} draws each, one draw per call (Python loop for both).\n\n{samp}\n\n"
        f"Exact samplers on many cells at once (median of {BATCH_CALLS} calls): infodp's "
        "vectorised batches against OpenDP's vector measurements.\n\n"
        f"{batch}\n"
    )
    write_section("mechanisms", "python -m benchmarks.mechanisms", body)
    print(body)


if __name__ == "__main__":
    main()
