"""The census tutorial's figure: error bars by level, with and without public state totals.

Runs the release of docs/tutorials/census.md (bundled synthetic persons; age group x sex, race x
ethnicity and voting age x race for the nation, 5 states and 30 counties; rho = 1, level weights
1:1:2) twice: with the states' populations of the last census as public totals, and without them.
Draws the exact standard error of (left) every cell of the race x ethnicity table and (right) every
region's total population, by level. Exact variances of the GLS estimate (no simulation): the figure is the same on every machine.

Run: ``python -m benchmarks.census_error_figure [--figure docs/img/census-error-by-level.png]``
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.data import HISPANIC, RACES, load_households, load_persons

WORKLOAD = [("age", "sex"), ("race", "hispanic"), ("voting", "race")]
DOMAINS = dict(bins={"age": [0, 5, 18, 30, 45, 65, 95]},
               categories={"sex": ["F", "M"], "race": RACES, "hispanic": HISPANIC, "voting": ["under 18", "18+"]})
CELL_TABLE = ("race", "hispanic")
LAST_CENSUS = pd.Series({"Avalon": 1650, "Borealis": 1800, "Cascadia": 1650, "Dunmore": 3950, "Estoria": 700})


def releases() -> dict[str, pdp.MarginalTables]:
    """The tutorial's release with and without the public state totals (same seed, same loss)."""
    persons = load_persons()
    persons["voting"] = np.where(persons["age"] >= 18, "18+", "under 18")
    regions = load_households()[["state", "county"]].drop_duplicates()
    out = {}
    for name, totals in (("with public state totals", {"state": LAST_CENSUS}), ("without", None)):
        with pdp.budget(rho=1.0):
            out[name] = persons.dp.marginals(WORKLOAD, **DOMAINS, by=["state", "county"], hierarchy=regions,
                                             level_weights=[1, 1, 2], public_totals=totals, rho=1.0,
                                             rng=np.random.default_rng(2026))
    return out


def std_errors(census) -> pd.DataFrame:
    """Per level: the std_error of every race x ethnicity cell and of every region's total (exact)."""
    tidy = census.to_frame()
    cells = tidy[tidy["table"] == CELL_TABLE][["level", "std_error"]].assign(what="cell")
    totals = [pd.DataFrame({"level": name, "std_error": np.sqrt(census.geography.variance(lvl, ())),
                            "what": "total"}) for lvl, name in enumerate(census.levels)]
    return pd.concat([cells, *totals], ignore_index=True)


def draw(path: str) -> pd.DataFrame:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frames = {name: std_errors(c) for name, c in releases().items()}
    levels = ["national", "state", "county"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    summary = []
    for ax, what, title in zip(axes, ("cell", "total"), ("one cell of race x ethnicity", "a region's total population")):
        for k, (name, frame) in enumerate(frames.items()):
            part = frame[frame["what"] == what]
            x = np.array([levels.index(v) for v in part["level"]]) + (k - 0.5) * 0.25
            jitter = np.random.default_rng(0).uniform(-0.06, 0.06, len(x))
            ax.scatter(x + jitter, part["std_error"], s=9, alpha=0.6, label=name, color=f"C{k}")
            means = part.groupby("level")["std_error"].mean().reindex(levels)
            ax.scatter(np.arange(3) + (k - 0.5) * 0.25, means, marker="_", s=400, color=f"C{k}")
            summary.append(means.rename(f"{what}, {name}"))
        ax.set_xticks(range(3), levels)
        ax.set_xlabel("level")
        ax.set_ylabel("std_error (exact)")
        ax.set_title(f"Standard error of {title}", fontsize="medium")
        ax.set_ylim(bottom=0)
    axes[1].legend(fontsize="small", loc="upper right")
    fig.suptitle("Census table set, rho = 1 (weights 1:1:2): error bars by level (dots: cells or regions; "
                 "bars: means)", fontsize="medium")
    fig.savefig(path, dpi=110)
    return pd.concat(summary, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="docs/img/census-error-by-level.png")
    args = parser.parse_args()
    print(draw(args.figure).round(2).T.to_string())


if __name__ == "__main__":
    main()
