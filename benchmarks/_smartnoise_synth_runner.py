"""smartnoise-synth (MST or AIM) on a table of codes; writes the synthetic rows as CSV.

Run by benchmarks/synthetic.py with the interpreter of the environment holding ``snsynth``
(never imported by infodp's own process):

``/work/venvs/synth/bin/python benchmarks/_smartnoise_synth_runner.py '{"method": "mst",
"input": "codes.csv", "output": "out.csv", "epsilon": 1.0, "delta": 1e-6}'``

Every column is declared categorical, so no budget goes to preprocessing bounds. With
``"draw": "sample"`` the fitted model draws rows i.i.d. (``synthetic_data(method="sample")``)
instead of its default randomized rounding, which in mbi 1.1 assigns each row's uniform by its
position within its group, so pairs the model does not hold directly come out correlated
(measured here: pairs off the tree at total-variation error up to 0.47 at ε = 10).
"""

from __future__ import annotations

import json
import sys

import pandas as pd
from snsynth import Synthesizer


class _Drawing:
    """The fitted model, drawing its rows i.i.d."""

    def __init__(self, model: object) -> None:
        self.model = model

    def __getattr__(self, name: str) -> object:
        return getattr(self.model, name)

    def synthetic_data(self, rows: int | None = None) -> object:
        return self.model.synthetic_data(rows=rows, method="sample")  # type: ignore[attr-defined]


def main() -> None:
    config = json.loads(sys.argv[1])
    data = pd.read_csv(config["input"])
    synth = Synthesizer.create(
        config["method"], epsilon=float(config["epsilon"]), delta=float(config["delta"])
    )
    synth.fit(data, preprocessor_eps=0.0, categorical_columns=list(data.columns))
    if config.get("draw") == "sample":
        synth.synthesizer = _Drawing(synth.synthesizer)
    out = synth.sample(len(data))
    pd.DataFrame(out, columns=data.columns).to_csv(config["output"], index=False)


if __name__ == "__main__":
    main()
