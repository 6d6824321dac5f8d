"""The charged part of ``python -m pandas_dp release``: reserve, read, release, write, return the rest.

Runs after :func:`pandas_dp.cli.preflight.preflight` passed. The spec's whole
total is reserved in one ledger transaction (:meth:`pandas_dp.Budget.reserve`),
so a second run on the same budget is refused before it reads the data. Each
release is then charged to the reservation (its own ledger entry, whose id and
hash go to the manifest) before its noise is drawn; its table and the manifest
are written atomically (temporary file, fsync, rename) after every release.
Leaving the reservation returns its unused part.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pandas_dp.cli.preflight import call_release, read_input, write_atomic
from pandas_dp.cli.spec import ReleaseError, Spec, SpecError, jsonable, release_table
from pandas_dp.errors import BudgetExceededError, PandasDPError

__all__ = ["execute"]


class _WhileProcessing(Exception):
    """A release raised while reading private rows (carries only the error's type name)."""


def _reserve(spec: Spec) -> Any:
    """Open the budget and reserve the spec's total (SpecError when it cannot: nothing charged)."""
    import pandas_dp as pdp
    from pandas_dp.accounting.ledger._ops import loss_of

    asked = spec.asked()
    try:
        budget = pdp.budget(**{spec.total.parameter: spec.total.amount}, ledger=spec.ledger, name=spec.budget_name)
        return budget, budget.reserve(loss_of(spec.total.measure, asked), method="release spec",
                                      params={"spec": str(spec.path), "releases": [r.name for r in spec.releases]})
    except BudgetExceededError as err:
        raise SpecError(spec.path, [f"The budget cannot cover the whole spec any more (another run may be using "
                                    f"it): {err}"], read="header") from None
    except PandasDPError as err:
        raise SpecError(spec.path, [f"{type(err).__name__}: {err}"], read="header") from None


def _write_release(spec: Spec, r: Any, result: Any, charge: Any) -> tuple[Path, dict[str, Any]]:
    """Write one release's table (parquet or CSV, atomically); return its path and its manifest entry."""
    out = spec.output_dir / f"{r.name}.{spec.output_format}"
    table = release_table(result, spec.confidence)
    if spec.output_format == "parquet":
        write_atomic(out, lambda p, t=table: t.to_parquet(p, index=False))
    else:
        write_atomic(out, lambda p, t=table: t.to_csv(p, index=False))
    return out, {"name": r.name, "file": out.name, "method": result.method,
                 "parameters": jsonable(dict(result.params)), "spec": jsonable(r.args),
                 r.loss.parameter: float(r.loss.amount), "loss": r.loss.describe(),
                 "ledger_id": charge.ledger_id, "ledger_hash": charge.ledger_hash,
                 "ledger_head": charge.ledger_head,
                 "post_processing": list(result.post_processing)}


def _failure_text(err: Exception) -> str:
    """What failed, for the user: only the type of an error raised while the private rows were processed."""
    if isinstance(err, _WhileProcessing):
        return (f"{err} while processing the data (its message is not shown: it could describe private rows; "
                f"rerun this release in Python as the data custodian to see it)")
    return f"{type(err).__name__}: {str(err)[:300]}"  # writing an output: its message names files, not rows


def execute(spec: Spec) -> int:
    """Reserve, read, release and write; return 0 (SpecError before a charge, ReleaseError after one)."""
    import pandas_dp as pdp

    budget, plan = _reserve(spec)
    try:
        frame = read_input(spec)
        spec.output_dir.mkdir(parents=True, exist_ok=True)
    except Exception as err:  # the file or folder itself failed (never a row: read_input does not fail on rows)
        plan.close()
        raise SpecError(spec.path, [f"Reading {str(spec.input)!r} or creating {str(spec.output_dir)!r} failed: "
                                    f"{type(err).__name__}: {str(err)[:200]}"], read="data") from None
    rng = np.random.default_rng(spec.seed) if spec.seed is not None else None
    if rng is not None:
        print(f"note: seed = {spec.seed} makes the noise predictable: for experiments, not for production.",
              file=sys.stderr)
    manifest_path = spec.output_dir / "manifest.json"
    entries: list[dict[str, Any]] = []
    location = pdp.Ledger(spec.ledger).location

    def write_manifest() -> None:
        manifest = {"library": "pandas_dp", "version": pdp.__version__, "spec": str(spec.path),
                    "input": str(spec.input),
                    "budget": {"name": spec.budget_name, "measure": spec.total.measure,
                               spec.total.parameter: float(spec.total.amount), "spent": budget.spent,
                               "ledger": location, "reservation": plan.name,
                               "reservation_entry": plan.reserved_entry},
                    "seeded": spec.seed is not None, "complete": len(entries) == len(spec.releases),
                    "releases": entries}
        text = json.dumps(manifest, indent=2)
        write_atomic(manifest_path, lambda p: Path(p).write_text(text, encoding="utf-8"))

    current = None
    try:
        with plan:
            for r in spec.releases:
                current = r
                try:
                    result = call_release(frame, r, rng)
                except Exception as err:
                    raise _WhileProcessing(type(err).__name__) from None
                out, entry = _write_release(spec, r, result, plan.charges[-1])
                entries.append(entry)
                write_manifest()
                print(f"released {r.name!r} ({result.method}, {r.loss.parameter} = {float(r.loss.amount):g}) "
                      f"-> {out}")
    except Exception as err:
        # The message of an error raised while the private rows were being processed could describe them, so
        # only its type is shown (boundary rule); rerun the release in Python, as the data custodian, to see it.
        name = current.name if current is not None else "?"
        what = _failure_text(err)
        if not plan.charges:
            raise SpecError(spec.path, [f"[[release]] {name!r}: {what}."], read="data") from None
        write_manifest()
        raise ReleaseError(
            f"Release {name!r} failed after {len(plan.charges)} charge(s) had been recorded: {what}. The "
            f"{len(entries)} table(s) written are listed in {str(manifest_path)!r} (complete: false); the ledger's "
            f"status column marks each charge 'ok' or 'failed', and the reservation's unused part was "
            f"returned.") from None
    write_manifest()
    print(f"Spent {spec.total.parameter} = {budget.spent:g} of {float(spec.total.amount):g}; manifest: "
          f"{manifest_path}")
    return 0
