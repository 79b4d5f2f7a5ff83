import os

import pytest

# A training step whose forward pass is below slide's parallel work floor runs on one thread
# (slide/parallel_work_floor.py), and every problem in these tests is that small: without this the
# threaded training paths would go untested. test_step_team.py checks the floor itself. Subprocesses
# (the CLI tests) inherit it.
os.environ.setdefault("SLIDE_PARALLEL_WORK_FLOOR", "0")


@pytest.fixture(scope="session")
def small_problem():
    """A learnable problem: 5,000 features, 10,000 labels, 20,000 points (18k train, 2k test)."""
    from slide.datasets import make_train_test

    return make_train_test(18_000, 2_000, 5_000, 10_000, seed=1)
