"""One number formatter for people (infodp._format): the five styles of the old output agree."""

from __future__ import annotations

import math
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from infodp._format import format_interval, format_number

ROOT = Path(__file__).resolve().parent.parent


def test_the_five_old_styles_now_print_alike() -> None:
    # Values the old CLI printed as 200545, 155,495.9, 1e+04, 0.000001 and 9e-07.
    got = [format_number(v) for v in (200545, 155495.9, 1e4, 0.000001, 9e-07)]
    assert got == ["200,545", "155,496", "10,000", "1e-06", "9e-07"]
    assert format_interval(0.5, 1) == "[0.5, 1]"


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_formatted_numbers_read_back_close(x: float) -> None:
    text = format_number(x).replace(",", "").replace("−", "-")
    back = float(text)
    # 4 significant digits, or rounding to an integer from 1000 up.
    tol = 0.5 if 1000 <= abs(x) < 1e9 else 5e-4 * abs(x) + 1e-300
    assert math.isclose(back, x, abs_tol=tol) or abs(back - x) <= tol


def test_no_private_number_formatters_left() -> None:
    # The CLI and the reports format through infodp._format only.
    pattern = re.compile(r"^def _(fmt|text|number_text)\(", re.MULTILINE)
    for path in [*(ROOT / "src/infodp/cli").glob("*.py"), ROOT / "src/infodp/explain/html.py"]:
        for m in pattern.finditer(path.read_text()):
            body = path.read_text()[m.end() : m.end() + 300]
            assert "format_number" in body, f"{path.name}: {m.group(0)} formats by hand"


def test_results_print_as_short_summaries() -> None:
    # Reprs are one readable line, not a field-by-field dump (the full data is in to_dict()).
    from infodp.audit import audit
    from infodp.explain import explain_epsilon_delta
    from infodp.mechanisms import LaplaceMechanism

    ex = repr(explain_epsilon_delta(1.0, 0.01))
    assert len(ex) < 200 and "\n" not in ex and "0.6667 bits at α = 1" in ex
    res = repr(audit(LaplaceMechanism(1.0, sensitivity=1.0), 0.0, 1.0, samples=4000, rng=0))
    assert len(res) < 200 and "20,000" not in res and "4,000 samples per dataset" in res
