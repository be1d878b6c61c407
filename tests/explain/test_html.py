"""The HTML report: self-contained, and its plots render in headless Chromium without errors.

Chromium must be installed (``scripts/test.sh`` installs Debian's ``chromium``); if it is
missing these tests fail rather than skip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _chromium import open_page
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


@pytest.mark.parametrize("name", sorted(CASES))
def test_html_is_self_contained(reports: dict[str, Explanation], name: str) -> None:
    page = render_html(reports[name])
    assert page.startswith("<!DOCTYPE html>")
    # Four embedded plots, nothing fetched from anywhere: no src/href except data URIs.
    assert page.count('src="data:image/png;base64,') == 4
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert links and all(link.startswith("data:") for link in links)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    for title in PLOT_TITLES:
        assert title in page


def test_html_says_what_delta_means(reports: dict[str, Explanation]) -> None:
    page = render_html(reports["epsilon-delta"])
    assert "unbounded" in page and "Not a guarantee" in page
    assert "0.01" in page  # the probability of unbounded leakage


@pytest.mark.parametrize("name", ["pure", "epsilon-delta", "gaussian"])
def test_plots_render_in_headless_chromium(
    reports: dict[str, Explanation], name: str, tmp_path: Path
) -> None:
    path = write_html(reports[name], tmp_path / f"{name}.html")
    seen = open_page(path)
    assert seen.errors == []
    assert seen.title == "What does this ε mean?"
    assert len(seen.images) == 4
    for complete, width, height, alt in seen.images:
        assert complete and width >= 300 and height >= 200, alt
    assert sorted(alt for *_, alt in seen.images) == sorted(PLOT_TITLES)
    # Only the file itself and its data URIs were loaded: the report needs no network.
    assert all(u.startswith(("file:", "data:")) for u in seen.requested_urls)
    assert seen.screenshot_png.startswith(b"\x89PNG") and len(seen.screenshot_png) > 50_000


def test_browser_helper_reports_errors(tmp_path: Path) -> None:
    # The check above can fail: a broken page produces errors and an undecoded image.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><title>x</title></head><body><img alt="a" '
        'src="missing.png"><script>console.error("boom")</script></body></html>'
    )
    seen = open_page(bad)
    assert seen.images == [(True, 0, 0, "a")] or seen.images[0][1] == 0
    assert any("boom" in e for e in seen.errors)
    assert any("ERR_FILE_NOT_FOUND" in e for e in seen.errors)
