"""Property-based tests (Hypothesis) of the engine's hash tables, both active-set builders and
top-k, each against a short reference implementation in Python."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slide import _core

T = _core.testing


@st.composite
def tables_input(draw, max_items=60, max_tables=4, max_bits=4):
    items = draw(st.integers(1, max_items))
    tables = draw(st.integers(1, max_tables))
    bits = draw(st.integers(1, max_bits))
    codes = np.array(draw(st.lists(st.integers(0, 2**bits - 1), min_size=tables * items,
                                   max_size=tables * items)), np.uint32).reshape(tables, items)
    order = np.array(draw(st.permutations(range(items))), np.uint32)
    bucket_size = draw(st.integers(1, 8))
    return codes, order, bits, bucket_size


def reference_fifo(codes, order, bits, bucket_size):
    """Each bucket keeps the last `bucket_size` items inserted into it, in insertion order."""
    out = []
    for t in range(codes.shape[0]):
        buckets = [[] for _ in range(2**bits)]
        for item in order:
            buckets[codes[t, item]].append(int(item))
        out.append([b[-bucket_size:] if len(b) > bucket_size else b for b in buckets])
    return out


@settings(max_examples=150, deadline=None)
@given(tables_input(), st.integers(1, 3))
def test_fifo_tables_match_the_reference(inp, threads):
    codes, order, bits, size = inp
    assert T.hash_tables(codes, order, bits, size, False, 0, threads) == reference_fifo(codes, order, bits, size)


@settings(max_examples=150, deadline=None)
@given(tables_input(), st.integers(0, 2**32), st.integers(1, 3))
def test_reservoir_tables_hold_a_sample_of_each_bucket(inp, seed, threads):
    codes, order, bits, size = inp
    got = T.hash_tables(codes, order, bits, size, True, seed, threads)
    assert got == T.hash_tables(codes, order, bits, size, True, seed, 1)  # threads never change the tables
    for t in range(codes.shape[0]):
        for b, ids in enumerate(got[t]):
            members = set(np.flatnonzero(codes[t] == b).tolist())
            assert len(ids) == min(size, len(members)) and len(set(ids)) == len(ids) and set(ids) <= members


def reference_active_set(buckets_of_query, labels, max_active, n_items):
    """Labels first (deduplicated, in order), then the candidates in order of first retrieval; a
    cap keeps the candidates found in the most tables (earlier first among equals)."""
    out = list(dict.fromkeys(labels))
    hits, order = {}, []
    for bucket in buckets_of_query:
        for item in bucket:
            if item in out:
                continue
            if item not in hits:
                order.append(item)
            hits[item] = hits.get(item, 0) + 1
    room = max_active - len(out) if max_active > 0 else len(order)
    chosen = set(sorted(order, key=lambda i: (-hits[i], order.index(i)))[:max(room, 0)])
    return out + [i for i in order if i in chosen]


@st.composite
def active_set_input(draw):
    codes, order, bits, size = draw(tables_input())
    queries = np.array(draw(st.lists(st.lists(st.integers(0, 2**bits - 1), min_size=codes.shape[0],
                                              max_size=codes.shape[0]), min_size=1, max_size=5)), np.uint32)
    items = codes.shape[1]
    labels = draw(st.lists(st.lists(st.integers(0, items - 1), max_size=4), min_size=len(queries),
                           max_size=len(queries)))
    return codes, order, bits, size, queries, labels


@settings(max_examples=200, deadline=None)
@given(active_set_input(), st.integers(0, 70), st.integers(0, 12), st.integers(0, 2**32))
def test_per_sample_active_sets_match_the_reference(inp, min_active, max_active, seed):
    codes, order, bits, size, queries, labels = inp
    contents = reference_fifo(codes, order, bits, size)
    got = T.active_sets(codes, order, bits, size, queries, labels, min_active, max_active, seed)
    items = codes.shape[1]
    for q, ids in enumerate(got):
        expected = reference_active_set([contents[t][queries[q, t]] for t in range(codes.shape[0])], labels[q],
                                        max_active, items)
        assert ids[:len(expected)] == expected
        assert len(ids) == max(len(expected), min(min_active, items))  # topped up exactly to the minimum
        assert len(set(ids)) == len(ids) and all(0 <= i < items for i in ids)


@settings(max_examples=200, deadline=None)
@given(active_set_input(), st.integers(0, 20), st.integers(0, 70), st.integers(1, 3), st.integers(0, 2**32))
def test_the_batch_shared_active_set_matches_the_reference(inp, max_candidates, min_size, threads, seed):
    codes, order, bits, size, queries, labels = inp
    contents = reference_fifo(codes, order, bits, size)
    flat_labels = [i for row in labels for i in row]
    out = list(dict.fromkeys(flat_labels))
    hits = {}
    for q in range(len(queries)):
        for t in range(codes.shape[0]):
            for item in contents[t][queries[q, t]]:
                if item not in out:
                    hits[item] = hits.get(item, 0) + 1
    # the most retrieved candidates, ties broken by the smaller id, in that order
    expected = out + sorted(hits, key=lambda i: (-hits[i], i))[:max_candidates]
    items = codes.shape[1]
    first, second = T.shared_active_set(codes, order, bits, size, queries, flat_labels, max_candidates, min_size,
                                        threads, seed)
    for ids in (first, second):
        assert ids[:len(expected)] == expected
        assert len(ids) == max(len(expected), min(min_size, items))
        assert len(set(ids)) == len(ids) and all(0 <= i < items for i in ids)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32) | st.sampled_from([0.0, 1.0, -1.0]),
                max_size=200),
       st.integers(1, 50))
def test_top_k_matches_sorting(scores, k):
    # Up to 200 scores for k down to 1: the buffer of 2k fills and is cut back to k many times.
    ids, values = T.top_k(scores, k)
    best = sorted(range(len(scores)), key=lambda i: (-np.float32(scores[i]), i))[:k]
    assert ids[:len(best)] == best and all(i == -1 for i in ids[len(best):])
    np.testing.assert_array_equal(values[:len(best)], np.float32(scores)[best] if best else [])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32) | st.just(float("nan")), max_size=60),
       st.integers(1, 20))
def test_top_k_ranks_nan_below_every_number(scores, k):
    ids, values = T.top_k(scores, k)
    numbers = [i for i in range(len(scores)) if not np.isnan(scores[i])]
    best = sorted(numbers, key=lambda i: (-np.float32(scores[i]), i))[:k]
    assert ids[:len(best)] == best
    rest = [i for i in ids[len(best):] if i != -1]  # NaNs fill the places no number took
    assert all(np.isnan(scores[i]) for i in rest) and len(set(rest)) == len(rest)
