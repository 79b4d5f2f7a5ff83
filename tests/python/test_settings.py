"""The settings table is the one place a default, a range or a meaning is written: the C++ structs,
the Python constructors, the CLI, run.toml and the documentation's Settings page are held to it here."""

import argparse
import inspect
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

import slide
from slide import _core
from slide.cli import build_parser
from slide.cli.train import apply_preset, resolve_config
from slide.modes import DEFAULT_MODE, MODES, mode_of
from slide.settings import LSH, NETWORK, RUN, SKIPGRAM, TEXT8, defaults, markdown_table, parse_assignment

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def _core_value(config, name):
    value = getattr(config, "policy" if name == "bucket_policy" else name)
    return value.name if hasattr(value, "name") else value


def test_the_cpp_lsh_defaults_are_the_tables():
    core = _core.LshConfig()
    for name, default in defaults(LSH).items():
        got = _core_value(core, name)
        if isinstance(default, float):
            assert np.float32(got) == np.float32(default), name
        else:
            assert got == default, name


def test_the_cpp_optimizer_defaults_are_the_tables():
    core = _core.OptimizerConfig()
    assert core.kind.name == NETWORK["optimizer"].default
    for name in ("beta1", "beta2", "eps"):
        assert np.float32(getattr(core, name)) == np.float32(NETWORK[name].default), name


def test_the_cpp_output_loss_default_is_the_tables():
    assert _core.NetworkConfig().output_loss.name == NETWORK["output_loss"].default


def test_lsh_config_has_exactly_the_tables_fields_and_defaults():
    assert [f.name for f in fields(slide.LSHConfig)] == list(LSH)
    assert slide.LSHConfig().to_dict() == defaults(LSH)


def test_the_network_constructor_defaults_are_the_tables():
    params = inspect.signature(slide.Network).parameters
    for name, default in defaults(NETWORK).items():
        if name == "mode":  # None: the default mode unless `lsh` names another
            assert params["mode"].default is None
            continue
        got = params[name].default
        assert (list(got) if isinstance(got, tuple) else got) == default, name


def test_the_skipgram_constructor_defaults_are_the_tables_and_the_text8_presets():
    from slide.datasets.registry import DATASETS

    params = inspect.signature(slide.SkipGram).parameters
    for name, default in defaults(SKIPGRAM).items():
        assert params[name].default == default, name
    for name in ("window", "subsample"):
        assert params[name].default == DATASETS["text8"].preset["text8"][name], name


def test_an_unconfigured_network_trains_in_the_default_mode():
    net = slide.Network(30, 40, hidden=8, threads=1)
    assert DEFAULT_MODE == "batch" and net.mode == DEFAULT_MODE
    assert net.lsh == MODES[DEFAULT_MODE].lsh_config()


@pytest.mark.parametrize("table", [RUN, NETWORK, LSH, TEXT8])
def test_every_range_in_the_table_is_enforced(table):
    for s in table.values():
        if s.kind not in ("int", "float"):
            continue
        if s.minimum is not None:
            low = s.minimum if s.above else (s.minimum - 1 if s.kind == "int" else s.minimum - 1e-3)
            with pytest.raises(ValueError, match=f"{s.name} must be >"):
                s.check(int(low) if s.kind == "int" else low)
        if s.maximum is not None:
            with pytest.raises(ValueError, match=f"{s.name} must be <="):
                s.check(int(s.maximum) + 1 if s.kind == "int" else s.maximum * 1.5)
        if s.default is not None:
            assert s.check(s.default) == s.default


def test_lsh_config_checks_the_tables_ranges_and_choices():
    with pytest.raises(ValueError, match="LSHConfig.l must be <= 4,096"):
        slide.LSHConfig(l=4097)
    with pytest.raises(ValueError, match="LSHConfig.simhash_density must be > 0"):
        slide.LSHConfig(simhash_density=0.0)
    with pytest.raises(ValueError, match="LSHConfig.bucket_policy must be one of fifo, reservoir"):
        slide.LSHConfig(bucket_policy="lru")


@pytest.mark.parametrize("section, table", [("", RUN), ("network", NETWORK), ("lsh", LSH), ("text8", TEXT8),
                                            ("skipgram", SKIPGRAM)])
def test_the_settings_page_tables_are_rendered_from_the_table(section, table):
    assert markdown_table(table, section) in SETTINGS_PAGE.read_text(), \
        f"docs/settings.md's {section or 'run'} settings table is stale: paste `python -m slide.settings` into it"


def test_every_flag_of_the_table_is_a_flag_of_slide_train():
    train = next(a for a in build_parser()._subparsers._group_actions[0].choices.values()
                 if a.prog.endswith("train"))
    options = {o for action in train._actions for o in action.option_strings}
    wanted = {s.flag for table in (RUN, NETWORK) for s in table.values() if s.flag}
    assert wanted <= options and "--set" in options


@pytest.mark.parametrize("text, parsed", [
    ("lsh.k=4", ("lsh", "k", 4)),
    ("lsh.family=wta", ("lsh", "family", "wta")),
    ('lsh.family="simhash"', ("lsh", "family", "simhash")),
    ("network.hidden=[256, 128]", ("network", "hidden", [256, 128])),
    ("network.learning_rate=3e-4", ("network", "learning_rate", 3e-4)),
    ("network.dense=true", ("network", "dense", True)),
    ("epochs = 3", ("", "epochs", 3)),
    ("text8.window=5", ("text8", "window", 5)),
])
def test_set_assignments_parse_as_toml_values(text, parsed):
    assert parse_assignment(text) == parsed


@pytest.mark.parametrize("text, message", [
    ("lsh.k", "expected KEY=VALUE"),
    ("=4", "expected KEY=VALUE"),
    ("lsh.kk=4", "unknown setting 'lsh.kk'"),
    ("hash.k=4", "unknown section 'hash'"),
    ("lsh.k=four", "--set lsh.k must be an integer"),
    ("lsh.k=0", "--set lsh.k must be >= 1"),
    ("network.mode=fast", "--set network.mode must be one of batch, sample, dense"),
    ("epochs=1.5", "--set epochs must be an integer"),
])
def test_bad_set_assignments_name_the_setting(text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        parse_assignment(text)


def _resolved(*argv):
    args = build_parser().parse_args(["train", *argv])
    return resolve_config(args)


def test_set_reaches_the_run_configuration():
    cfg = _resolved("--set", "lsh.k=4", "--set", "network.hidden=[64]", "--set", "eval_samples=300")
    assert cfg["lsh"]["k"] == 4 and cfg["network"]["hidden"] == [64] and cfg["eval_samples"] == 300


def test_a_setting_given_by_flag_and_by_set_is_refused():
    with pytest.raises(ValueError, match="both set learning_rate"):
        _resolved("--lr", "0.1", "--set", "network.learning_rate=0.2")


@pytest.mark.parametrize("mode", list(MODES))
def test_cli_mode_sets_the_modes_lsh_settings_over_the_preset(mode):
    cfg = _resolved("--mode", mode, "--set", "lsh.l=20")
    assert cfg["network"]["mode"] == mode and cfg["lsh"]["l"] == 20
    if mode == "dense":
        assert cfg["network"]["dense"] is True
    else:
        lsh = slide.LSHConfig.from_dict(cfg["lsh"])
        assert mode_of(lsh) == mode
        assert all(getattr(lsh, k) == v for k, v in MODES[mode].lsh.items())


def test_cli_dense_and_another_mode_contradict():
    with pytest.raises(ValueError, match="contradict"):
        _resolved("--dense", "--mode", "batch")


def test_apply_preset_fills_unset_network_settings_from_the_table():
    cfg = {"network": {"learning_rate": 0.5}, "lsh": {}}
    apply_preset(cfg, dict(hidden=[32], learning_rate=1e-3, batch_size=64, epochs=2, lsh=dict(k=3)))
    expected = {k: v for k, v in defaults(NETWORK).items() if k != "mode"}
    assert cfg["network"] == {**expected, "dense": False, "hidden": [32], "learning_rate": 0.5}
    assert cfg["lsh"] == {"k": 3} and cfg["epochs"] == 2 and cfg["batch_size"] == 64


def test_sampled_hidden_layers_make_the_per_sample_mode_the_default():
    net = slide.Network(100, 50, hidden=(32, 64), hidden_lsh=[None, slide.LSHConfig(k=2, l=4)], threads=1)
    assert net.mode == "sample"
    with pytest.raises(ValueError, match="needs dense hidden layers"):
        slide.Network(100, 50, hidden=(32, 64), hidden_lsh=[None, slide.LSHConfig(k=2, l=4)], mode="batch",
                      threads=1)


def test_mode_names_and_lsh_settings_cannot_disagree():
    assert slide.Network(30, 40, hidden=8, mode="sample", threads=1).lsh.batch_active == 0
    assert slide.Network(30, 40, hidden=8, mode="dense", threads=1).lsh is None
    assert slide.Network(30, 40, hidden=8, lsh=None, threads=1).mode == "dense"
    assert slide.Network(30, 40, hidden=8, lsh=slide.LSHConfig(), threads=1).mode == "sample"
    batch = slide.Network(30, 40, hidden=8, mode="batch", lsh=MODES["batch"].lsh_config(k=3), threads=1)
    assert batch.mode == "batch" and batch.lsh.k == 3 and "per batch" in repr(batch)
    with pytest.raises(ValueError, match="mode='sample' contradicts"):
        slide.Network(30, 40, hidden=8, mode="sample", lsh=None, threads=1)
    with pytest.raises(ValueError, match="mode must be one of batch, sample, dense"):
        slide.Network(30, 40, hidden=8, mode="fast", threads=1)


def test_every_mode_trains():
    rng = np.random.default_rng(0)
    X = (rng.random((200, 30)) < 0.2).astype(np.float32)
    y = rng.integers(0, 40, 200)
    for mode in MODES:
        net = slide.Network(30, 40, hidden=16, mode=mode, threads=1, seed=0)
        history = net.fit(X, y, epochs=1, batch_size=32, progress=False)
        assert np.isfinite(history[0]["loss"]), mode


def test_the_fusion_weights_help_names_the_grids_training_picks_from():
    from slide import neighbours, reranker
    from slide.settings import NETWORK

    assert f"picks it from 0 to {max(neighbours.WEIGHTS):,g}" in NETWORK["neighbour_weight"].doc
    assert f"picks it from 0 to {max(reranker.WEIGHTS):,g}" in NETWORK["rerank_weight"].doc
