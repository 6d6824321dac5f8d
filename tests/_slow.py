"""How deep the statistical matrices go (one knob for CI and for deeper audits).

The default run is a regression check: every mechanism once, at one loss level,
on its most stressing neighbour (:func:`quick_levels`); ``--runslow`` adds the
other neighbours; ``full`` runs everything everywhere.

``PANDAS_DP_SLOW_DEPTH`` (environment variable):

* ``"ci"`` (default): every neighbour the quick run does not already test, at one
  loss level (the quick run covers the others), with :data:`SLOW_TRIALS` = 100
  runs a dataset (the quick run uses :data:`QUICK_TRIALS` = 45 on its one neighbour; a correct
  mechanism fails with probability at most 1 - confidence = 0.001 whatever the
  number of runs, so fewer runs cost power, never false failures). The
  measured-power tests of the tester itself run their cheap cases only, and audits
  of research code that need tens of thousands of looped runs are left to ``full``. The "add outside domain" neighbour is left to
  ``tests/test_boundary_histograms.py`` (and the engine conformance tests), which check it more strongly: byte-identical
  seeded outputs on both frames (a test that cannot fail by chance).
* ``"full"``: every neighbour, every loss level, 3000 runs a dataset, every
  power case and the largest domain for every method (about an hour on 2 cores).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

DEPTH = os.environ.get("PANDAS_DP_SLOW_DEPTH", "ci")
if DEPTH not in ("ci", "full"):
    raise ValueError(f"PANDAS_DP_SLOW_DEPTH={DEPTH!r}: use 'ci' (default) or 'full'")
FULL = DEPTH == "full"
#: Runs per dataset of the slow assert_dp matrices.
SLOW_TRIALS = 3000 if FULL else 100
#: Runs per dataset of the default run's assert_dp checks (a regression layer: a correct mechanism fails with
#: probability at most 0.001 at any number of runs, so fewer runs cost power, never false failures; the slow
#: step and ``full`` depth bring the power back).
QUICK_TRIALS = 3000 if FULL else 45
#: Neighbours every release maps to the same output whatever its noise (tested byte for byte elsewhere).
EXACT_ELSEWHERE = ("add outside domain",)


def slow_levels(levels: Sequence[Any], quick: Any = None) -> list[Any]:
    """The loss levels of a slow matrix: all with ``full``; else one, not the quick run's when it has one."""
    if FULL:
        return list(levels)
    others = [level for level in levels if level != quick]
    return others[:1] or list(levels[:1])


def slow_cases(cases: Mapping[str, Any], quick: str | None = None) -> list[str]:
    """The neighbours of a slow matrix: all with ``full``; else those the quick run and the exact tests skip."""
    if FULL:
        return list(cases)
    return [name for name in cases if name != quick and name not in EXACT_ELSEWHERE]


def quick_levels(names: Sequence[str], levels: Sequence[Any]) -> list[tuple[str, Any]]:
    """The (mechanism, loss level) pairs of a default-run matrix: each mechanism at one level, the levels
    taken in turn (so every level is tested on some mechanisms); every pair with ``full``.

    Testing each mechanism at every level in the default run doubled its time; the slow run tests the
    other neighbours at one level and ``full`` every neighbour at every level.
    """
    if FULL:
        return [(name, level) for name in names for level in levels]
    return [(name, levels[k % len(levels)]) for k, name in enumerate(names)]
