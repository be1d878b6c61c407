"""Design and local-model benchmark: rate–distortion against cvxpy, the min-ε LP, and local
frequency-estimation error against the published variance curves.

1. Rate–distortion of a 256-symbol source (Dirichlet(5) prior, seeded; Hamming distortion,
   D = 0.1): infodp's ``rate_distortion`` (Blahut 1972 with SQUAREM, certified gap ≤ 1e-9 nats)
   against cvxpy (``rel_entr`` formulation, Clarabel) in the same run; cvxpy's value must lie in
   infodp's bracket up to its own tolerance.
2. The min-ε LP (bisection on ε over HiGHS LPs) on 64 symbols (Dirichlet prior, absolute
   distortion, D = 3).
3. Local frequency estimation at 10⁶ users, 32 items (Zipf(1.1) frequencies), ε ∈ {0.5, 1, 2, 4}:
   the empirical mean squared error per item of each randomizer (numpy simulation, a few
   repetitions) next to the published variance (Wang et al. 2017, Eq. (2); Erlingsson et al.
   2014; Acharya, Sun & Zhang 2019) averaged over items; plot in
   benchmarks/out/design_local_mse.svg (not committed).

Run: ``python3 -m benchmarks.design`` (``--quick`` uses 64 symbols for step 1 and 10⁵ users;
``--size N`` sets the rate–distortion source size alone).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import cvxpy as cp
import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._report import markdown_table, write_section
from infodp.design import distortion_matrix, min_epsilon, rate_distortion
from infodp.local import MECHANISMS, randomizer

SEED = 20261123
ROOT = Path(__file__).resolve().parent.parent


def cvxpy_rate_distortion(prior: np.ndarray, d: np.ndarray, D: float) -> tuple[float, float]:
    """R(D) = min_{W, q} Σ_x p_x D(W_x ‖ q) (the minimising q is p W; Csiszár & Tusnády 1984)."""
    n, m = d.shape
    W = cp.Variable((n, m), nonneg=True)
    q = cp.Variable(m, nonneg=True)
    Q = cp.vstack([q] * n)
    objective = cp.sum(cp.multiply(prior[:, None], cp.rel_entr(W, Q)))
    cons = [cp.sum(W, axis=1) == 1, cp.sum(q) == 1, cp.sum(cp.multiply(prior[:, None] * d, W)) <= D]
    problem = cp.Problem(cp.Minimize(objective), cons)
    start = time.perf_counter()
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:  # Clarabel gives up on some instances; SCS is the fallback
        problem.solve(solver=cp.SCS, eps=1e-9, max_iters=200_000)
    return float(problem.value), time.perf_counter() - start


def _cvxpy_worker(size: int, out: Any) -> None:
    prior, d, D = rd_instance(size)
    out.put(cvxpy_rate_distortion(prior, d, D))


def rd_instance(size: int) -> tuple[np.ndarray, np.ndarray, float]:
    prior = np.random.default_rng(SEED).dirichlet(np.full(size, 5.0))
    return prior, distortion_matrix("hamming", size), 0.1


def rate_distortion_rows(size: int, limit: float) -> list[list[str]]:
    """infodp in this process; cvxpy in a child process stopped after ``limit`` seconds."""
    prior, d, D = rd_instance(size)
    start = time.perf_counter()
    r = rate_distortion(prior, d, D)
    ours = time.perf_counter() - start
    queue: Any = mp.Queue()
    child = mp.Process(target=_cvxpy_worker, args=(size, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        peer = [f"cvxpy + Clarabel ({size} symbols)", f"> {limit:.0f}", "not finished", "none",
                f"> {limit / ours:.0f}x slower (stopped at the time limit)"]  # fmt: skip
    else:
        value, theirs = queue.get()
        inside = r.lower - 1e-6 <= value <= r.upper + 1e-6
        peer = [f"cvxpy + Clarabel ({size} symbols)", f"{theirs:.3f}", f"{value:.12f}", "none",
                f"{theirs / ours:.0f}x slower; in infodp bracket (±1e-6): {inside}"]  # fmt: skip
    return [
        [f"infodp rate_distortion ({size} symbols)", f"{ours:.3f}",
         f"[{r.lower:.12f}, {r.upper:.12f}]", f"{r.gap:.1e}", "-"],
        peer,
    ]  # fmt: skip


def min_epsilon_rows(size: int) -> list[list[str]]:
    prior = np.random.default_rng(SEED + 1).dirichlet(np.ones(size))
    start = time.perf_counter()
    r = min_epsilon(prior, "absolute", 3.0)
    took = time.perf_counter() - start
    return [[f"infodp min_epsilon ({size} symbols, absolute, D = 3)", f"{took:.2f}",
             f"[{r.lower:.9f}, {r.upper:.9f}]", f"{r.gap:.1e}", "-"]]  # fmt: skip


def local_rows(
    users: int, reps: int
) -> tuple[list[list[str]], dict[str, list[tuple[float, float, float]]]]:
    k = 32
    freqs = 1.0 / np.arange(1, k + 1) ** 1.1
    freqs /= freqs.sum()
    rng = np.random.default_rng(SEED + 2)
    rows, curves = [], {}
    for name in MECHANISMS:
        curves[name] = []
        for eps in (0.5, 1.0, 2.0, 4.0):
            mech = randomizer(name, eps, k)
            errs = [
                np.mean((mech.simulate(users, freqs, rng=rng).estimate - freqs) ** 2)
                for _ in range(reps)
            ]
            # published variance + the multinomial spread of the population (f(1−f)/n)
            theory = float(np.mean(mech.variance(freqs, users) + freqs * (1 - freqs) / users))
            curves[name].append((eps, float(np.mean(errs)), theory))
            rows.append([name, f"{eps:g}", f"{np.mean(errs):.3e}", f"{theory:.3e}"])
    return rows, curves


def plot(curves: dict[str, list[tuple[float, float, float]]], users: int) -> Path:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for name, pts in curves.items():
        eps = [p[0] for p in pts]
        line = ax.plot(eps, [p[1] for p in pts], "o", label=f"{name} (simulated)")[0]
        ax.plot(eps, [p[2] for p in pts], "-", color=line.get_color(), alpha=0.6)
    ax.set_yscale("log")
    ax.set_xlabel("ε per report")
    ax.set_ylabel("mean squared error per item")
    ax.set_title(f"{users:,} users, 32 items (lines: published variance)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    # A vector plot beside the other run outputs; generated, so never committed.
    out = ROOT / "benchmarks" / "out" / "design_local_mse.svg"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    size, users, reps = (64, 100_000, 5) if quick else (256, 1_000_000, 5)
    if "--size" in sys.argv:  # the rate-distortion source size alone
        size = int(sys.argv[sys.argv.index("--size") + 1])
    head = ["method", "seconds", "value (nats)", "certified gap", "note"]
    limit = 300.0
    rd = [row for n in sorted({64, 128, size}) for row in rate_distortion_rows(n, limit)]
    lp = min_epsilon_rows(64)
    local, curves = local_rows(users, reps)
    svg = plot(curves, users)
    body = (
        "Rate–distortion (Hamming, D = 0.1, Dirichlet(5) prior) and the min-ε LP:\n\n"
        + markdown_table(head, rd + lp)
        + f"\n\nLocal frequency estimation, {users:,} users, 32 items (Zipf 1.1), mean squared "
        f"error per item over {reps} simulated repetitions, against the published variance "
        f"(plot: `benchmarks/out/{svg.name}`):\n\n"
        + markdown_table(["randomizer", "ε", "simulated MSE", "published variance"], local)
    )
    command = "python3 -m benchmarks.design " + " ".join(sys.argv[1:])
    write_section("design", command, body)
    print(body)


if __name__ == "__main__":
    main()
