"""Cryptographically secure uniform 64-bit words (AES-256 in counter mode).

The default randomness of :mod:`pandas_dp` when ``rng=None``. numpy's bit
generators (PCG64, Philox, MT19937) are fast but predictable: whoever sees
enough outputs, or guesses the seed, can reproduce the noise and subtract it
from a release. Seeding them from ``os.urandom`` does not change that.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["SecureRandom", "default_source"]

#: Words produced per call of the cipher (512 KiB of keystream).
_CHUNK_WORDS = 1 << 16
#: Re-key after this many keystream bytes (2**32 AES blocks = 64 GiB).
_REKEY_BYTES = 1 << 36
_ZEROS = bytes(8 * _CHUNK_WORDS)

_LIVE: weakref.WeakSet[SecureRandom] = weakref.WeakSet()


class SecureRandom:
    """Source of independent uniform 64-bit words from an AES-256-CTR keystream.

    Notes
    -----
    The 256-bit key and the 128-bit initial counter block come from
    ``os.urandom`` (the operating system's CSPRNG). The words are the
    keystream ``AES_k(c), AES_k(c + 1), ...`` read as little-endian
    ``uint64``; AES-CTR output is computationally indistinguishable from
    uniform bits (AES is assumed a pseudorandom permutation; the PRP/PRF
    switching term is at most ``q**2 / 2**129`` for ``q`` blocks, and the key is
    replaced every ``2**32`` blocks so that term stays below ``2**-64``).

    The source is re-keyed from ``os.urandom``

    * in a child process right after ``os.fork`` (``os.register_at_fork``
      hook), and again whenever the process id differs from the one that
      keyed it (in case a fork bypassed the hook), so a parent and its
      children never share a keystream;
    * every ``2**36`` bytes of output.

    Drawing is thread-safe (one lock per source, held while the cipher runs).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rekey()
        _LIVE.add(self)

    def _rekey(self) -> None:
        self._pid = os.getpid()
        self._produced = 0
        cipher = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16)))
        self._encryptor = cipher.encryptor()

    def _after_fork_in_child(self) -> None:
        # A lock held by another thread at fork time would stay locked forever.
        self._lock = threading.Lock()
        self._rekey()

    def words(self, n: int, *, out: np.ndarray | None = None) -> np.ndarray:
        """Return ``n`` independent uniform ``uint64`` words.

        Parameters
        ----------
        n : int
            Number of words, ``n >= 0``.
        out : numpy.ndarray, optional
            ``uint64`` buffer of length at least ``n + 2`` to fill and reuse
            (the cipher writes up to 15 bytes past the requested length).

        Returns
        -------
        numpy.ndarray
            ``uint64`` array of length ``n`` (a view of ``out`` if given).
        """
        if out is None or out.dtype != np.uint64 or out.size < n + 2:
            out = np.empty(n + 2, dtype=np.uint64)
        raw = out.data.cast("B")
        with self._lock:
            if os.getpid() != self._pid or self._produced >= _REKEY_BYTES:
                self._rekey()
            done = 0
            while done < n:
                m = min(_CHUNK_WORDS, n - done)
                # CTR keystream = encryption of zero bytes.
                self._encryptor.update_into(_ZEROS[: 8 * m], raw[8 * done :])
                done += m
            self._produced += 8 * n
        return out[:n]


def _rekey_all_in_child() -> None:
    for source in list(_LIVE):
        source._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey_all_in_child)

_DEFAULT: SecureRandom | None = None
_DEFAULT_LOCK = threading.Lock()


def default_source() -> SecureRandom:
    """The process-wide :class:`SecureRandom` used when ``rng=None``."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = SecureRandom()
    return _DEFAULT
