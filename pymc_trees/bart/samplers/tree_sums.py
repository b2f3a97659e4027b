"""What a forest sampler keeps of its trees at the training rows between one call and the
next: the trees' sum and the leaves' row counts, with what they were computed for.

The tree step asks a sampler for the term's values after every sweep, and the next sweep
starts from the trees' sum at the rows; a CGM sweep with equal row precisions also keeps
every leaf's row count.  Kept here, neither is recomputed over m trees and n rows when
nothing changed.  Whether a kept array may be used is decided by comparing the forest's key
(its rules, links and leaf values as bytes, ``ForestSampler._forest_key``; the rules and
links alone for the counts) with the key it was kept for: any change to the trees, however
made (a sweep, a level shift, a restored state), makes it unusable.  Plain Python; knows
nothing of PyMC.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TreeSums"]


class TreeSums:
    """The trees' sum at the n training rows (:attr:`buf`), what it holds, and the leaves'
    row counts.

    :attr:`buf` holds, for the forest with key ``key``, one of:

    * the trees' sum without the offset (:meth:`keep`, after ``values()``), taken by the next
      sweep's start (:meth:`take_sums`);
    * the offset plus the trees' values, summed in tree order by the last CGM sweep
      (:meth:`swept`), taken by the next ``values()`` (:meth:`take_values`);
    * nothing usable (after :meth:`forget`, or once taken): it is summed again.

    :attr:`inexact` counts the CGM sweeps in a row that took the values from the residual
    (``ForestSampler.exact_values`` False); it outlives the buffer, as the sampler's own
    count did.  :attr:`counts` is ``(structure_key, counts)`` of shape (m, capacity), kept by
    a sweep with equal precisions, or None.

    The buffer and the counts follow from the trees and the rows: :meth:`release` lets them
    go, and a pickle leaves them out (the sampler allocates them again).
    """

    __slots__ = ("buf", "_held", "inexact", "counts")

    def __init__(self) -> None:
        self.buf: np.ndarray | None = None
        self._held: tuple | None = None
        self.inexact = 0
        self.counts: tuple | None = None

    def allocate(self, n: int) -> None:
        """A new zeroed buffer of n rows, which holds no trees' sum yet."""
        self.buf = np.zeros(n)
        self._held = None

    def release(self) -> None:
        """Let go of the buffer and the counts."""
        self.buf = None
        self._held = None
        self.counts = None

    def forget(self) -> None:
        """The buffer is about to be rewritten: it holds nothing usable."""
        self._held = None

    def keep(self, values: np.ndarray, offset: float, key: tuple) -> None:
        """Keep ``values - offset`` (the trees' sum) for the forest with key ``key``; written
        into :attr:`buf` rather than kept as a copy (n floats fewer)."""
        np.subtract(values, offset, out=self.buf)
        self._held = ("sums", key)

    def take_sums(self, key: tuple) -> bool:
        """Whether :attr:`buf` holds the trees' sum of the forest with key ``key``
        (:meth:`keep`).  The caller is about to change the buffer, so it holds nothing
        usable afterwards."""
        held, self._held = self._held, None
        return held is not None and held[0] == "sums" and held[1] == key

    def hold_sums(self, key: tuple) -> None:
        """:attr:`buf` holds the trees' sum (no offset) of the forest with key ``key``, as a
        sweep leaves it (the pseudo-data minus its residual, equal up to rounding)."""
        self._held = ("sums", key)

    def swept(self, key: tuple, offset: float) -> None:
        """A sweep left the offset plus the trees' values of the forest with key ``key`` in
        :attr:`buf`."""
        self._held = ("values", key, float(offset))

    def take_values(self, key: tuple, offset: float) -> np.ndarray | None:
        """A copy of the values a sweep left (:meth:`swept`) when they belong to the forest
        with key ``key`` and this offset, else None; either way no longer held as values."""
        held = self._held
        if held is not None and held[0] == "values":
            self._held = None
            if held[1] == key and held[2] == float(offset):
                return self.buf.copy()
        return None

    def rescale(self, key: tuple, c: float) -> None:
        """Every leaf was multiplied by ``c``: kept sums (:meth:`keep`) become those of the
        forest with key ``key``, multiplied by c (equal to the rescaled forest's sum up to
        rounding, as the sums a sweep keeps from its residual are); anything else held is
        dropped."""
        if self._held is not None and self._held[0] == "sums":
            self.buf *= c
            self._held = ("sums", key)
        else:
            self._held = None

    def holds(self, key: tuple) -> str | None:
        """What :attr:`buf` holds for the forest with key ``key`` (``"sums"`` or
        ``"values"``), or None; asks without taking."""
        held = self._held
        return held[0] if held is not None and held[1] == key else None

    def __getstate__(self) -> dict:
        return {"inexact": self.inexact}

    def __setstate__(self, state: dict) -> None:
        self.buf = self._held = self.counts = None
        self.inexact = state["inexact"]
