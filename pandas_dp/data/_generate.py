"""Regenerate the bundled synthetic demo tables: ``python -m pandas_dp.data._generate``.

Household sizes follow a shifted Poisson (mean ~2.5, like many censuses),
ages a mixture by role, incomes a log-normal for adults. Race and Hispanic origin
come last, from a generator of their own, so the older columns stay the same. A
fixed seed keeps the files stable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pandas_dp.data import HISPANIC, RACES, STATES

# Each state's share of every race (in the order of RACES) and of Hispanic origin, in the style of
# the census's race categories (one race alone, or two or more races) and varying by region: a
# state with more Black residents, one with more Asian, one with more American Indian and Alaska
# Native, one with more Native Hawaiian and Other Pacific Islander residents.
RACE_SHARES = np.array([
    [0.72, 0.14, 0.05, 0.010, 0.005, 0.075],  # Avalon
    [0.80, 0.04, 0.04, 0.050, 0.005, 0.065],  # Borealis
    [0.62, 0.05, 0.18, 0.020, 0.020, 0.110],  # Cascadia
    [0.58, 0.28, 0.06, 0.006, 0.002, 0.072],  # Dunmore
    [0.50, 0.03, 0.12, 0.030, 0.150, 0.170],  # Estoria
])
HISPANIC_SHARE = np.array([0.12, 0.08, 0.22, 0.35, 0.10])


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
    race, hispanic = race_and_ethnicity(households, hh, np.random.default_rng(seed + 1))
    persons["race"], persons["hispanic"] = race, hispanic
    return persons, households


def race_and_ethnicity(households: pd.DataFrame, hh: np.ndarray,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Race and Hispanic origin of every person (``hh``: each person's household row).

    Each county's shares are drawn around its state's (a Dirichlet with concentration 300), so
    counties of a state differ a little and states a lot. A household has one race and one origin
    drawn from its county's shares; each member keeps them with probability 0.85 (race) and 0.9
    (origin) and otherwise draws their own, so households are mostly, not always, alike.
    """
    state = pd.Categorical(households["state"], categories=STATES).codes
    county_codes, _ = pd.factorize(households["county"], sort=True)
    county_state = pd.Series(state).groupby(county_codes).first().to_numpy()
    gammas = rng.gamma(300 * RACE_SHARES[county_state])                  # a Dirichlet draw per county
    shares = gammas / gammas.sum(axis=1, keepdims=True)
    hisp = rng.beta(300 * HISPANIC_SHARE[county_state], 300 * (1 - HISPANIC_SHARE[county_state]))

    def draw(p: np.ndarray) -> np.ndarray:
        # One categorical draw per row of p (inverse CDF), vectorized.
        u = rng.random(len(p))[:, None]
        return np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), p.shape[1] - 1)

    hh_race = draw(shares[county_codes])
    hh_hisp = rng.random(len(households)) < hisp[county_codes]
    person_county = county_codes[hh]
    own_race = draw(shares[person_county])
    own_hisp = rng.random(hh.size) < hisp[person_county]
    race = np.where(rng.random(hh.size) < 0.85, hh_race[hh], own_race)
    hispanic = np.where(rng.random(hh.size) < 0.9, hh_hisp[hh], own_hisp)
    return np.asarray(RACES)[race], np.asarray(HISPANIC)[np.where(hispanic, 0, 1)]


if __name__ == "__main__":
    here = Path(__file__).parent
    persons, households = generate()
    persons.to_csv(here / "persons.csv", index=False)
    households.to_csv(here / "households.csv", index=False)
    print(f"wrote {len(persons)} persons in {len(households)} households")
