"""Write examples/people.csv: 2 000 synthetic people, the same file on every run.

``python3 examples/make_people.py`` (the CSV is shipped; this shows how it was made).
Columns match examples/people.yaml: person_id, age, income (a few missing), region.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

REGIONS = ["north", "south", "east", "west"]


OUT = Path(__file__).with_name("people.csv")


def main(path: Path = OUT, rows: int = 2000) -> None:
    rng = random.Random(20261123)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["person_id", "age", "income", "region"])
        for i in range(1, rows + 1):
            age = min(99, max(18, int(rng.gauss(45, 15))))
            region = rng.choices(REGIONS, weights=[4, 3, 2, 1])[0]
            income = round(min(500_000.0, rng.lognormvariate(10.3 + 0.01 * (age - 45), 0.6)), 2)
            out.writerow([i, age, "" if rng.random() < 0.02 else income, region])


if __name__ == "__main__":
    main()
