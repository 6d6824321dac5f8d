"""Values -> bin codes at the speed of counting: the per-chunk coders of numeric and time domains.

A :class:`~pandas_dp.domain.grid.BinDomain` picks one coder for its edges, once,
when it is built (:func:`coder_for_edges`), and the engines run it on chunks
of a column small enough to stay in the processor's cache (``CHUNK_ROWS``).
Every coder writes int64 codes into a buffer the caller owns (no allocation
per chunk) so that ``np.add.at(accumulator, codes, 1)`` counts them in the
same pass as ``np.bincount`` would, without a temporary per chunk:

* codes of in-domain values lie in ``[offset, offset + n)``;
* every other value (below, above, missing, not a number) gets one of two
  *drop* codes, ``offset - 1`` or ``offset + n``, and an accumulator of
  ``n + 2`` cells has a slot for both (``-1`` wraps to the last cell).

The coders (``n`` bins, edges ``e_0 < ... < e_n``):

``EvenIntegers`` (integer values, integer edges ``lo + i w``)
    ``u = (x - lo) mod 2**64`` as an unsigned integer, ``u // w`` (libdivide),
    then ``min(., n)``: ``x`` is in ``[lo, lo + n w)`` exactly when ``u < n w``
    (the difference of two int64 never wraps onto ``[0, n w)``), so no float
    is involved and the result is exact for any int64.
``IntegralFloats`` (float values, integer edges ``lo + i w`` below ``2**52``)
    ``k = floor(x)`` is exact and, the edges being integers, ``e_i <= x`` iff
    ``e_i <= k``; so ``(k - lo) // w`` (exact on integer-valued floats),
    clipped to ``[-1, n]`` with ``fmax``/``fmin`` (``NaN`` -> -1, ``inf`` -> n)
    and cast. Four passes when ``lo = 0`` and ``w = 1``.
``EvenFloats`` (any other evenly spaced edges, e.g. ``bins=10, range=(0, 1)``)
    ``floor((x - lo) * n / (hi - lo))`` may land one bin off next to an edge,
    so it is corrected against the exact edges (``numpy.histogram``'s rule):
    ``code -= x < e_code``, ``code += x >= e_(code+1)``.
``SortedEdges`` (uneven edges)
    ``searchsorted(edges, x, side="right")`` on edges of the values' own dtype
    (integer values search integer edges, rounded up: ``x >= e`` iff
    ``x >= ceil(e)`` for an integer ``x``), offset 1 (``NaN`` sorts last).

No coder raises or warns because of a value (``np.errstate(all="ignore")``
around the float arithmetic): a value that does not fit is dropped, and how
many were dropped is never returned (DESIGN section 6).

References
----------
.. [1] T. Granlund, P. Montgomery. "Division by Invariant Integers using
   Multiplication", PLDI 1994 (numpy's integer division by a scalar).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

__all__ = ["CHUNK_ROWS", "Coder", "EvenIntegers", "IntegralFloats", "EvenFloats", "SortedEdges",
           "ChunkBuffers", "coder_for_edges", "INTEGRAL_LIMIT"]

#: Rows coded at once: 2**16 rows keep a chunk's float and int64 temporaries (1 MiB) in cache.
CHUNK_ROWS = 1 << 16

#: Largest magnitude of integer edges binned with integer arithmetic (floats are exact integers below 2**53).
INTEGRAL_LIMIT = float(2**52)

_U64 = np.uint64


class ChunkBuffers:
    """Reusable per-chunk scratch arrays (one float64, one int64), grown on demand."""

    def __init__(self, rows: int = CHUNK_ROWS) -> None:
        self.floats = np.empty(rows, dtype=np.float64)
        self.ints = np.empty(rows, dtype=np.int64)

    def float_view(self, size: int) -> np.ndarray:
        if self.floats.size < size:
            self.floats = np.empty(size, dtype=np.float64)
        return self.floats[:size]

    def int_view(self, size: int) -> np.ndarray:
        if self.ints.size < size:
            self.ints = np.empty(size, dtype=np.int64)
        return self.ints[:size]


class Coder(Protocol):
    """Codes one chunk of a column's values into a caller-owned int64 buffer."""

    @property
    def size(self) -> int:
        """Number of bins ``n``."""

    @property
    def offset(self) -> int:
        """Code of the first bin (in-domain codes are ``offset .. offset + n - 1``)."""

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        """int64 codes of ``values``: in-domain in ``[offset, offset + size)``, else ``offset - 1`` or ``offset + size``.

        The result may be ``values`` itself or a buffer of ``buffers``: read it before the next call, never
        write into it.
        """


@dataclass(frozen=True)
class EvenIntegers:
    """Integer edges ``lo + i * width``, ``i = 0..size``, for integer values (exact, no floats)."""

    lo: int
    width: int
    size: int
    offset: int = 0

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        if values.dtype != np.int64:
            return self._floats().codes(values, buffers)
        if values.size and _inside(values, self.lo, self.lo + self.width * self.size):
            if self.lo == 0 and self.width == 1:
                return values  # every value is its own code: counting reads the column itself
            out = buffers.int_view(values.size)
            np.subtract(values, np.int64(self.lo), out=out)
            if self.width != 1:
                np.floor_divide(out, np.int64(self.width), out=out)
            return out
        out = buffers.int_view(values.size)
        np.subtract(values, np.int64(self.lo), out=out)  # wraps modulo 2**64: exact membership below
        u = out.view(_U64)
        if self.width != 1:
            np.floor_divide(u, _U64(self.width), out=u)
        np.minimum(u, _U64(self.size), out=u)
        return out

    def _floats(self) -> IntegralFloats:
        return IntegralFloats(float(self.lo), float(self.width), self.size)


def _inside(values: np.ndarray, lo: float, hi: float) -> bool:
    """Whether every value of a chunk lies in ``[lo, hi)`` (two reductions; NaN makes it False).

    Most chunks of real data are wholly inside the domain: they skip the
    clipping passes, which only exist for values that drop.
    """
    with np.errstate(all="ignore"):
        low, high = values.min(), values.max()
    if values.dtype.kind == "f":
        return bool(float(low) >= lo and float(high) < hi)
    return int(low) >= lo and int(high) < hi


@dataclass(frozen=True)
class IntegralFloats:
    """Integer-valued edges ``lo + i * width`` (magnitude below ``2**52``) for float values."""

    lo: float
    width: float
    size: int
    offset: int = 0
    _ints: EvenIntegers | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        exact = abs(self.lo) < 2**62 and self.width < 2**62
        object.__setattr__(self, "_ints", EvenIntegers(int(self.lo), int(self.width), self.size) if exact else None)

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        if values.dtype == np.int64 and self._ints is not None:  # integer values: no float at all
            return self._ints.codes(values, buffers)
        out = buffers.int_view(values.size)
        hi = self.lo + self.width * self.size
        if values.dtype == np.float64 and values.size and _inside(values, self.lo, hi):
            # lo <= x < hi: x - lo is exact for an integer lo >= 0 (both are multiples of ulp(x) and
            # 0 <= x - lo <= x), so truncating it is flooring it; a negative lo floors x first.
            if self.lo == 0.0 and self.width == 1.0:
                np.copyto(out, values, casting="unsafe")
                return out
            t = buffers.float_view(values.size)
            with np.errstate(all="ignore"):
                if self.lo >= 0.0:
                    np.subtract(values, self.lo, out=t)
                else:
                    np.floor(values, out=t)
                    np.subtract(t, self.lo, out=t)
                if self.width != 1.0:
                    np.floor_divide(t, self.width, out=t)
            np.copyto(out, t, casting="unsafe")
            return out
        t = buffers.float_view(values.size)
        with np.errstate(all="ignore"):
            np.floor(values, out=t)
            if self.lo != 0.0:
                np.subtract(t, self.lo, out=t)
            if self.width != 1.0:
                np.floor_divide(t, self.width, out=t)
            np.fmax(t, -1.0, out=t)
            np.fmin(t, float(self.size), out=t)
        np.copyto(out, t, casting="unsafe")
        return out


@dataclass(frozen=True, eq=False)
class EvenFloats:
    """Evenly spaced edges (``numpy.linspace``) binned arithmetically, then corrected against the edges."""

    edges: np.ndarray
    offset: int = 0

    @property
    def size(self) -> int:
        return int(self.edges.size - 1)

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        e = self.edges
        n = self.size
        lo, hi = float(e[0]), float(e[-1])
        x = values if values.dtype == np.float64 else values.astype(np.float64)
        t = buffers.float_view(x.size)
        out = buffers.int_view(x.size)
        inside = x.size > 0 and _inside(x, lo, hi)
        with np.errstate(all="ignore"):
            np.subtract(x, lo, out=t)
            np.multiply(t, n / (hi - lo), out=t)
            np.floor(t, out=t)
            if not inside:  # values inside land in [0, n] already (the correction fixes n); others: clip
                np.fmax(t, -1.0, out=t)
                np.fmin(t, float(n), out=t)
            np.copyto(out, t, casting="unsafe")
            # One bin off next to an edge: compare with the exact edges (-inf / NaN pads keep -1 and n in place).
            padded = self._padded()
            out += 1
            out -= x < padded.take(out)
            out += x >= padded.take(out + 1)
            out -= 1
        return out

    def _padded(self) -> np.ndarray:
        cached = self.__dict__.get("_pad")
        if cached is None:
            cached = np.concatenate([[-np.inf], self.edges, [np.nan]])
            object.__setattr__(self, "_pad", cached)
        return cached


@dataclass(frozen=True, eq=False)
class SortedEdges:
    """Any increasing edges: ``searchsorted`` on the values' dtype (codes offset by one)."""

    edges: np.ndarray
    offset: int = 1

    @property
    def size(self) -> int:
        return int(self.edges.size - 1)

    def codes(self, values: np.ndarray, buffers: ChunkBuffers) -> np.ndarray:
        keys = self.edges
        if values.dtype == np.int64 and keys.dtype != np.int64:
            integer_keys = self._integer_keys()
            if integer_keys is None:
                values = values.astype(np.float64)
            else:
                keys = integer_keys
        elif values.dtype != keys.dtype:
            values = values.astype(keys.dtype)
        return np.searchsorted(keys, values, side="right")

    def _integer_keys(self) -> np.ndarray | None:
        """``ceil(edges)`` as int64 (an integer ``x >= e`` iff ``x >= ceil(e)``), or None beyond int64."""
        if "_int_keys" not in self.__dict__:
            e = self.edges
            keys = None
            if abs(float(e[0])) < 2**62 and abs(float(e[-1])) < 2**62:
                keys = np.ceil(e).astype(np.int64)
            object.__setattr__(self, "_int_keys", keys)
        return self.__dict__["_int_keys"]


def coder_for_edges(edges: np.ndarray, *, even: bool) -> Coder:
    """The fastest exact coder for increasing, finite ``edges`` (float64 or int64).

    Parameters
    ----------
    edges : ndarray
        ``n + 1`` strictly increasing finite edges.
    even : bool
        Whether the edges are evenly spaced (``numpy.linspace`` of a range, or
        explicit edges with exactly equal differences).
    """
    n = int(edges.size - 1)
    if edges.dtype == np.int64:
        if even:
            return EvenIntegers(int(edges[0]), int(edges[1] - edges[0]), n)
        return SortedEdges(edges)
    lo, hi = float(edges[0]), float(edges[-1])
    if even:
        width = (hi - lo) / n
        # Equal float differences do not make integer edges: [-1, 5e-324, 1] has two differences of 1.0.
        if (math.isfinite(width) and lo.is_integer() and width.is_integer() and width >= 1
                and max(abs(lo), abs(hi)) < INTEGRAL_LIMIT and lo + n * width == hi
                and np.array_equal(edges, lo + width * np.arange(n + 1, dtype=np.float64))):
            return IntegralFloats(lo, width, n)
        # The arithmetic bin needs a finite scale n / (hi - lo) (edges a few subnormals apart overflow it).
        if math.isfinite(n / (hi - lo)) if hi > lo else False:
            return EvenFloats(edges)
    return SortedEdges(edges)
