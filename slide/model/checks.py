"""Argument checks shared by the public constructors and methods: each names the argument and
what was expected, so a user's mistake is a ValueError, never a crash in the engine."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np


def finite_number(value: Any) -> bool:
    """A real number that a float holds finitely (ints beyond float's range are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def check_int(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum:,}, got {value:,}")


DEFAULT_KS = (1, 3, 5)


def ranks_for(ks: Any, output_dim: int) -> tuple[int, ...]:
    """The ranks k to report P@k and nDCG@k at: `ks` checked, or 1, 3 and 5 up to output_dim."""
    if ks is None:
        return tuple(k for k in DEFAULT_KS if k <= output_dim)
    if isinstance(ks, (int, np.integer)) or not hasattr(ks, "__iter__"):
        raise ValueError(f"ks must be a sequence of ranks such as (1, 3, 5), got {ks!r}")
    ks = tuple(ks)
    if not ks:
        raise ValueError("ks must name at least one rank k")
    for k in ks:
        check_int("each k in ks", k, 1, output_dim)
    return ks


def check_scoring(mode: Any) -> None:
    """A prediction's mode: exact ("dense") or LSH ("sparse")."""
    if mode not in ("dense", "sparse"):
        raise ValueError(f"mode must be 'dense' or 'sparse', got {mode!r}")
