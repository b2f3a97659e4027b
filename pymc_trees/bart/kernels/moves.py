"""The tree moves' codes and names, one numbering for every sweep, tally and cumulative
probability vector, and the draw of a move from those probabilities."""

from __future__ import annotations

import numba

__all__ = ["GROW", "PRUNE", "CHANGE", "SWAP", "MOVES", "draw_move"]

# The moves' codes, the one numbering every sweep and tally uses (a tally's columns, a
# cumulative-probability vector's entries), and their names in that order.
GROW, PRUNE, CHANGE, SWAP = 0, 1, 2, 3
MOVES = ("grow", "prune", "change", "swap")


@numba.njit(cache=True, inline="always")
def draw_move(u, move_cp):
    """The move whose interval of the cumulative probabilities ``move_cp`` (shape (4,), in the
    order of ``MOVES``) holds the uniform ``u``."""
    move = GROW
    while move < SWAP and u >= move_cp[move]:
        move += 1
    return move
