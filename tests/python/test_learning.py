"""Learning on a generated problem: the sampled network matches the dense one with the same budget,
and HOGWILD with two threads lands in the same band as one thread."""

import pytest

import slide

EPOCHS = 5
LSH = slide.LSHConfig(k=3, l=50, rehash_every=2000, rebuild_every=20000)


def _train(problem, lsh, threads):
    train, test = problem
    net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(128,), lsh=lsh, learning_rate=1e-3,
                        threads=threads, seed=0)
    history = net.fit(train.X, train.Y, epochs=EPOCHS, batch_size=128, progress=False)
    return net, history, net.evaluate(test.X, test.Y)["P@1"]


@pytest.fixture(scope="module")
def dense_p1(small_problem):
    return _train(small_problem, None, threads=2)[2]


def test_sampled_matches_dense_p_at_1(small_problem, dense_p1):
    net, history, p1 = _train(small_problem, LSH, threads=2)
    chance = 1.0 / small_problem[0].Y.shape[1]
    assert dense_p1 > 100 * chance, f"dense P@1 {dense_p1} is near chance"
    assert p1 >= dense_p1 - 0.02, f"sampled P@1 {p1:.4f} vs dense {dense_p1:.4f}"
    assert history[-1]["active_per_sample"] < 0.2 * small_problem[0].Y.shape[1], "sampling must be sparse"
    assert history[-1]["loss"] < history[0]["loss"]
    test = small_problem[1]
    sparse_p1 = net.evaluate(test.X, test.Y, mode="sparse")["P@1"]
    assert sparse_p1 > 0.5 * p1, f"LSH-sparse inference P@1 {sparse_p1:.4f} vs exact {p1:.4f}"


@pytest.mark.slow  # about 30 s: a statistical band over repeated two-thread runs
def test_hogwild_two_threads_in_the_one_thread_band(small_problem, dense_p1):
    p1_one = _train(small_problem, LSH, threads=1)[2]
    p1_two = _train(small_problem, LSH, threads=2)[2]
    assert abs(p1_two - p1_one) <= 0.02, f"1 thread {p1_one:.4f}, 2 threads {p1_two:.4f}"
