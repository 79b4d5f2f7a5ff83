"""slide's OpenMP runtime loads with a short spin before sleeping (slide.openmp_wait), unless the
user chose a wait policy; the process's environment is left as it was. libgomp prints the settings
it loaded with when OMP_DISPLAY_ENV is set, so these read them from there."""

import os
import subprocess
import sys

from slide.openmp_wait import SPIN_COUNT, USER_SETTINGS

REPORT = "import os, slide; print('after import:', os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"


def import_slide(tmp_path, **settings):
    env = {k: v for k, v in os.environ.items() if k not in USER_SETTINGS}
    r = subprocess.run([sys.executable, "-c", REPORT], env={**env, "OMP_DISPLAY_ENV": "verbose", **settings},
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout + r.stderr


def test_the_engine_loads_with_slides_spin_count_and_the_environment_is_put_back(tmp_path):
    out = import_slide(tmp_path)
    assert f"GOMP_SPINCOUNT = '{SPIN_COUNT}'" in out
    assert "after import: None None" in out


def test_a_users_spin_count_is_kept(tmp_path):
    out = import_slide(tmp_path, GOMP_SPINCOUNT="77")
    assert "GOMP_SPINCOUNT = '77'" in out
    assert "after import: 77 None" in out


def test_a_users_wait_policy_is_kept_and_the_spin_count_left_alone(tmp_path):
    out = import_slide(tmp_path, OMP_WAIT_POLICY="active")
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in out
    assert f"GOMP_SPINCOUNT = '{SPIN_COUNT}'" not in out
    assert "after import: None active" in out
