"""smartnoise-synth (MST or AIM) on a table of codes; writes the synthetic rows as CSV.

Run by benchmarks/synthetic.py with the interpreter of the environment holding ``snsynth``
(never imported by infodp's own process):

``/work/venvs/synth/bin/python benchmarks/_smartnoise_synth_runner.py '{"method": "mst",
"input": "codes.csv", "output": "out.csv", "epsilon": 1.0, "delta": 1e-6}'``

Every column is declared categorical, so no budget goes to preprocessing bounds.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
from snsynth import Synthesizer


def main() -> None:
    config = json.loads(sys.argv[1])
    data = pd.read_csv(config["input"])
    synth = Synthesizer.create(
        config["method"], epsilon=float(config["epsilon"]), delta=float(config["delta"])
    )
    synth.fit(data, preprocessor_eps=0.0, categorical_columns=list(data.columns))
    out = synth.sample(len(data))
    pd.DataFrame(out, columns=data.columns).to_csv(config["output"], index=False)


if __name__ == "__main__":
    main()
