"""The swap search's arithmetic (``selection.py``): the change of the squared residual for
every (trainval video, test video) swap, exactly, and which swaps keep every floor."""

from __future__ import annotations

import numpy as np


def swap_deltas(ys: np.ndarray, yt: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Change of the squared residual for every swap (v leaves trainval, u joins it)."""
    a = 2 * (ys @ r) + np.einsum("ij,ij->i", ys, ys)
    b = -2 * (yt @ r) + np.einsum("ij,ij->i", yt, yt)
    return a[:, None] + b[None, :] - 2 * cross(ys, yt)


def cross(ys: np.ndarray, yt: np.ndarray) -> np.ndarray:
    """``ys @ yt.T`` exactly: through BLAS in float64 when every product sum is an integer
    float64 holds exactly (below 2**52), else in int64 (numpy's integer matmul has no BLAS)."""
    big = max(int(np.abs(ys).max(initial=0)), 1) * max(int(np.abs(yt).max(initial=0)), 1)
    if big * ys.shape[1] < 2 ** 52:
        return (ys.astype(np.float64) @ yt.T.astype(np.float64)).astype(np.int64)
    return ys @ yt.T


def floors_kept(t2s: np.ndarray, t2t: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Swaps that keep every floor met: only a trainval video holding more of a floor's T2
    than its slack can break it (every other row is allowed whatever joins)."""
    ok = np.ones((len(t2s), len(t2t)), dtype=bool)
    for f in range(t2s.shape[1]):
        risky = np.flatnonzero(t2s[:, f] > slack[f])
        if len(risky):
            ok[risky] &= (t2t[None, :, f] - t2s[risky, None, f]) >= -slack[f]
    return ok
