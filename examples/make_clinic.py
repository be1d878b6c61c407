"""Write examples/visits.csv and examples/regions.csv: the clinic population's other tables.

``python3 examples/make_clinic.py`` (the CSVs are shipped; this shows how they were made).
With examples/people.csv they form the population of examples/clinic.yaml: the people, their
visits (0 to 12 each, a few with no cost recorded) and a public table of regions.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).parent
KINDS = ["checkup", "emergency", "specialist"]
#: The public table: each region, the health area it belongs to and its hospital beds.
REGIONS = [("north", "highlands", 420), ("south", "coast", 610), ("east", "coast", 380),
           ("west", "highlands", 150)]  # fmt: skip


def main(people: int = 2000) -> None:
    rng = random.Random(20261127)
    with (HERE / "visits.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["person_id", "cost", "kind"])
        for person in range(1, people + 1):
            for _ in range(min(12, int(rng.expovariate(1 / 2.5)))):
                kind = rng.choices(KINDS, weights=[6, 1, 3])[0]
                cost = round(min(5000.0, rng.lognormvariate(5 + (kind == "emergency"), 0.8)), 2)
                out.writerow([person, "" if rng.random() < 0.01 else cost, kind])
    with (HERE / "regions.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["region", "area", "beds"])
        out.writerows(REGIONS)


if __name__ == "__main__":
    main()
