"""A self-contained HTML report of an :class:`~infodp.explain.Explanation`, with plots.

Four matplotlib plots (Agg, no display) are embedded as SVG data URIs (vector: sharp at any
zoom), so the file opens in a browser without network access: the Rényi curve ε(α) with the
capacity bounds, the δ(ε) curve, the hypothesis-testing trade-off region and the Markov tail
of the leakage. Bits appear only
here, at the edge, and are labelled.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure

from infodp._format import format_number
from infodp._report import provenance_footer, svg_data_uri
from infodp.explain.bounds import markov_tail_bound, pure_dp_divergence
from infodp.explain.report import LEVELS, TRADEOFF_FPRS, Explanation
from infodp.explain.wording import (
    epsilon_phrase,
    guarantee_line,
    leads_with_one_minus_delta,
    unbounded_line,
)
from infodp.units import LN2

__all__ = ["PLOT_TITLES", "render_html", "summary_html", "write_html"]

#: Alt texts (and captions) of the four plots, in order.
PLOT_TITLES: tuple[str, ...] = (
    "Rényi-DP curve ε(α) and capacity bounds",
    "δ(ε): probability mass where the privacy loss exceeds ε",
    "Hypothesis-testing trade-off region",
    "Leakage tail: P(one release teaches ≥ R bits)",
)

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;
  padding:0 1em;color:#1d2330;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}
h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #d8dce6;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #d8dce6;padding:.3em .7em;text-align:right}
th{background:#f2f4f8}
td:first-child,th:first-child{text-align:left}
table.leak td:last-child,table.leak th:last-child{text-align:left}
.warn{background:#fff4e5;border-left:4px solid #e8590c;padding:.5em 1em;margin:.5em 0}
.cond{color:#5c6370;font-style:italic}
.delta{background:#eef4ff;border-left:4px solid #1b4f9c;padding:.5em 1em;margin:.8em 0}
h3{font-size:1.05em;margin:1.2em 0 .3em}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:1em}
figure{margin:0}
figure img{width:100%;height:auto;border:1px solid #e3e6ee}
figcaption,.small{font-size:.9em;color:#5c6370}
.glance{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:.8em;
  margin:1em 0}
.card{border:1px solid #d8dce6;border-radius:8px;padding:.7em 1em;background:#f8f9fc}
.card .num{font-size:1.9em;font-weight:650;color:#1b4f9c}
.card .what{font-size:.95em}
.card .when{font-size:.85em;color:#5c6370}
footer{margin-top:2em;border-top:1px solid #d8dce6;padding-top:.6em;font-size:.85em;
  color:#5c6370}
"""


def _fmt(x: float | None, digits: int = 4) -> str:
    return format_number(x, digits, missing="unbounded")


def _query(fn: Any, x: float) -> float:
    try:
        value = float(fn(x))
    except NotImplementedError:
        return math.inf
    return value


def _curve(fn: Any, xs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.array([_query(fn, float(x)) for x in xs], dtype=np.float64)


def _axes() -> Any:
    """The axes of a new report-sized figure (:func:`_finish` turns it into the SVG)."""
    return Figure(figsize=(6.4, 4.6)).add_subplot()


def _finish(ax: Any, title: str, legend_loc: str) -> str:
    """The figure as an SVG, with readable axes: 10-pt labels, 9-pt ticks and legend (the
    report is read at 100%)."""
    ax.set_title(title, fontsize=11)
    ax.xaxis.label.set_size(10)
    ax.yaxis.label.set_size(10)
    ax.tick_params(labelsize=9)
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=9, loc=legend_loc, framealpha=0.92)
    ax.figure.tight_layout()
    return svg_data_uri(ax.figure)


def _spans_decades(*curves: npt.NDArray[np.float64]) -> bool:
    """True when the positive finite values span more than two decades (log axis then)."""
    vals = np.concatenate([c[np.isfinite(c) & (c > 0)] for c in curves] or [np.zeros(0)])
    return bool(vals.size) and float(vals.max()) > 100.0 * float(vals.min())


def _rdp_plot(ex: Explanation) -> str:
    ax = _axes()
    alphas = np.geomspace(1.0, 32.0, 48)
    p = ex.profile
    drawn: list[npt.NDArray[np.float64]] = []
    rdp = _curve(p.rdp, alphas)
    info = _curve(p.information, alphas)
    same = np.allclose(rdp, info, rtol=1e-9, equal_nan=True)
    curves: list[tuple[str, npt.NDArray[np.float64], str, str, str | None]] = [
        ("RDP ε(α) = channel diameter ≥ C_α", rdp, "-", "tab:blue", None)
    ]
    if same:
        curves[0] = ("RDP ε(α) = diameter = capacity bound C_α", rdp, "-", "tab:blue", None)
    else:
        curves.append(("capacity bound C_α (information(α))", info, "--", "tab:orange", "s"))
    for label, ys, style, color, marker in curves:
        ok = np.isfinite(ys)
        if ok.any():
            ax.plot(
                alphas[ok],
                ys[ok],
                style,
                color=color,
                marker=marker,
                markevery=6,
                lw=2,
                label=label,
            )
            drawn.append(ys[ok])
    if ex.pure:
        ax.axhline(ex.epsilon, color="k", lw=1.0, ls=":", label="pure ε (level ∞)")
        radius = _rr_uniform_information(ex.epsilon, alphas)
        ax.plot(
            alphas,
            radius,
            "-.",
            color="tab:green",
            marker="^",
            markevery=6,
            label="randomized response, achieved",
        )
        drawn.append(radius)
    if ex.conditional_nats is not None and ex.nats["1"] is None:
        cond = np.array([pure_dp_divergence(ex.epsilon, a) for a in alphas])
        label = f"with prob. 1−δ = {_fmt(1 - ex.delta, 6)} only (not a guarantee)"
        ax.plot(alphas, cond, ":", color="tab:red", marker="o", markevery=6, lw=2, label=label)
        drawn.append(cond)
    if not drawn:
        ax.text(0.5, 0.5, "unbounded", transform=ax.transAxes, ha="center")
    ax.set_xscale("log")
    if _spans_decades(*drawn):
        ax.set_yscale("log")
    ax.set_xlabel("Rényi order α")
    ax.set_ylabel("nats per individual")
    ax.grid(True, alpha=0.3, which="both")
    return _finish(ax, PLOT_TITLES[0], "best")


def _rr_uniform_information(epsilon: float, alphas: npt.NDArray[np.float64]) -> Any:
    """I_α of binary randomized response with a uniform input: log 2 − H_α(p).

    “Differential Privacy and Information Theory” (2022), "Protection against B… outcomes" (binary
    symmetric channel, P_X = (½, ½)):
    a mechanism that is exactly ε-DP and reaches this, so the worst case is at least it.
    """
    log_p = -math.log1p(math.exp(-epsilon))
    log_q = -epsilon + log_p
    out = []
    for a in alphas:
        if a == 1.0:
            p, q = math.exp(log_p), math.exp(log_q)
            h = -(p * log_p + q * log_q)
        else:
            h = -float(np.logaddexp(a * log_p, a * log_q)) / (a - 1.0)
        out.append(max(0.0, LN2 - h))
    return np.array(out)


def _delta_plot(ex: Explanation) -> str:
    ax = _axes()
    p = ex.profile
    hi = ex.epsilon * 2.5 if math.isfinite(ex.epsilon) and ex.epsilon > 0 else 5.0
    eps = np.linspace(0.0, hi, 60)
    ds = np.clip(_curve(p.delta, eps), 0.0, 1.0)
    ok = ds > 0
    if ok.any():
        ax.plot(eps[ok], ds[ok], "-", label="δ(ε) of this profile (certified upper bound)")
    if ex.delta > 0 and math.isfinite(ex.epsilon):
        label = f"reported (ε, δ) = ({_fmt(ex.epsilon)}, {_fmt(ex.delta)})"
        ax.plot([ex.epsilon], [ex.delta], "o", color="tab:red", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("ε (nats)")
    ax.set_ylabel("δ")
    ax.grid(True, alpha=0.3, which="both")
    ax.set_xlim(0.0, hi)
    if ex.pure:
        ax.axvline(ex.epsilon, color="k", lw=0.8, ls=":", label="pure ε: δ = 0 from here on")
    if not ok.any():
        ax.text(0.5, 0.5, "δ(ε) = 0 for ε ≥ pure ε", transform=ax.transAxes, ha="center")
        ax.set_ylim(1e-12, 1.0)
    return _finish(ax, PLOT_TITLES[1], "upper right")


def _tradeoff_plot(ex: Explanation) -> str:
    ax = _axes()
    fpr = np.linspace(0.0, 1.0, 201)
    fnr = ex.tradeoff(fpr)
    ax.fill_between(fpr, 0.0, fnr, color="tab:blue", alpha=0.25, label="no test can reach here")
    ax.plot(fpr, fnr, "-", color="tab:blue", label="best attacker (this profile)")
    ax.plot(fpr, 1.0 - fpr, ":", color="gray", label="random guessing (perfect privacy)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("false-positive rate (says 'in' when out)")
    ax.set_ylabel("false-negative rate")
    ax.grid(True, alpha=0.3)
    return _finish(ax, PLOT_TITLES[2], "upper right")


def _tail_plot(ex: Explanation) -> str:
    ax = _axes()
    bits = np.geomspace(0.01, 16.0, 400)
    levels = [(key, a) for key, a in LEVELS]
    if all(ex.tail_alpha != a for _, a in levels):
        levels.append((f"{ex.tail_alpha:g}", ex.tail_alpha))
    drawn = False
    styles = iter([("-", "tab:blue", None), ("--", "tab:orange", "s"), ("-.", "tab:green", "^")])
    for key, alpha in levels:
        cap = ex.nats.get(key)
        if cap is None and key not in ex.nats:
            cap = _capacity(ex, alpha)
        if cap is None:
            continue
        ys = np.array([markov_tail_bound(cap, b * LN2, alpha) for b in bits])
        style, color, marker = next(styles, (":", "tab:purple", "o"))
        ax.plot(
            bits,
            ys,
            style,
            color=color,
            marker=marker,
            markevery=40,
            lw=2,
            label=f"α = {key.replace('inf', '∞')}",
        )
        drawn = True
    if ex.conditional_nats is not None and _capacity(ex, ex.tail_alpha) is None:
        cond = pure_dp_divergence(ex.epsilon, ex.tail_alpha)
        ys = np.array([markov_tail_bound(cond, b * LN2, ex.tail_alpha) for b in bits])
        label = f"α = {_fmt(ex.tail_alpha)}, with prob. 1−δ only (not a guarantee)"
        ax.plot(bits, ys, ":", color="tab:red", label=label)
        ax.axhline(ex.delta, color="tab:red", lw=0.8, label=f"δ = {_fmt(ex.delta)}: unbounded")
        drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no bound", transform=ax.transAxes, ha="center")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("R (bits learned about one individual from one release)")
    ax.set_ylabel("P(leak ≥ R) at most")
    ax.grid(True, alpha=0.3)
    return _finish(ax, PLOT_TITLES[3], "upper right")


def _capacity(ex: Explanation, alpha: float) -> float | None:
    value = min(_query(ex.profile.rdp, alpha), _query(ex.profile.information, alpha))
    if ex.pure:
        value = min(value, pure_dp_divergence(ex.epsilon, alpha))
    return value if math.isfinite(value) else None


_ODDS = "posterior odds multiplied by at most e^ε"


def _row(cells: list[str], head: bool = False) -> str:
    tag = "th" if head else "td"
    return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"


def _glance(ex: Explanation) -> str:
    """The headline: numbers that are finite for the given (ε, δ), each with what it means."""
    cards: list[tuple[str, str, str]] = []
    given = ex.delta > 0 and ex.nats["1"] is None and ex.conditional_bits is not None
    when = (
        f"with probability 1 − δ = {_fmt(1 - ex.delta, 6)}; with probability δ, unbounded"
        if given
        else "a guarantee (upper bound)"
    )
    bits = ex.conditional_bits if given else ex.bits
    if bits is not None and bits.get("1") is not None:
        cards.append(
            (f"≤ {_fmt(bits['1'])} bits", "about one person per release, on average (α = 1)", when)
        )
    if bits is not None and bits.get("inf") is not None:
        cards.append((f"≤ {_fmt(bits['inf'])} bits", "in the worst case (α = ∞)", when))
    success = ex.attacker_success_max
    if success is None:
        success = ex.attacker_success_epsilon_delta
    cards.append(
        (
            f"≤ {_fmt(success)}",
            "chance that an attacker tells whether one person is in the data",
            "a guarantee; a coin flip gets 0.5",
        )
    )
    if ex.rows is not None and ex.expected_exposed_individuals is not None:
        cards.append(
            (
                f"{_fmt(ex.expected_exposed_individuals)} people",
                f"expected without protection per release (δ · N, N = {_fmt(ex.rows)})",
                "δ = 0 (pure ε-DP) makes this 0",
            )
        )
    return (
        '<section class="glance">'
        + "".join(
            f'<div class="card"><div class="num">{html.escape(num)}</div>'
            f'<div class="what">{html.escape(what)}</div>'
            f'<div class="when">{html.escape(cond)}</div></div>'
            for num, what, cond in cards
        )
        + "</section>"
    )


def _footer(ex: Explanation, inputs: Mapping[str, Any] | None) -> str:
    """Provenance for an audit trail: infodp version, time (UTC), command and every input."""
    shown: dict[str, Any] = {
        "epsilon": ex.epsilon,
        "delta": ex.delta,
        "rows": ex.rows,
        "group": ex.group_size if ex.group is not None else None,
        "profile": repr(ex.profile)[:160],
    }
    shown.update(inputs or {})
    return provenance_footer(
        {
            k: _fmt(v, 6) if isinstance(v, int | float) else str(v)
            for k, v in shown.items()
            if v is not None
        }
    )


_MEANING = {
    "1": "Shannon: rate at which a determined attacker extracts information",
    "2": "collision level",
    "inf": "worst case: the most any single output can reveal",
}


def _delta_meaning(ex: Explanation) -> str:
    """What δ means, in plain words, for the opening of a report with δ > 0."""
    one_in = 1.0 / ex.delta
    return (
        f'<p class="delta"><b>What δ = {_fmt(ex.delta, 3)} means.</b> Each release may, with '
        f"probability at most δ (about once in {_fmt(one_in, 3)} releases), fail to protect "
        "someone at all: in that case it can reveal a person's data outright, and no number "
        "below bounds what is learnt. With the remaining probability 1 − δ = "
        f"{_fmt(1 - ex.delta, 8)} the figures labelled “with probability 1 − δ” hold. "
        "A δ well below 1/N for a table of N people keeps the expected number of people so "
        "exposed (δ · N) far below one.</p>"
    )


def _leak_table(nats: Mapping[str, float | None]) -> str:
    rows = [_row(["level α", "nats / individual", "bits / individual", "meaning"], head=True)]
    for key, _ in LEVELS:
        n = nats[key]
        b = None if n is None else n / LN2
        rows.append(_row([key.replace("inf", "∞"), _fmt(n), _fmt(b), _MEANING[key]]))
    return '<table class="leak">' + "".join(rows) + "</table>"


def _tail_table(tail: Sequence[tuple[float, float]], alpha: float) -> str:
    if all(prob >= 1.0 for _, prob in tail):
        return (
            f"<p>Leak tail (Markov bound at α = {alpha:g}): no level R is bounded below "
            "probability 1 here.</p>"
        )
    rows = [_row(["R (bits)", f"P(leak ≥ R) at most, α = {alpha:g}"], head=True)]
    for r, prob in tail:
        rows.append(_row([_fmt(r / LN2, 3), _fmt(prob)]))
    return "<table>" + "".join(rows) + "</table>"


def _attack_table(ex: Explanation) -> str:
    attack = [_row(["attacker view", "bound"], head=True)]
    attack.append(
        _row(
            [
                _ODDS + (" (on the 1 − δ event)" if ex.delta > 0 else ""),
                _fmt(ex.posterior_odds_bound),
            ]
        )
    )
    attack.append(_row(["best success in the in/out guessing game", _fmt(ex.attacker_success_max)]))
    attack.append(
        _row(
            [
                "… from (ε, δ) alone, tight: (e^ε + δ)/(1 + e^ε)",
                _fmt(ex.attacker_success_epsilon_delta),
            ]
        )
    )
    attack.append(_row(["… the linear bound ½ + ε/2", _fmt(ex.attacker_success_linear)]))
    attack.append(
        _row(
            [
                "min-entropy leakage of a binary secret (nats)",
                _fmt(ex.min_entropy_leakage_bound),
            ]
        )
    )
    return "<table>" + "".join(attack) + "</table>"


def _test_table(ex: Explanation) -> str:
    test = [_row(["false-positive rate", "false-negative rate at least"], head=True)]
    for a, b in zip(TRADEOFF_FPRS, ex.tradeoff(TRADEOFF_FPRS), strict=True):
        test.append(_row([_fmt(a), _fmt(float(b))]))
    return (
        "<p>Membership test (“is this person in the data?”): no test does better than</p>"
        "<table>" + "".join(test) + "</table>"
    )


def _releases_table(releases: Mapping[int, float | None]) -> str:
    rel = [_row(["bits about one individual", "releases needed (at least)"], head=True)]
    for b, needed in releases.items():
        shown = "1 (unbounded with prob. δ)" if needed is None else _fmt(needed, 6)
        rel.append(_row([str(b), shown]))
    return "<table>" + "".join(rel) + "</table>"


def _sections(ex: Explanation, heading: str) -> str:
    parts = [f"<h2>{html.escape(heading)}</h2>"]
    parts.append(
        f"<p>{html.escape(epsilon_phrase(ex))}, δ = <b>{_fmt(ex.delta, 3)}</b>"
        f"{' (pure ε-DP)' if ex.pure else ''}.</p>"
    )
    for w in ex.warnings:
        parts.append(f'<div class="warn">{html.escape(w)}</div>')
    if leads_with_one_minus_delta(ex) and ex.conditional_nats is not None:
        # Lead with what (ε, δ) bounds: the odds and the trade-off (Kairouz–Oh–Viswanath 2015,
        # Thm 2.1), then the leakage with probability 1 − δ; the unconditional leakage (nothing
        # is bounded once the δ event counts) is one line at the end, not a table of
        # "unbounded".
        parts.append(f"<p>{html.escape(guarantee_line(ex))}</p>")
        parts.append(_attack_table(ex) + _test_table(ex))
        parts.append(
            f'<h3 id="given">With probability 1 − δ = {_fmt(1 - ex.delta, 8)}</h3>'
            + _leak_table(ex.conditional_nats)
        )
        if ex.conditional_releases_for_bits is not None:
            parts.append(_releases_table(ex.conditional_releases_for_bits))
        if ex.conditional_tail is not None:
            parts.append(_tail_table(ex.conditional_tail, ex.tail_alpha))
        parts.append(
            f"<h3>Including the δ event (probability {_fmt(ex.delta, 3)})</h3>"
            f'<p class="cond">{html.escape(unbounded_line(ex))}</p>'
        )
    else:
        parts.append(_leak_table(ex.nats))
        if ex.caveat is not None:
            parts.append(f'<p class="cond">{html.escape(ex.caveat)}</p>')
        parts.append(_attack_table(ex) + _test_table(ex))
        parts.append(_releases_table(ex.releases_for_bits))
        parts.append(_tail_table(ex.tail, ex.tail_alpha))
    if ex.rows is not None:
        parts.append(
            f"<p>Table of N = {_fmt(ex.rows)} rows: expected number of individuals whose "
            "protection fails per release δ·N = "
            f"<b>{_fmt(ex.expected_exposed_individuals)}</b>.</p>"
        )
    return "".join(parts)


def summary_html(ex: Explanation) -> str:
    """The report without plots or page: what a notebook shows for an explanation."""
    body = _sections(ex, "One individual")
    if ex.group is not None:
        body += _sections(ex.group, f"A group of {ex.group_size} individuals")
    opening = _delta_meaning(ex) if ex.delta > 0 else ""
    return f'<div class="infodp-explain"><style>{_CSS}</style>{opening}{_glance(ex)}{body}</div>'


def render_html(
    ex: Explanation,
    *,
    title: str = "What does this ε mean?",
    inputs: Mapping[str, Any] | None = None,
) -> str:
    """The report as one self-contained HTML document (plots embedded, no network needed).

    >>> from infodp.explain import explain_epsilon_delta
    >>> page = render_html(explain_epsilon_delta(1.0, 0.01))
    >>> page.startswith("<!DOCTYPE html>"), page.count("data:image/svg+xml;base64,")
    (True, 4)

    ``inputs`` (e.g. the command line's options) are listed in the provenance footer beside
    the infodp version and the time.
    """
    plots = (_rdp_plot(ex), _delta_plot(ex), _tradeoff_plot(ex), _tail_plot(ex))
    figures = "".join(
        f'<figure><img alt="{html.escape(t)}" src="{src}"><figcaption>{html.escape(t)}'
        "</figcaption></figure>"
        for t, src in zip(PLOT_TITLES, plots, strict=True)
    )
    body = _sections(ex, "One individual")
    if ex.group is not None:
        body += _sections(ex.group, f"A group of {ex.group_size} individuals")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"{_delta_meaning(ex) if ex.delta > 0 else ''}{_glance(ex)}"
        '<p class="small">infodp report. Information is in nats (bits = nats / ln 2) per '
        "individual per release; every figure is an upper bound on what an attacker can "
        "achieve. Sources: “Differential Privacy and Information Theory” (2022; privacy as "
        "Rényi channel capacity), "
        "Kairouz–Oh–Viswanath 2015, Cuff &amp; Yu 2016, Barthe &amp; Köpf 2011.</p>"
        f'{body}<h2>Plots</h2><div class="grid">{figures}</div>'
        f"{_footer(ex, inputs)}</body></html>\n"
    )


def write_html(
    ex: Explanation,
    path: str | Path,
    *,
    title: str = "What does this ε mean?",
    inputs: Mapping[str, Any] | None = None,
) -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8) and return the path.

    >>> import tempfile, pathlib
    >>> from infodp.explain import explain_epsilon_delta
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = write_html(explain_epsilon_delta(0.5), pathlib.Path(d) / "r.html")
    ...     out.stat().st_size > 10_000
    True
    """
    target = Path(path)
    target.write_text(render_html(ex, title=title, inputs=inputs), encoding="utf-8")
    return target
