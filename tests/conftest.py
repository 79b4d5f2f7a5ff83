import pytest


@pytest.fixture(scope="session")
def small_problem():
    """A learnable problem: 5,000 features, 10,000 labels, 20,000 points (18k train, 2k test)."""
    from slide.datasets import make_train_test

    return make_train_test(18_000, 2_000, 5_000, 10_000, seed=1)
