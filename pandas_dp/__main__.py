"""Command line: ``python -m pandas_dp demo``, ``release SPEC.toml`` and ``ledger init|verify|show``."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

import pandas_dp as pdp
from pandas_dp.cli.ledger import add_parser as add_ledger_parser
from pandas_dp.cli.ledger import run as run_ledger
from pandas_dp.cli.run import run_release
from pandas_dp.cli.spec import ReleaseError, SpecError
from pandas_dp.data import load_households, load_persons


def _show(title: str, frame: pd.DataFrame, note: str = "") -> None:
    print(f"\n== {title}")
    if note:
        print(f"   {note}")
    print(frame.to_string(float_format=lambda v: f"{v:,.1f}", formatters={
        c: (lambda v: f"{v:,}") for c in frame.columns if pd.api.types.is_integer_dtype(frame[c])}))


def demo(seed: int | None = None, *, ledger: str | None = None) -> int:
    """Release a few tables from the bundled synthetic census and print them with error bars.

    The demo creates its ledger explicitly (at ``ledger``, a new path, or in a
    temporary folder removed at the end) and verifies it after the releases.
    """
    if ledger is not None:
        return _demo(seed, ledger, f"The ledger {ledger}")
    with tempfile.TemporaryDirectory(prefix="pandas_dp_demo_") as folder:
        return _demo(seed, str(Path(folder) / "demo.ledger.sqlite"), "The demo's temporary ledger")


def _demo(seed: int | None, ledger_path: str, ledger_label: str) -> int:
    persons = load_persons()
    rng = np.random.default_rng(seed) if seed is not None else None
    print(f"pandas_dp {pdp.__version__} demo: {len(persons):,} synthetic persons "
          f"({'seeded, reproducible' if rng is not None else 'secure noise'}).")
    print("Every figure below is differentially private; ± is the 95% confidence half-width.")
    ledger = pdp.Ledger.create(ledger_path)  # explicit: budgets open existing ledgers, never create them
    with pdp.budget(epsilon=1.0, ledger=ledger, name="demo") as budget:
        ages = persons.dp.histogram("age", bins=range(0, 101, 10), epsilon=0.2, rng=rng)
        frame = ages.to_frame()
        frame["± 95%"] = 1.96 * frame["std_error"]
        _show("Persons by age (identity, ε = 0.2)", frame[["estimate", "± 95%"]],
              "identity: every bin's true count plus its own discrete Laplace noise of scale 1/ε.")
        working = ages.range_query(20, 70)
        lo, hi = working.confidence_interval(0.95)
        print(f"\nPersons aged [20, 70): {working.estimate:,.0f} (95% CI {lo:,.0f} .. {hi:,.0f}), "
              f"no extra budget spent")

        states = persons.dp.histogram("state", categories="dtype", epsilon=0.1, rng=rng)
        frame = states.to_frame()
        frame["± 95%"] = 1.96 * frame["std_error"]
        _show("Persons by state (public categories, ε = 0.1)", frame[["estimate", "± 95%"]],
              "the state labels come from the column's categorical dtype, a public codebook, never from the rows.")

        income = persons.dp.hierarchical_histogram("income", bins=256, range=(0, 512_000), epsilon=0.3,
                                                   integer=True, rng=rng)
        answers = income.range_query([(0, 20_000), (20_000, 50_000), (50_000, 100_000), (100_000, 512_000)])
        answers["± 95%"] = 1.96 * answers["std_error"]
        _show(f"Adults by income band (hierarchical, b = {income.branching}, height {income.height}, ε = 0.3)",
              answers[["low", "high", "estimate", "± 95%"]].astype({"low": "int64", "high": "int64"}),
              f"hierarchical: noisy counts of a tree over the 256 bins, each node with b = {income.branching} "
              f"children, {income.height} levels below the total,\n   made consistent; a range adds a few nodes, "
              f"not many bins. integer=True: whole, non-negative counts that still add up.")

        households = load_households()
        sizes = persons.dp.count_of_counts(group="household_id", location=["state", "county"], epsilon=0.4,
                                           groups=households, max_size=16, rng=rng)
        table = pd.DataFrame({"national": sizes.at("national")})
        for state in households["state"].cat.categories[:3]:
            table[state] = sizes.at("state", state)
        _show("Households by size (count-of-counts over nation > state > county, ε = 0.4)",
              table.fillna(0).astype("int64"),
              "how many households have 0, 1, 2, ... persons; consistent across levels and equal to the public "
              "household counts.\n   Size 0: households on the public list with no person in the data "
              "(vacant). Sizes missing from the table have no household.")

    _show("Budget ledger", budget.ledger[["id", "method", "columns", "epsilon", "status"]])
    print(f"\nSpent ε = {budget.spent:g} of {budget.epsilon:g}; remaining {budget.remaining:g}.")
    summary = ledger.verify()
    print(f"{ledger_label}: {summary.entries} entries, hash chain and running total verified "
          f"(python -m pandas_dp ledger verify PATH does the same; pass --ledger PATH to keep it).")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pandas_dp",
                                     description="Differentially private histograms on pandas DataFrames.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="release tables from a bundled synthetic census and print them",
                            description="Release DP tables from the bundled synthetic census.")
    p_demo.add_argument("--seed", type=int, default=None,
                        help="seed a numpy Generator for reproducible output (experiments only, not production)")
    p_release = sub.add_parser(
        "release", help="run the releases a TOML spec lists (ETL); write tables and a JSON manifest",
        description="Run the releases listed in a TOML spec under one budget of an existing ledger, write each "
                    "as CSV/Parquet plus manifest.json. A full preflight (spec, input header, output folder, "
                    "ledger and budget left) runs first; the spec's total is then reserved in one ledger "
                    "transaction. Exit status 0 done, 2 for any problem found before a charge (nothing "
                    "charged), 1 for a failure after a charge. Spec format: see pandas_dp.cli.spec or the "
                    "docs' Command line page.")
    p_release.add_argument("spec", help="path of the TOML spec")
    mode = p_release.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="run the whole preflight (spec, input header, output folder, ledger) and write nothing")
    mode.add_argument("--resume", action="store_true",
                      help="continue a run that was killed, inside its reservation: the releases its manifest "
                           "and the ledger record are kept, the rest run (nothing is charged twice)")
    mode.add_argument("--cancel", action="store_true",
                      help="cancel a run that was killed: close its reservation and return the unused part to the "
                           "budget (recorded in the ledger and the manifest)")
    p_demo.add_argument("--ledger", default=None,
                        help="create the demo's ledger at this new path (default: a temporary file)")
    add_ledger_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.seed, ledger=args.ledger)
    if args.command == "ledger":
        return run_ledger(args)
    if args.command == "release":
        try:
            return run_release(args.spec, check_only=args.check, resume=args.resume, cancel=args.cancel)
        except SpecError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        except ReleaseError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2


if __name__ == "__main__":
    sys.exit(main())
