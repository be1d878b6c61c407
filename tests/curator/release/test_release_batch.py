"""The curator's batched exact noise: the buffered CSPRNG source (threads, forks), the batch
release primitive and the noise a query actually adds, against the discrete Laplace pmf
P(y) = (1−p)/(1+p)·p^|y|, p = e^(−1/b) (Canonne, Kamath & Steinke 2020, Definition 2).
"""

from __future__ import annotations

import math
import os
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _stores import cats, floats, ints, one_table
from infodp.curator.engine import Curator
from infodp.curator.release.noise import BufferedCryptoSource, draw_noise, require_release_source
from infodp.errors import ParameterError
from infodp.mechanisms.laplace import DiscreteLaplaceMechanism
from infodp.mechanisms.sampling import CryptoRandomSource, InsecureSeededSource


def seeded(seed: int) -> InsecureSeededSource:
    return InsecureSeededSource(seed, i_understand_this_is_not_private=True)


def dlap_pvalue(noise: list[int], scale: float, half: int) -> float:
    """Chi-square of noise against Lap_Z(scale) on {-half..half} with lumped tails."""
    p = math.exp(-1 / scale)
    ys = np.arange(-half, half + 1)
    probs = (1 - p) / (1 + p) * p ** np.abs(ys)
    tail = p ** (half + 1) / (1 + p)  # P(Y > half) = P(Y < -half) (geometric sum)
    probs[0] += tail
    probs[-1] += tail
    observed = np.bincount(np.clip(noise, -half, half) + half, minlength=ys.size)
    return float(stats.chisquare(observed, probs / probs.sum() * len(noise)).pvalue)


def test_buffered_source_threads_never_share_bytes() -> None:
    src = BufferedCryptoSource(block=4096)  # small blocks: many refills under contention
    chunks: list[bytes] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [src.random_bytes(16) for _ in range(2000)]
        with lock:
            chunks.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 8000 chunks of 128 random bits: a repeat means two threads were handed the same bytes.
    assert len(chunks) == 8000 and len(set(chunks)) == 8000
    assert len(src.random_bytes(10**5)) == 10**5 and src.random_bytes(0) == b""


def test_buffered_source_forked_child_does_not_replay_the_buffer() -> None:
    src = BufferedCryptoSource()
    src.random_bytes(8)  # the buffer now holds ~64 KiB the parent has not handed out
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: its next bytes must not be the parent's next bytes
        os.write(write, src.random_bytes(32))
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64)
    os.close(read)
    os.close(write)
    assert len(child) == 32 and child != src.random_bytes(32)


def test_buffered_source_bytes_are_uniform() -> None:
    src = BufferedCryptoSource(block=1000)
    stream = b"".join(src.random_bytes(900) for _ in range(100))  # refills every block
    counts = np.bincount(np.frombuffer(stream, np.uint8), minlength=256)
    # Not seedable by design: alpha = 1e-6 keeps the false-alarm rate negligible.
    assert stats.chisquare(counts).pvalue > 1e-6


def release_integers(
    values: list[int], sensitivity: int, epsilon: Fraction, source: object
) -> list[int]:
    """The curator's batch release: the discrete Laplace mechanism object's batch."""
    if epsilon <= 0:
        raise ParameterError("epsilon", float(epsilon), "positive")
    if sensitivity == 0:
        return list(values)
    mech = DiscreteLaplaceMechanism(float(Fraction(sensitivity) / epsilon), sensitivity)
    return mech.release_batch(values, source=require_release_source(source))


@pytest.mark.parametrize(
    ("sensitivity", "epsilon", "seed"), [(1, Fraction(1, 2), 1), (3, Fraction(1), 2)]
)
def test_release_integers_noise_is_discrete_laplace(
    sensitivity: int, epsilon: Fraction, seed: int
) -> None:
    values = list(range(-2000, 2000))
    out = release_integers(values, sensitivity, epsilon, seeded(seed))
    noise = [o - v for o, v in zip(out, values, strict=True)]
    assert dlap_pvalue(noise, sensitivity / float(epsilon), 8) > 1e-3
    # the check has power: the same noise is far from a scale 1.5x larger
    assert dlap_pvalue(noise, 1.5 * sensitivity / float(epsilon), 8) < 1e-6


def test_release_integers_refuses_seeds_and_bad_epsilon() -> None:
    with pytest.raises(ParameterError, match="seed"):
        release_integers([1, 2], 1, Fraction(1), 42)
    with pytest.raises(ParameterError, match="epsilon"):
        release_integers([1, 2], 1, Fraction(0), None)
    assert release_integers([4, 5], 0, Fraction(1), 42) == [4, 5]  # no noise, nothing drawn


def test_curator_refuses_seeds(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="seed"):
        Curator(tmp_path / "unused.duckdb", source=7)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # refused before the ledger or store was created


@pytest.mark.slow  # ~0.7 CPU-s (measured)
def test_query_noise_per_cell_is_discrete_laplace(tmp_path: Path) -> None:
    # 100 declared groups x (COUNT, SUM): each measurement's 100 cells come from one batch;
    # noisy - exact must follow Lap_Z(Δ/ε_part) for each measurement (4 seeds, 400 cells each).
    rng = np.random.default_rng(9)
    groups = [f"c{i:02d}" for i in range(100)]
    frame = pd.DataFrame({"g": rng.choice(groups, 5000), "v": rng.integers(0, 10, 5000)})
    schema = one_table("t", {"g": cats(*groups), "v": ints(0, 5)})
    sql = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
    noise: dict[int, list[int]] = {1: [], 2: []}
    scales: dict[int, float] = {}
    for seed in range(4):
        cur = Curator(tmp_path / f"s{seed}.duckdb", source=seeded(seed))
        cur.register_dataset("t", frame, schema)
        cur.add_analyst("a", "t", epsilon=10)
        exact = cur.exact_aggregates(sql).values
        result = cur.query("a", sql, epsilon=1)
        for part, col in zip(result.cost.parts, (1, 2), strict=True):
            scales[col] = float(Fraction(part.sensitivity) / part.epsilon)
        for row in result.rows:
            truth = exact.get((row[0],), (0, 0))
            noise[1].append(int(row[1]) - int(truth[0] or 0))
            noise[2].append(int(row[2]) - int(truth[1] or 0))
        cur.close()
    # ε = 1 split equally over the two measurements (basic composition), row-level privacy:
    # Δ(COUNT) = 1 and Δ(SUM) = 5 (the declared bound), so b = Δ/ε_part = 2 and 10.
    assert scales == {1: 2.0, 2: 10.0}
    for col in (1, 2):
        assert len(noise[col]) == 400
        assert dlap_pvalue(noise[col], scales[col], int(2 * scales[col])) > 1e-3


@pytest.mark.slow
def test_query_noise_reads_the_os_csprng_a_bounded_number_of_times(tmp_path: Path) -> None:
    # All the discrete Laplace measurements of a query are drawn in one pass that asks the
    # source for its expected need at once (a top-up only when a rejection loop runs over):
    # 100 cells x (COUNT, SUM) take at most 3 reads and no integer-at-a-time draws.
    class Counting(CryptoRandomSource):
        reads = 0
        integers = 0

        def random_bytes(self, n: int) -> bytes:
            Counting.reads += 1
            return super().random_bytes(n)

        def randbelow(self, n: int) -> int:
            Counting.integers += 1
            return super().randbelow(n)

    groups = [f"c{i:02d}" for i in range(100)]
    frame = pd.DataFrame({"g": groups * 3, "v": list(range(300))})
    schema = one_table("t", {"g": cats(*groups), "v": floats(0, 1000)})
    sql = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("t", frame, schema)
    cur.add_analyst("a", "t", epsilon=10**6)
    parts = cur.query("a", sql, epsilon=1).cost.parts  # the query's measurements, priced
    cur.close()
    assert [type(p.mechanism) for p in parts] == [DiscreteLaplaceMechanism] * 2
    worst = 0
    for _ in range(50):
        Counting.reads = 0
        noise = draw_noise(parts, 100, Counting())
        assert [len(col or ()) for col in noise] == [100, 100]
        worst = max(worst, Counting.reads)
    assert 1 <= worst <= 3 and Counting.integers == 0


def test_each_declared_cell_gets_its_own_draw_of_the_one_batch(tmp_path: Path) -> None:
    # The noise of a query with declared keys is one batch per measurement, drawn before the
    # aggregate: cell j (in declared order) gets the j-th draw of every measurement's batch,
    # exactly what draw_noise gives for the same source.
    groups = [f"c{i:02d}" for i in range(100)]
    frame = pd.DataFrame({"g": groups * 3, "v": [i % 6 for i in range(300)]})
    schema = one_table("t", {"g": cats(*groups), "v": ints(0, 5)})
    sql = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
    cur = Curator(tmp_path / "s.duckdb", source=seeded(11))
    cur.register_dataset("t", frame, schema)
    cur.add_analyst("a", "t", epsilon=10)
    exact = cur.exact_aggregates(sql).values
    result = cur.query("a", sql, epsilon=1)
    cur.close()
    drawn = draw_noise(result.cost.parts, 100, seeded(11))
    assert [row[0] for row in result.rows] == groups
    for j, (row, noisy) in enumerate(zip(result.rows, result.noisy, strict=True)):
        count, total = exact[(str(row[0]),)]  # grid units, as the noisy values
        assert noisy == (count + drawn[0][j], total + drawn[1][j])  # type: ignore[index,operator]


def test_noise_drawn_for_some_cells_follows_each_key() -> None:
    from infodp.curator.release.cells import CellNoise

    noise = CellNoise([("a",), ("b",), ("c",)], [[1, 2, 3], None, [4, 5, 6]])
    assert noise.for_keys(noise.keys) is noise.columns
    assert noise.for_keys([("a",), ("b",), ("c",)]) is noise.columns  # equal keys: no copy
    assert noise.for_keys([("c",), ("a",)]) == [[3, 1], None, [6, 4]]
