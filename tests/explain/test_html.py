"""The HTML report: self-contained, and its plots render in headless Chromium without errors.

Chromium must be installed (``scripts/test.sh`` installs Debian's ``chromium``); if it is
missing these tests fail rather than skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from _chromium import Browser
from infodp.accounting import (
    approximate_dp_profile,
    gaussian_profile,
    laplace_profile,
    pure_dp_profile,
)
from infodp.explain import Explanation, explain, render_html, write_html
from infodp.explain.html import PLOT_TITLES

CASES = {
    "pure": lambda: explain(pure_dp_profile(1.0), rows=1000, group=2),
    "epsilon-delta": lambda: explain(approximate_dp_profile(1.0, 0.01), epsilon=1.0, rows=1000),
    "gaussian": lambda: explain(gaussian_profile(1.0), delta=1e-6, rows=10**6, group=2),
    "laplace-composed": lambda: explain(laplace_profile(2.0).repeat(5)),
}


@pytest.fixture(scope="module")
def reports() -> dict[str, Explanation]:
    return {name: make() for name, make in CASES.items()}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # One Chromium for the module's pages (each opened in its own tab and judged on that tab's
    # events alone) instead of a browser start, most of a page's time, per page.
    with Browser() as b:
        yield b


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_html_is_self_contained(reports: dict[str, Explanation], name: str) -> None:
    page = render_html(reports[name])
    assert page.startswith("<!DOCTYPE html>")
    # Four embedded plots, nothing fetched from anywhere: no src/href except data URIs.
    assert page.count('src="data:image/svg+xml;base64,') == 4
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert links and all(link.startswith("data:") for link in links)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    for title in PLOT_TITLES:
        assert title in page


@pytest.mark.slow
def test_html_says_what_delta_means(reports: dict[str, Explanation]) -> None:
    page = render_html(reports["epsilon-delta"])
    assert "What δ = 0.01 means." in page  # the probability of unbounded leakage
    assert "fail to protect someone at all" in page and "about once in 100 releases" in page
    assert "unbounded" in page


@pytest.mark.slow
def test_delta_report_opens_with_what_holds_with_probability_one_minus_delta() -> None:
    # (ε, δ) = (1, 1e-6): nothing is bounded once the δ event is counted, so the report leads
    # with what (ε, δ) bounds: the odds e^ε and the trade-off region (Kairouz, Oh & Viswanath
    # 2015, Thm 2.1), then the leakage on the 1 − δ event: ε·tanh(ε/2) nats at α = 1 (Cuff &
    # Yu 2016) and ε nats at α = ∞; the unbounded leakage is one line at the end, no table.
    import math

    from infodp.explain import explain_epsilon_delta

    page = render_html(explain_epsilon_delta(1.0, 1e-6))
    body = page.split("<h2>One individual</h2>", 1)[1]
    # ε in nats, then in bits (ε / ln 2), not "ε = 1 (nats)".
    assert f"ε = 1 = {1 / math.log(2):.4g} bits per person, δ = <b>1e-06</b>" in body
    assert "(nats)," not in page and "</b> (nats)" not in page
    guarantee = body.index("What (ε, δ) guarantees: with probability 1 − δ = 0.999999 per release")
    odds = body.index("posterior odds multiplied by at most e^ε")
    test = body.index("Membership test")
    given = body.index("With probability 1 − δ = 0.999999")
    including = body.index("Including the δ event")
    assert guarantee < odds < test < given < including
    assert "unbounded" not in body[:including].replace("with probability δ, unbounded", "")
    first_table = body[given : body.index("</table>", given)]
    assert f"{math.tanh(0.5):.4f}" in first_table  # 0.4621 nats at α = 1
    assert f"{1 / math.log(2):.4g}" in first_table  # 1.443 bits at α = ∞
    # The Markov tail on the 1 − δ event at α = 2: C = D_2 of ε-randomized response,
    # log(p²/(1 − p) + (1 − p)²/p) with p = e^ε/(1 + e^ε) (Mironov 2017, Prop. 5), and
    # P(leak ≥ R) ≤ (e^C − 1)/(e^R − 1) (Markov's inequality), here at R = 2 bits.
    p = math.e / (1 + math.e)
    c2 = math.log(p**2 / (1 - p) + (1 - p) ** 2 / p)
    at_2_bits = (math.exp(c2) - 1) / (math.exp(2 * math.log(2)) - 1)
    tail = body[given:including]
    assert f"<td>2</td><td>{at_2_bits:.4g}</td>" in tail
    # The pure-ε quantities, counting the δ event: one line saying why they are unbounded.
    end = body[including:]
    assert "Counting the δ event, the leakage at α = 1, 2 and ∞ is unbounded" in end
    assert "<table" not in end.split("<h2>", 1)[0].split("Table of N", 1)[0]
    # The opening, before any table: what δ means, in plain words.
    opening = page.split("<table", 1)[0]
    assert "What δ = 1e-06 means." in opening and "1 − δ = 0.999999" in opening


@pytest.mark.slow  # a browser page per case
@pytest.mark.parametrize("name", ["pure", "epsilon-delta", "gaussian"])
def test_plots_render_in_headless_chromium(
    reports: dict[str, Explanation], name: str, tmp_path: Path, browser: Browser
) -> None:
    path = write_html(reports[name], tmp_path / f"{name}.html")
    seen = browser.open(path)
    assert seen.errors == []
    assert seen.title == "What does this ε mean?"
    assert len(seen.images) == 4
    for complete, width, height, alt in seen.images:
        assert complete and width >= 300 and height >= 200, alt
    assert sorted(alt for *_, alt in seen.images) == sorted(PLOT_TITLES)
    # Only the file itself and its data URIs were loaded: the report needs no network.
    assert all(u.startswith(("file:", "data:")) for u in seen.requested_urls)
    assert seen.screenshot_png.startswith(b"\x89PNG") and len(seen.screenshot_png) > 50_000


@pytest.mark.slow
def test_browser_helper_reports_errors(tmp_path: Path, browser: Browser) -> None:
    # The check above can fail: a broken page produces errors and an undecoded image.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><title>x</title></head><body><img alt="a" '
        'src="missing.png"><script>console.error("boom")</script></body></html>'
    )
    seen = browser.open(bad)
    assert seen.images == [(True, 0, 0, "a")] or seen.images[0][1] == 0
    assert any("boom" in e for e in seen.errors)
    assert any("ERR_FILE_NOT_FOUND" in e for e in seen.errors)


@pytest.mark.slow
def test_report_of_an_epsilon_delta_profile_read_at_a_smaller_delta() -> None:
    # explain() reads an (ε, δ) = (1, 0.01) profile at its default δ target 1e-5 < 0.01, where
    # ε is unbounded; the trade-off region must still come from the profile's finite pairs
    # (Kairouz, Oh & Viswanath 2015, Thm 2.1: FNR ≥ max(0, 1 − δ − e^ε·FPR, e^{−ε}(1 − δ − FPR))).
    import math

    from infodp.accounting import approximate_dp_profile
    from infodp.explain import explain, render_html

    ex = explain(approximate_dp_profile(1.0, 0.01))
    fnr = ex.tradeoff([0.0, 0.1, 0.5])
    # The sup over a grid of (ε, δ(ε)) pairs lies on or below the (1, 0.01) region, and is a
    # real region (not the trivial FNR = 0 of an unbounded ε).
    kov = [max(0.0, 1 - 0.01 - math.e * f, (1 - 0.01 - f) / math.e) for f in (0.0, 0.1, 0.5)]
    assert fnr[0] == pytest.approx(1 - 0.01)
    assert all(0 < v <= k + 1e-12 for v, k in zip(fnr, kov, strict=True))
    assert fnr[1] > 0.9 * kov[1]
    assert render_html(ex).count("data:image/svg+xml;base64,") == 4


@pytest.mark.slow  # a browser
def test_report_leads_with_finite_numbers_and_ends_with_provenance(
    tmp_path: Path, browser: Browser
) -> None:
    # ε = 1, δ = 0.01 on a million rows: every α-level guarantee is unbounded (with prob. δ the
    # mechanism may publish everything), so the headline shows the numbers that are finite:
    # the information on the 1 − δ event, ε·tanh(ε/2) nats at α = 1 (Cuff & Yu 2016) and
    # ε nats at α = ∞, the attacker's success (e^ε + δ)/(1 + e^ε) (Kairouz, Oh & Viswanath
    # 2015, Thm 2.1) and δ·N exposed people.
    import datetime as dt
    import math

    from infodp import __version__
    from infodp.explain import explain_epsilon_delta

    ex = explain_epsilon_delta(1.0, 0.01, rows=1_000_000)
    path = write_html(ex, tmp_path / "r.html", inputs={"command": "infodp explain -e 1"})
    seen = browser.open(path)
    assert seen.errors == []
    head = seen.text.split("One individual")[0]
    bits1 = math.tanh(0.5) / math.log(2)
    assert f"≤ {bits1:.4f} bits" in head
    assert f"≤ {1 / math.log(2):.3f} bits" in head
    assert f"≤ {(math.e + 0.01) / (1 + math.e):.4f}" in head
    assert "10,000 people" in head and "unbounded" in head
    footer = seen.text.strip().splitlines()[-1]
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    assert footer.startswith(f"Generated by infodp {__version__} on {today[:8]}")
    assert "epsilon = 1; delta = 0.01; rows = 1,000,000" in footer
    assert "Command: infodp explain -e 1." in footer
    shot = tmp_path / "report.png"
    shot.write_bytes(seen.screenshot_png)
    assert shot.stat().st_size > 50_000
