"""Regenerate the bundled synthetic demo tables: ``python -m pandas_dp.data._generate``.

Household sizes follow a shifted Poisson (mean ~2.5, like many censuses),
ages a mixture by role, incomes a log-normal for adults. A fixed seed keeps the
files stable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pandas_dp.data import STATES


def generate(seed: int = 20261122) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_households = 4000
    counties_per_state = [4, 7, 5, 9, 5]
    county_names = [f"{s[:3].upper()}-{i + 1:02d}" for s, k in zip(STATES, counties_per_state) for i in range(k)]
    county_state = [s for s, k in zip(STATES, counties_per_state) for _ in range(k)]
    weights = rng.dirichlet(np.full(len(county_names), 2.0))
    county = rng.choice(len(county_names), size=n_households, p=weights)
    households = pd.DataFrame({
        "household_id": np.arange(1, n_households + 1),
        "state": np.asarray(county_state)[county],
        "county": np.asarray(county_names)[county],
    })
    # 3% vacant households (size 0), the rest 1 + Poisson(1.5), capped at 12.
    sizes = np.minimum(1 + rng.poisson(1.5, n_households), 12)
    sizes[rng.random(n_households) < 0.03] = 0
    hh = np.repeat(households.index.to_numpy(), sizes)
    first = np.r_[True, hh[1:] != hh[:-1]]
    adult = first | (rng.random(hh.size) < 0.45)
    age = np.where(adult, rng.integers(18, 95, hh.size), rng.integers(0, 18, hh.size))
    income = np.where(age >= 18, np.round(rng.lognormal(10.4, 0.8, hh.size), -2), np.nan)
    persons = pd.DataFrame({
        "person_id": np.arange(1, hh.size + 1),
        "household_id": households["household_id"].to_numpy()[hh],
        "state": households["state"].to_numpy()[hh],
        "county": households["county"].to_numpy()[hh],
        "age": np.minimum(age, 99),
        "income": income,
        "sex": rng.choice(["F", "M"], hh.size),
    })
    return persons, households


if __name__ == "__main__":
    here = Path(__file__).parent
    persons, households = generate()
    persons.to_csv(here / "persons.csv", index=False)
    households.to_csv(here / "households.csv", index=False)
    print(f"wrote {len(persons)} persons in {len(households)} households")
