"""The privacy–distortion curve as a self-contained HTML page (plot embedded as SVG).

Same look as the ε report of :mod:`infodp.explain` (a matplotlib figure, Agg backend, as a
vector data URI; information in nats with bits labelled) and the same provenance footer
(version, time, command and inputs).

>>> from infodp.design.api import tradeoff_curve
>>> curve = tradeoff_curve([0.5, 0.5], "hamming", [0.1, 0.3], objective="epsilon")
>>> page = render_curve_html(curve)
>>> page.startswith("<!DOCTYPE html>"), page.count("data:image/svg+xml;base64,")
(True, 1)
>>> 'id="provenance"' in page
True
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from infodp._report import provenance_footer, svg_data_uri
from infodp.design.result import DesignResult
from infodp.units import nats_to_bits

__all__ = ["render_curve_html", "write_curve_html"]

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:900px;margin:2em auto;
  padding:0 1em;color:#1d2330;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #d8dce6;padding:.3em .7em;text-align:right}
th{background:#f2f4f8}
figure{margin:0}
figure img{width:100%;height:auto;border:1px solid #e3e6ee}
figcaption,.small{font-size:.9em;color:#5c6370}
footer{margin-top:2em;border-top:1px solid #d8dce6;padding-top:.6em;font-size:.85em;
  color:#5c6370}
"""


def _plot(curve: Sequence[DesignResult]) -> str:
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot(1, 1, 1)
    ds = [r.max_distortion for r in curve]
    ax.plot(ds, [r.upper for r in curve], "o-", label="upper (achieved by the channel)")
    ax.plot(ds, [r.lower for r in curve], "x--", label="lower (certificate)")
    ax.set_xlabel("maximum expected distortion D")
    ax.set_ylabel(f"least {curve[0].objective} (nats)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return svg_data_uri(fig)


def render_curve_html(
    curve: Sequence[DesignResult],
    *,
    title: str | None = None,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """One HTML document: the plot and a table of D, bracket and achieved distortion; the
    footer names the infodp version, the time and ``inputs`` (e.g. the command)."""
    objective = curve[0].objective
    heading = title or f"Least {objective} against the distortion budget"
    rows = "".join(
        f"<tr><td>{r.max_distortion:.6g}</td><td>{r.lower:.6g}</td><td>{r.upper:.6g}</td>"
        f"<td>{nats_to_bits(r.upper):.6g}</td><td>{r.distortion:.6g}</td></tr>"
        for r in curve
    )
    alt = html.escape(heading)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{alt}</title><style>{_CSS}</style></head><body><h1>{alt}</h1>"
        '<p class="small">infodp design report. Each budget D gives a channel whose leakage is '
        "<i>upper</i> (nats; bits = nats / ln 2); no channel meeting D leaks less than "
        "<i>lower</i>. Wang, Ying &amp; Zhang 2016; Blahut 1972.</p>"
        f'<figure><img alt="{alt}" src="{_plot(curve)}"><figcaption>{alt}</figcaption></figure>'
        "<table><tr><th>D</th><th>lower (nats)</th><th>upper (nats)</th><th>upper (bits)</th>"
        f"<th>achieved distortion</th></tr>{rows}</table>"
        f"{provenance_footer(_inputs(curve, inputs))}</body></html>\n"
    )


def _inputs(curve: Sequence[DesignResult], given: Mapping[str, str] | None) -> dict[str, str]:
    shown = {
        "objective": curve[0].objective,
        "budgets D": ", ".join(f"{r.max_distortion:.6g}" for r in curve),
    }
    return {**(given or {}), **shown}


def write_curve_html(
    curve: Sequence[DesignResult], path: str | Path, *, inputs: Mapping[str, str] | None = None
) -> Path:
    """Write :func:`render_curve_html` to ``path`` and return it."""
    target = Path(path)
    target.write_text(render_curve_html(curve, inputs=inputs), encoding="utf-8")
    return target
