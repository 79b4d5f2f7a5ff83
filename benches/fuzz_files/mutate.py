"""Structure-aware mutations: a file is taken apart into what it means (named arrays, a JSON
header, a manifest), changed there, and written back with every checksum recomputed, so a case
gets past the CRCs that catch accidents and reaches the checks that must catch intent."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import numpy as np

INT_EDGES = (0, 1, -1, 2, 7, 255, 256, 2 ** 15, 2 ** 16, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 62,
             2 ** 63 - 1, -2 ** 31, -2 ** 63, 10 ** 6, 10 ** 9)
FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 1e-45, 1e38, -1e38, 3.4e38, float("nan"), float("inf"), float("-inf"))
JSON_EDGES: tuple = (None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, 1e308, -1e308, 0.5, "", "x",
                     "nan", [], {}, [1, 2], {"a": 1}, "A" * 10_000)


DEEP = "__deeply_nested__"  # stands for a list nested thousands deep, spliced in by dumps()
DEPTH = 5000


def dumps(doc: Any) -> str:
    """JSON text of `doc` with every DEEP marker replaced by a list nested DEPTH deep (which
    json.dumps itself cannot write): parsers that recurse must still refuse it cleanly."""
    return json.dumps(doc).replace(f'"{DEEP}"', "[" * DEPTH + "1" + "]" * DEPTH)


def edge_value(rng: random.Random, dtype: np.dtype, dims: tuple) -> Any:
    """A value that sits on an edge of `dtype` or of the array's own dimensions."""
    if dtype.kind == "f":
        return rng.choice(FLOAT_EDGES)
    near = [d + k for d in dims for k in (-1, 0, 1)]
    return _wrap(rng.choice(list(INT_EDGES) + near), dtype)


def _wrap(value: int, dtype: np.dtype) -> int:
    """`value` as the integer type would store it (two's complement wrap-around)."""
    bits = dtype.itemsize * 8
    value %= 2 ** bits
    return value - 2 ** bits if dtype.kind == "i" and value >= 2 ** (bits - 1) else value


def mutate_array(rng: random.Random, a: np.ndarray, dims: tuple) -> np.ndarray:
    """One change to one array: its values, its length, its shape or its type."""
    op = rng.choice(("values", "values", "values", "shuffle", "truncate", "extend", "reshape", "dtype", "empty"))
    a = np.array(a, copy=True)
    if op == "values" and a.size:
        flat = a.reshape(-1)
        for _ in range(rng.choice((1, 1, 2, 5, 50))):
            flat[rng.randrange(flat.size)] = edge_value(rng, a.dtype, dims + a.shape)
        return a
    if op == "shuffle" and a.size:
        flat = a.reshape(-1)
        np.random.default_rng(rng.randrange(2 ** 32)).shuffle(flat)
        return a
    if op == "truncate" and a.shape and a.shape[0]:
        return a[:rng.randrange(a.shape[0])]
    if op == "extend" and a.shape:
        return np.concatenate([a, a[:max(1, a.shape[0] // 3)]]) if a.shape[0] else np.zeros((3,) + a.shape[1:], a.dtype)
    if op == "reshape":
        return a.reshape(-1) if a.ndim > 1 else a.reshape(1, -1)
    if op == "dtype":
        return a.astype(rng.choice((np.int32, np.int64, np.uint32, np.float32, np.float64, np.uint8, np.int8)))
    return a[:0] if a.ndim == 1 else a[:, :0]


def json_paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a JSON-like value (dict keys and list indices)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += json_paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            out += json_paths(v, prefix + (i,))
    return out


def mutate_json(rng: random.Random, doc: Any) -> Any:
    """One change at a random place in a JSON document: a value replaced, perturbed or deleted."""
    doc = copy.deepcopy(doc)
    paths = [p for p in json_paths(doc) if p]
    if not paths:
        return rng.choice(JSON_EDGES + (DEEP,))
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    old = parent[key]
    op = rng.random()
    if op < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif op < 0.45 and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[key] = rng.choice((old + 1, old - 1, -old, old * 1000, old * 10 ** 12, -1 - old))
    elif op < 0.5:
        parent[key] = DEEP
    else:
        parent[key] = rng.choice(JSON_EDGES)
    return doc
