"""The charged part of ``python -m pandas_dp release``: reserve, read, release, write, return the rest.

Runs after :func:`pandas_dp.cli.preflight.preflight` passed. The spec's whole
total is reserved in one ledger transaction (:meth:`pandas_dp.Budget.reserve`),
so a second run on the same budget is refused before it reads the data. Each
release is then charged to the reservation (its own ledger entry, whose id and
hash go to the manifest) before its noise is drawn; its table and the manifest
are written atomically after every release (:mod:`pandas_dp.cli.files`: a
killed run leaves no temporary file on Linux). Leaving the reservation returns
its unused part.

The manifest is written right after the reservation (no release yet), then
after every release; it is never overwritten by another run. A run that was
killed keeps its reservation: ``release SPEC --resume`` finds it (from the
manifest, or from the ledger's reserve entry naming the spec), keeps every
release that both the manifest and the ledger record, and runs the rest
inside the same reservation; ``release SPEC --cancel`` closes it instead,
recorded in the ledger as a ``cancel`` entry and in the manifest. A charge
whose table was never recorded (the run was killed, failed or interrupted
between its charge and its manifest entry) is *lost*: listed under ``"lost"``
in the manifest, then marked ``failed`` in the ledger, so the two agree; both
``--resume`` and ``--cancel`` remove the temporary files a killed run left.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import pandas_dp as pdp
from pandas_dp.accounting.ledger import loss_of, open_store, store_for
from pandas_dp.accounting.budget import Reservation
from pandas_dp.cli.files import clear_temporary, write_atomic
from pandas_dp.cli.preflight import call_release, preflight, read_input
from pandas_dp.cli.spec import ReleaseError, Spec, SpecError, jsonable, load_spec, parse_spec, release_table
from pandas_dp.errors import BudgetError, BudgetExceededError, LedgerError, PandasDPError

__all__ = ["run_release", "execute", "cancel_run"]


class _WhileProcessing(Exception):
    """A release raised while reading private rows (carries only the error's type name)."""


def _reserve(spec: Spec) -> Any:
    """Open the budget and reserve the spec's total (SpecError when it cannot: nothing charged)."""
    asked = spec.asked()
    try:
        budget = pdp.budget(**{spec.total.parameter: spec.total.amount}, delta=spec.total.delta or None,
                            ledger=spec.ledger, name=spec.budget_name)
        return budget, budget.reserve(loss_of(spec.total.measure, asked).with_delta(spec.asked_delta()),
                                      method="release spec",
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
                 "post_processing": list(getattr(result, "post_processing", ()))}


def _failure_text(err: Exception) -> str:
    """What failed, for the user: only the type of an error raised while the private rows were processed."""
    if isinstance(err, _WhileProcessing):
        return (f"{err} while processing the data (its message is not shown: it could describe private rows; "
                f"rerun this release in Python as the data custodian to see it)")
    return f"{type(err).__name__}: {str(err)[:300]}"  # writing an output: its message names files, not rows


def _manifest_of(spec: Spec) -> dict[str, Any] | None:
    """The run's manifest, or None when there is none (SpecError when it cannot be read)."""
    path = spec.output_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SpecError(spec.path, [f"The manifest {str(path)!r} cannot be read: {str(err)[:200]}"],
                        read="header") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("releases"), list):
        raise SpecError(spec.path, [f"{str(path)!r} is not a release manifest."], read="header")
    return manifest


def _find_run(spec: Spec) -> tuple[Any, Any, dict[str, Any] | None]:
    """The budget, the reopened reservation and the manifest of this spec's killed run (SpecError otherwise)."""
    manifest = _manifest_of(spec)
    try:
        budget = pdp.budget(**{spec.total.parameter: spec.total.amount}, delta=spec.total.delta or None,
                            ledger=spec.ledger, name=spec.budget_name)
        if manifest is not None:
            recorded = manifest.get("budget")
            if not isinstance(recorded, dict):
                recorded = {}
            if recorded.get("name") != spec.budget_name or not isinstance(recorded.get("reservation"), str):
                raise SpecError(spec.path, [f"The manifest in {str(spec.output_dir)!r} is of another budget than "
                                            f"the spec's {spec.budget_name!r}; nothing to resume."], read="header")
            name = recorded["reservation"]
        else:
            name = _open_reservation_of(spec, pdp.Ledger(spec.ledger))
        return budget, Reservation.reopen(budget, name), manifest
    except SpecError:
        raise
    except BudgetError as err:
        raise SpecError(spec.path, [f"Nothing to resume or cancel: {err}"], read="header") from None
    except PandasDPError as err:
        raise SpecError(spec.path, [f"{type(err).__name__}: {err}"], read="header") from None


def _open_reservation_of(spec: Spec, ledger: Any) -> str:
    """The one open reservation whose reserve entry names this spec and its releases (killed before a manifest)."""
    entries = ledger.entries()
    closed = set(entries.loc[entries["kind"] == "close", "budget"])
    found = []
    reserves = entries.loc[(entries["kind"] == "reserve") & (entries["budget"] == spec.budget_name), "params"]
    for text in reserves.tolist():  # the ledger's own entries (public to the operator), not private rows
        params = json.loads(text)
        if (params.get("spec") == str(spec.path) and params.get("releases") == [r.name for r in spec.releases]
                and params.get("reservation") not in closed):
            found.append(params["reservation"])
    if len(found) != 1:
        raise SpecError(spec.path, [f"No manifest in {str(spec.output_dir)!r} and {len(found)} open reservations "
                                    f"of budget {spec.budget_name!r} made by this spec in the ledger; nothing to "
                                    f"resume." if not found else f"No manifest, and several open reservations of "
                                    f"this spec: {found}."], read="header")
    return str(found[0])


def _kept(spec: Spec, plan: Any, manifest: dict[str, Any] | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's releases (kept) and the charges the killed run made after them (lost), checked.

    A release the ledger records as charged but the manifest does not list was
    charged and its output not recorded: it is never released again under the
    same charge (its output may have been written), so it is listed as lost,
    its loss spent. SpecError when the manifest, the spec and the ledger disagree.
    """
    charges = pdp.Ledger(spec.ledger).entries(plan.name)
    charges = charges[charges["kind"] == "charge"].reset_index(drop=True)
    listed = {r.get("name"): (r, "kept") for r in (manifest or {}).get("releases", []) if isinstance(r, dict)}
    listed.update({r.get("name"): (r, "lost") for r in (manifest or {}).get("lost", []) if isinstance(r, dict)})
    kept: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    at = 0  # releases ran in the spec's order, one charge each
    for r in spec.releases:
        entry, how = listed.pop(r.name, (None, ""))
        if entry is None and at >= len(charges):
            break
        if at >= len(charges) or (entry is not None and (entry.get("ledger_id") != int(charges.loc[at, "id"])
                                                         or entry.get("ledger_hash") != charges.loc[at, "hash"])):
            raise SpecError(spec.path, [f"The release {r.name!r} does not match the ledger's charge #{at + 1} of "
                                        f"reservation {plan.name!r}: the manifest, the spec or the ledger changed "
                                        f"since the run; nothing to resume."], read="header")
        if entry is None:
            entry, how = {"name": r.name, "ledger_id": int(charges.loc[at, "id"]),
                          "ledger_hash": str(charges.loc[at, "hash"])}, "lost"
        (kept if how == "kept" else lost).append(entry)
        at += 1
    if listed or at != len(charges):
        raise SpecError(spec.path, [f"The manifest or the reservation {plan.name!r} records releases the spec "
                                    f"does not list in that order: the spec changed since the run; nothing to "
                                    f"resume."], read="header")
    return kept, lost


def _clear_partial(spec: Spec) -> None:
    """Remove the hidden temporary files a killed run left in the output folder (outputs no manifest lists)."""
    clear_temporary(spec.output_dir, [f"{r.name}.{spec.output_format}" for r in spec.releases] + ["manifest.json"])


def _mark_failed(spec: Spec, reservation: str, lost: list[dict[str, Any]]) -> None:
    """Mark the ledger entries of ``lost`` charges ``failed``, so the ledger agrees with the manifest.

    A lost charge (charged, its table never recorded) may still read ``charged`` (the run died
    before its noise was drawn) or ``ok`` (after). Status is outside the entries' hashes and never
    changes an amount. A ledger that refuses the update (a guarded PostgreSQL ledger lets a status
    change only from ``charged``) keeps the status, and a note says so.
    """
    if not lost:
        return
    try:
        rows = pdp.Ledger(spec.ledger).entries(reservation)
        store = store_for(spec.ledger)
        open_store(store)
    except PandasDPError as err:
        print(f"note: the ledger's status of the lost charges could not be set to 'failed': {str(err)[:200]}",
              file=sys.stderr)
        return
    status = {int(i): str(s) for i, s in zip(rows["id"], rows["status"])}
    for entry in lost:
        entry_id = int(entry["ledger_id"])
        was = status.get(entry_id)
        if was not in ("charged", "ok"):
            continue
        try:
            with store.write() as txn:
                txn.set_status(entry_id, "failed", was)
        except LedgerError as err:
            print(f"note: the ledger keeps status {was!r} for the lost charge of release {entry['name']!r} (entry "
                  f"{entry_id}): {str(err)[:200]}", file=sys.stderr)


def cancel_run(spec: Spec) -> int:
    """Close the killed run's reservation (a ``cancel`` entry) and mark its manifest cancelled; return 0.

    Its lost charges (charged, no table recorded) are listed in the manifest and marked ``failed`` in the ledger.
    """
    budget, plan, manifest = _find_run(spec)
    try:
        _, lost = _kept(spec, plan, manifest)
    except SpecError:  # the spec changed since the run: it is cancelled all the same, its charges left as they are
        lost = []
    returned = plan.close(method="cancel")
    if manifest is not None:
        manifest.update(complete=False, cancelled=True, lost=lost)
        manifest["budget"]["spent"] = budget.spent
        text = json.dumps(manifest, indent=2)
        write_atomic(spec.output_dir / "manifest.json", lambda p: Path(p).write_text(text, encoding="utf-8"))
    _mark_failed(spec, plan.name, lost)
    if spec.output_dir.exists():
        _clear_partial(spec)
    head = pdp.Ledger(spec.ledger).verify().head
    print(f"Cancelled the run's reservation {plan.name!r}: {spec.total.parameter} = {float(returned.amount):g} "
          f"returned to budget {spec.budget_name!r} (recorded in the ledger; head {head}).")
    return 0


def execute(spec: Spec, *, resume: bool = False) -> int:
    """Reserve (or resume), read, release and write; return 0 (SpecError before a charge, ReleaseError after one)."""
    kept: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    resumed = 0
    if resume:
        budget, plan, manifest = _find_run(spec)
        kept, lost = _kept(spec, plan, manifest)
        resumed = int(manifest.get("resumed", 0)) + 1 if manifest is not None else 1
        for gone in lost:
            if manifest is not None and gone in manifest.get("lost", []):
                continue  # reported by an earlier resume
            print(f"note: release {gone['name']!r} was charged by the killed run (ledger entry {gone['ledger_id']}) "
                  f"but its table was not recorded: it is not released again under the same charge (its loss "
                  f"stays spent; release it again from a new spec).", file=sys.stderr)
        if spec.output_dir.exists():
            _clear_partial(spec)
    else:
        budget, plan = _reserve(spec)
    lost_here: list[dict[str, Any]] = list(lost)  # lost charges the ledger does not mark 'failed' yet
    try:
        frame = read_input(spec)
        spec.output_dir.mkdir(parents=True, exist_ok=True)
    except Exception as err:  # the file or folder itself failed (never a row: read_input does not fail on rows)
        if not resume:
            plan.close()
        raise SpecError(spec.path, [f"Reading {str(spec.input)!r} or creating {str(spec.output_dir)!r} failed: "
                                    f"{type(err).__name__}: {str(err)[:200]}"], read="data") from None
    rng = np.random.default_rng(spec.seed) if spec.seed is not None else None
    if rng is not None:
        print(f"note: seed = {spec.seed} makes the noise predictable: for experiments, not for production.",
              file=sys.stderr)
    manifest_path = spec.output_dir / "manifest.json"
    entries: list[dict[str, Any]] = list(kept)
    location = pdp.Ledger(spec.ledger).location

    def write_manifest() -> None:
        manifest = {"library": "pandas_dp", "version": pdp.__version__, "spec": str(spec.path),
                    "input": str(spec.input),
                    "budget": {"name": spec.budget_name, "measure": spec.total.measure,
                               spec.total.parameter: float(spec.total.amount), "spent": budget.spent,
                               "ledger": location, "reservation": plan.name,
                               "reservation_entry": plan.reserved_entry},
                    "seeded": spec.seed is not None, "complete": len(entries) == len(spec.releases),
                    "resumed": resumed, "releases": entries, "lost": lost}
        if spec.total.delta:
            funds: dict[str, Any] = manifest["budget"]  # type: ignore[assignment]
            funds.update(delta=float(spec.total.delta), delta_spent=budget.delta_spent)
        text = json.dumps(manifest, indent=2)
        write_atomic(manifest_path, lambda p: Path(p).write_text(text, encoding="utf-8"))

    # At once: a run killed before its first release can still be resumed or cancelled; a resumed run's lost
    # charges are recorded in the manifest first, then marked failed in the ledger (a kill in between: the next
    # resume marks them), so the two agree.
    write_manifest()
    _mark_failed(spec, plan.name, lost_here)
    current = None
    try:
        with plan:
            done = {e["name"] for e in kept + lost}
            for r in [r for r in spec.releases if r.name not in done]:
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
    except BaseException as err:
        # The message of an error raised while the private rows were being processed could describe them, so
        # only its type is shown (boundary rule); rerun the release in Python, as the data custodian, to see it.
        name = current.name if current is not None else "?"
        lost_here = []
        if current is not None and len(plan.charges) > len(entries) - len(kept):
            # charged, its table never recorded: lost, in the manifest and in the ledger (status 'failed')
            charge = plan.charges[-1]
            lost_here.append({"name": current.name, "ledger_id": charge.ledger_id, "ledger_hash": charge.ledger_hash})
            lost.append(lost_here[-1])
        charged = bool(plan.charges or kept or lost)
        if charged:
            write_manifest()
            _mark_failed(spec, plan.name, lost_here)
        elif not resume:  # the run charged nothing and its reservation is closed: its empty manifest goes too
            manifest_path.unlink(missing_ok=True)
        if not isinstance(err, Exception):  # an interrupt (Ctrl-C): recorded like a failure, then raised as it is
            raise
        what = _failure_text(err)
        if not charged:
            raise SpecError(spec.path, [f"[[release]] {name!r}: {what}."], read="data") from None
        raise ReleaseError(
            f"Release {name!r} failed after {len(kept) + len(plan.charges)} charge(s) had been recorded: {what}. "
            f"The {len(entries)} table(s) written are listed in {str(manifest_path)!r} (complete: false); the "
            f"ledger's status column marks each charge 'ok' or 'failed', and the reservation's unused part was "
            f"returned.") from None
    write_manifest()
    kept_note = f" ({len(kept)} kept from the killed run)" if kept else ""
    print(f"Spent {spec.total.parameter} = {budget.spent:g} of {float(spec.total.amount):g}{kept_note}; manifest: "
          f"{manifest_path}")
    return 0


def run_release(spec_path: str | Path, *, check_only: bool = False, resume: bool = False,
                cancel: bool = False) -> int:
    """Preflight, reserve, read, release, write tables and ``manifest.json``; return the exit status (0).

    Parameters
    ----------
    spec_path : str or Path
        The TOML spec (see the module documentation).
    check_only : bool
        Run the whole preflight (including reading the input's header) and write nothing.
    resume : bool
        Continue the run of this spec that was killed, inside its reservation:
        the releases its manifest and the ledger record are kept, the rest run.
    cancel : bool
        Cancel the run of this spec that was killed: close its reservation
        (recorded in the ledger) and mark its manifest cancelled.

    Raises
    ------
    SpecError
        For every problem found before a charge (exit status 2); nothing was charged.
    ReleaseError
        For a failure after a release was charged (exit status 1).
    """
    if cancel:
        return cancel_run(load_spec(spec_path))
    spec, problems = parse_spec(spec_path)
    if spec is None:
        raise SpecError(Path(spec_path), problems)
    preflight(spec, resuming=resume, problems=problems)  # every problem of every stage, at once
    asked = spec.asked()
    if check_only:
        print(f"Spec {str(spec.path)!r} is valid: {len(spec.releases)} release(s), {spec.total.parameter} = "
              f"{float(asked):g} of {float(spec.total.amount):g}; the input's header, the output folder and the "
              f"ledger were checked. Nothing was written.")
        return 0
    return execute(spec, resume=resume)
