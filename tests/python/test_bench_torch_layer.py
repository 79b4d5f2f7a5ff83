"""benches.torch_layer's ExtremeOutput LSH overrides (--extreme-lsh): parsed and checked as
`slide train --set lsh.KEY=VALUE` is, applied over the batch mode's settings, and named in the table."""

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))

from benches.torch_layer.__main__ import lsh_overrides  # noqa: E402


def test_overrides_are_parsed_and_checked_as_set_is():
    assert lsh_overrides(["l=16", "batch_active=512", "family=dwta"]) == {"l": 16, "batch_active": 512,
                                                                          "family": "dwta"}
    assert lsh_overrides([]) == {}
    with pytest.raises(ValueError, match="lsh.tables"):
        lsh_overrides(["tables=3"])
    with pytest.raises(ValueError, match="lsh.l"):
        lsh_overrides(["l=0"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        lsh_overrides(["l"])


def test_the_extreme_head_takes_the_overrides_over_the_batch_modes_settings():
    pytest.importorskip("torch")
    from benches.torch_layer.systems import EncoderSystem
    from slide.modes import MODES

    rng = np.random.default_rng(0)
    data = {"Xtr": sp.random(64, 30, density=0.2, format="csr", random_state=1, dtype=np.float32),
            "Ytr": sp.csr_matrix((np.ones(64, np.float32), (np.arange(64), rng.integers(0, 40, 64))), shape=(64, 40))}
    mode = vars(MODES["batch"].lsh_config())
    default = EncoderSystem(data, "extreme", 1, 16, 1e-3).layer._settings.lsh
    assert default == mode
    changed = EncoderSystem(data, "extreme", 1, 16, 1e-3, lsh={"l": 16, "batch_active": 64}).layer._settings.lsh
    assert changed == {**mode, "l": 16, "batch_active": 64}


def test_the_table_names_the_overrides():
    from benches.tables.baselines import torch_layer

    result = json.loads((ROOT / "benches" / "results" / "torch_layer.json").read_text())
    plain = copy.deepcopy(result)
    plain["config"]["extreme_lsh"] = {}
    assert "over the batch mode's" not in torch_layer(plain)
    changed = copy.deepcopy(result)
    changed["config"]["extreme_lsh"] = {"l": 16, "batch_active": 512}
    text = torch_layer(changed)
    assert "ExtremeOutput's LSH over the batch mode's: l=16, batch_active=512; " in text
