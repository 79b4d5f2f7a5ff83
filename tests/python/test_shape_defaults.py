"""Settings from the data's shape: dense output up to 8,192 labels, the batch-shared LSH mode above,
each said when `slide train` picks it for a user's files."""

import json

import pytest

from slide import Network
from slide.datasets.registry import BATCH_PRESET
from slide.epoch_average import first_averaged_epoch
from slide.label_tree import FEW_POINTS_LEAF_SIZE, FEW_POINTS_TREES, LEAF_SIZE
from slide.modes import MODES
from slide.prediction.methods import TREE_RESCORES_BELOW
from slide.shape_defaults import (DENSE_OUTPUT_MAX, DENSE_TIER_TREES, FIXED_TREE_WEIGHT, LARGE_OUTPUT_MIN_ACTIVE,
                                  LARGE_OUTPUT_PRESET, RERANK_MIN_LABELS, RERANK_SHORTLIST, SMALL_OUTPUT_PRESET,
                                  WIDE_INPUTS, preset_for_shape)


@pytest.mark.parametrize("labels, preset", [(159, SMALL_OUTPUT_PRESET), (DENSE_OUTPUT_MAX, SMALL_OUTPUT_PRESET),
                                            (DENSE_OUTPUT_MAX + 1, LARGE_OUTPUT_PRESET),
                                            (670_091, LARGE_OUTPUT_PRESET)])
def test_the_output_width_picks_the_preset(labels, preset):
    picked, why = preset_for_shape(1000, labels)
    assert {k: v for k, v in picked.items() if k not in ("rerank", "validation_split")} == \
        {k: v for k, v in preset.items() if k not in ("rerank", "validation_split")}
    assert f"{labels:,} labels" in why


@pytest.mark.parametrize("labels", [22, 159, RERANK_MIN_LABELS - 1, RERANK_MIN_LABELS, 598, DENSE_OUTPUT_MAX,
                                    DENSE_OUTPUT_MAX + 1])
def test_the_reranker_is_on_from_a_few_hundred_labels_with_points_held_out_for_its_weight(labels):
    picked, why = preset_for_shape(1000, labels, 20_000)
    if labels < RERANK_MIN_LABELS:
        assert not picked.get("rerank") and not picked.get("validation_split") and "re-ranker" not in why
    else:
        assert picked["rerank"] == RERANK_SHORTLIST and picked["validation_split"] > 0
        assert f"re-ranker of the network's {RERANK_SHORTLIST} best labels" in why


def test_large_outputs_train_in_the_batch_shared_mode():
    import slide

    lsh = slide.LSHConfig(**LARGE_OUTPUT_PRESET["lsh"])
    assert lsh.batch_active > 1 and lsh.min_active >= lsh.batch_active  # LSH candidates, topped up uniformly
    # fewer uniform negatives than the batch mode's own: the fused ranking did not need them
    assert lsh.min_active == LARGE_OUTPUT_MIN_ACTIVE < MODES["batch"].lsh["min_active"]
    assert {k: v for k, v in LARGE_OUTPUT_PRESET["lsh"].items() if k != "min_active"} == \
        {k: v for k, v in BATCH_PRESET["lsh"].items() if k != "min_active"}
    assert not LARGE_OUTPUT_PRESET.get("dense") and LARGE_OUTPUT_PRESET["epochs"] > 1


def test_cli_says_it_picked_the_batch_shared_mode_for_many_labels(tmp_path, capsys):
    from slide.cli import main
    from slide.datasets import make_catalogue, write_xc

    data = make_catalogue(300, 500, DENSE_OUTPUT_MAX + 808, avg_words=20, seed=0)
    write_xc(tmp_path / "train.txt", data.X[:250], data.Y[:250])
    write_xc(tmp_path / "test.txt", data.X[250:], data.Y[250:])
    code = main(["train", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                 "--epochs", "1", "--out", str(tmp_path / "run"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "settings from the data's shape: 9,000 labels > 8,192: LSH-sampled output in the batch-shared mode" in out
    assert "batch_active=1024" in out.split("Network(")[1]
    assert "uniform negatives up to 3,000)" in out
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["lsh"]["min_active"] == LARGE_OUTPUT_MIN_ACTIVE == 3000
    assert config["early_stopping"] == LARGE_OUTPUT_PRESET["early_stopping"]
    assert config["averaging"] == LARGE_OUTPUT_PRESET["averaging"] == "swa"
    assert config["monitor"] == LARGE_OUTPUT_PRESET["monitor"] == "nDCG@5"
    assert config["network"]["learning_rate"] == LARGE_OUTPUT_PRESET["learning_rate"]
    assert config["network"]["rerank"] == LARGE_OUTPUT_PRESET["rerank"] > 0
    # 250 points over 9,000 labels: few points a label, so two trees (FEW_POINTS_TREES) with leaves
    # of 100 (FEW_POINTS_LEAF_SIZE)
    assert config["network"]["label_tree"] == FEW_POINTS_LEAF_SIZE != LARGE_OUTPUT_PRESET["label_tree"]
    assert config["network"]["label_trees"] == FEW_POINTS_TREES == 2
    assert ("then 2 label trees averaged, of at most 100 labels a leaf, whose own classifiers re-score in the "
            "re-ranker's place (1.1 training points a label < 5)") in out
    assert config["network"]["output_loss"] == "softmax"  # the suite did not confirm the decoupled loss
    assert "validation nDCG@5 " in out.split("epoch 1:")[1]  # the epoch judged by the preset's monitor
    # Between the last epoch and the test, the run says what it is doing and then what it took.
    assert ("after the last epoch: keeping the training points for the vote; training the re-ranker (each "
            "label's squared hinge solved on each point's 100 best labels by the network, found by a scan of its "
            "9,000 outputs with BF16 products where the CPU has AVX-512 BF16); training 2 label trees, averaged (at "
            "most 100 labels a leaf; where the labels have fewer than 5 points each, their classifiers re-score in "
            "the re-ranker's place)") in out
    assert "vote and re-ranker" in out.split("time: ")[1]
    # 250 points over 9,000 labels: few points a label, so the tree's classifiers re-score in the
    # re-ranker's place (slide.prediction.methods.TREE_RESCORES_BELOW)
    saved = Network.load(tmp_path / "run" / "model.npz")
    assert saved.reranker is None and saved.tree is not None and len(saved.tree.trees) == 2
    assert "predictions re-score each candidate with the label tree's per-label classifiers" in out
    assert "predictions add the label tree's log-probability" in out


@pytest.mark.parametrize("points_a_label, leaves", [(None, LEAF_SIZE), (1.0, FEW_POINTS_LEAF_SIZE),
                                                    (3.84, FEW_POINTS_LEAF_SIZE), (TREE_RESCORES_BELOW, LEAF_SIZE),
                                                    (6.88, LEAF_SIZE)])
def test_few_points_a_label_get_leaves_of_100_where_the_tree_re_scores_in_the_re_rankers_place(points_a_label,
                                                                                                leaves):
    """Below TREE_RESCORES_BELOW points a label (debian-rdeps' 3.8) the tree's own classifiers
    re-score the candidates, and leaves of 100 give each more points to learn from; from there on
    (debian-deps' 6.9) the re-ranker re-scores, and leaves of 32 cost half the time. A shape
    whose label counts are not known (a stream) keeps 32. Below 8,192 labels there is no tree."""
    picked, why = preset_for_shape(1000, 50_000, 10_000, points_a_label)
    assert picked["label_tree"] == leaves and picked["rerank"] == RERANK_SHORTLIST
    few = leaves == FEW_POINTS_LEAF_SIZE
    assert picked.get("label_trees", 1) == (FEW_POINTS_TREES if few else 1)
    assert (f"{FEW_POINTS_TREES} label trees averaged, of at most {leaves} labels a leaf" if few else
            f"a label tree of at most {leaves} labels a leaf") in why
    assert ("own classifiers re-score in the re-ranker's place" in why) == (leaves == FEW_POINTS_LEAF_SIZE)
    assert ("a re-ranker of the network's" in why) == (leaves == LEAF_SIZE)
    assert not preset_for_shape(1000, 5_000, 10_000, points_a_label)[0].get("label_tree")


@pytest.mark.parametrize("features, labels, points_a_label, leaves", [
    (WIDE_INPUTS, RERANK_MIN_LABELS, 140.0, LEAF_SIZE), (22_060, 598, None, LEAF_SIZE),
    (22_060, 598, 2.0, FEW_POINTS_LEAF_SIZE), (WIDE_INPUTS - 1, 598, 140.0, None), (500, 983, 300.0, None),
    (22_060, DENSE_OUTPUT_MAX, 140.0, LEAF_SIZE)])
def test_wide_inputs_get_the_label_tree_in_the_dense_tier_where_weights_are_picked(features, labels, points_a_label,
                                                                                    leaves):
    """From RERANK_MIN_LABELS labels (held-out points pick the weights) and WIDE_INPUTS features
    (debian-tags' 22,060 gained, Delicious' and Corel5k's 500 lost), the dense tier trains
    DENSE_TIER_TREES trees too (omikuji's three), its leaves by the same rule as above 8,192 labels
    (where there are few points a label, FEW_POINTS_TREES of leaves of 100)."""
    picked, why = preset_for_shape(features, labels, 20_000, points_a_label)
    assert picked.get("dense") and picked.get("label_tree") == leaves
    if leaves is None:
        assert "label tree" not in why
        return
    assert picked["rerank"] == RERANK_SHORTLIST and picked["validation_split"] > 0
    trees = FEW_POINTS_TREES if leaves == FEW_POINTS_LEAF_SIZE else DENSE_TIER_TREES
    assert picked["label_trees"] == trees and DENSE_TIER_TREES == 3
    assert f"{trees} label trees averaged, of at most {leaves} labels a leaf" in why
    assert f"({features:,} features >= {WIDE_INPUTS:,}), their weights picked on 5% of the points held out" in why
    assert ("own classifiers re-score in the re-ranker's place" in why) == (leaves == FEW_POINTS_LEAF_SIZE)


@pytest.mark.parametrize("features, labels, points_a_label, tree", [
    (WIDE_INPUTS, RERANK_MIN_LABELS - 1, 9.0, True), (1_449, 45, 9.3, True), (1_836, 159, 2.0, True),
    (22_060, 2, None, True), (WIDE_INPUTS - 1, 53, 72.0, False), (500, 22, 2_000.0, False)])
def test_wide_inputs_get_the_label_tree_at_a_fixed_weight_below_the_re_rankers_labels(features, labels, points_a_label,
                                                                                      tree):
    """Below RERANK_MIN_LABELS no points are held out to pick weights, so from WIDE_INPUTS features
    (Medical's 1,449, Bibtex's 1,836) the dense tier trains one tree of leaves of LEAF_SIZE at
    FIXED_TREE_WEIGHT, whatever its points a label (there is no re-ranker for the few-points trees to
    re-score in the place of); Enron's 1,001 and TMC2007's 500 features train none."""
    picked, why = preset_for_shape(features, labels, 5_000, points_a_label)
    assert picked.get("dense") and "rerank" not in picked and "validation_split" not in picked
    if not tree:
        assert not picked.get("label_tree") and "tree_weight" not in picked and "label tree" not in why
        return
    assert picked["label_tree"] == LEAF_SIZE and picked.get("label_trees", 1) == 1
    assert picked["tree_weight"] == FIXED_TREE_WEIGHT == 2.0
    assert (f"then a label tree of at most {LEAF_SIZE} labels a leaf ({features:,} features >= {WIDE_INPUTS:,}) "
            f"at weight 2 (no points held out to pick it)") in why


def _train_on_wide_inputs(tmp_path, points: int, labels: int, test_points: int, *flags: str) -> tuple[int, str]:
    """`slide train` with no flags but `flags` on a generated problem of one label a point over
    WIDE_INPUTS + 76 features (each label's own words): (exit code, what it printed)."""
    import contextlib
    import io

    import numpy as np
    import scipy.sparse as sp
    from slide.cli import main
    from slide.datasets import write_xc

    rng = np.random.default_rng(0)
    truth = rng.integers(0, labels, size=points)
    span = max(4, 1000 // labels)  # each label's words
    words = (truth[:, None] * span + rng.integers(0, span, size=(points, 6))) % (WIDE_INPUTS + 76)
    X = sp.csr_matrix((np.ones(words.size, np.float32), (np.repeat(np.arange(points), 6), words.ravel())),
                      shape=(points, WIDE_INPUTS + 76))
    Y = sp.csr_matrix((np.ones(points, np.float32), (np.arange(points), truth)), shape=(points, labels))
    write_xc(tmp_path / "train.txt", X[:-test_points], Y[:-test_points])
    write_xc(tmp_path / "test.txt", X[-test_points:], Y[-test_points:])
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["train", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                     "--out", str(tmp_path / "run"), "--overwrite", "--quiet", *flags])
    return code, out.getvalue()


def test_cli_trains_the_label_tree_at_its_fixed_weight_below_the_re_rankers_labels(tmp_path):
    code, out = _train_on_wide_inputs(tmp_path, 300, 40, 50)
    assert code == 0
    assert "40 labels <= 8,192: dense output" in out and "(1,100 features >= 1,024) at weight 2" in out
    saved = Network.load(tmp_path / "run" / "model.npz")
    assert saved.mode == "dense" and saved.tree is not None and saved.label_tree == LEAF_SIZE
    assert saved.tree_weight == FIXED_TREE_WEIGHT and saved.reranker is None
    code, _ = _train_on_wide_inputs(tmp_path, 300, 40, 50, "--tree-weight", "0.5")
    assert code == 0 and Network.load(tmp_path / "run" / "model.npz").tree_weight == 0.5


def test_cli_trains_the_label_tree_beside_a_dense_output_over_wide_inputs(tmp_path):
    code, out = _train_on_wide_inputs(tmp_path, 400, 300, 60)
    assert code == 0
    assert "300 labels <= 8,192: dense output" in out and "(1,100 features >= 1,024)" in out
    saved = Network.load(tmp_path / "run" / "model.npz")
    assert saved.mode == "dense" and saved.tree is not None and saved.label_tree > 0
    assert "label tree" in out.split("after the last epoch:")[1].split("\n")[0]


def test_the_cli_counts_the_training_points_a_label(tmp_path):
    """What `slide train` hands the shape's preset: the mean points a label over the labels that
    have any, of the points it trains on (after the held-out ones are set aside), in memory or in
    a stream of one shard (a stream of several trains no tree)."""
    import numpy as np
    import scipy.sparse as sp
    from slide.cli.sources import resolve
    from slide.datasets import write_xc

    X = sp.random(40, 30, density=0.2, format="csr", random_state=0, dtype=np.float32)
    rows = [[i % 4] + ([10 + i % 10] if i < 20 else []) for i in range(40)]  # labels 0-3: 10 points, 10-19: 2
    Y = sp.csr_matrix((np.ones(60, np.float32), [j for r in rows for j in r], np.cumsum([0] + [len(r) for r in rows])),
                      shape=(40, 50))
    write_xc(tmp_path / "train.txt", X, Y)
    write_xc(tmp_path / "test.txt", X[:5], Y[:5])
    source = resolve({"train_file": str(tmp_path / "train.txt"), "test_file": str(tmp_path / "test.txt"),
                      "validation_split": 0.0})
    assert source.points_a_label == pytest.approx(60 / 14)  # 14 labels with points of 50
    held = resolve({"train_file": str(tmp_path / "train.txt"), "test_file": str(tmp_path / "test.txt"),
                    "validation_split": 0.25})
    counts = np.bincount(held.memory.Y.indices, minlength=50)
    assert held.points_a_label == pytest.approx(counts.sum() / np.count_nonzero(counts))
    # A stream of one shard trains the tree as data in memory does, so it is counted too
    streamed = resolve({"train_file": str(tmp_path / "train.txt"), "test_file": str(tmp_path / "test.txt"),
                        "validation_split": 0.0, "stream": True})
    assert streamed.memory.holds_every_point and streamed.points_a_label == pytest.approx(60 / 14)


@pytest.mark.parametrize("points", [1, 15, 333, 1_123, 4_880, 12_920, 21_519, 10**7])
def test_dense_output_runs_take_enough_steps_at_a_batch_that_fits_the_data(points):
    from slide.shape_defaults import POINTS_PER_BATCH, SMALL_BATCH, SMALL_EPOCHS, STEPS_WANTED, small_output_schedule

    batch, epochs = small_output_schedule(points)
    assert SMALL_BATCH[0] <= batch <= SMALL_BATCH[1] and batch & (batch - 1) == 0
    assert SMALL_EPOCHS[0] <= epochs <= SMALL_EPOCHS[1]
    assert batch <= max(SMALL_BATCH[0], points // POINTS_PER_BATCH)
    steps = epochs * -(-points // batch)
    assert steps >= STEPS_WANTED or epochs == SMALL_EPOCHS[1]  # the step floor, unless the epoch cap binds first
    picked, why = preset_for_shape(100, 50, points)
    assert (picked["batch_size"], picked["epochs"]) == (batch, epochs)
    assert f"batch {batch} for {epochs} epochs" in why


@pytest.mark.parametrize("points", [1, 255, 8_000, 24_000, 25_586, 40_839, 490_449, 10**7])
def test_large_output_runs_take_enough_steps_too(points):
    from slide.shape_defaults import LARGE_EPOCHS, LARGE_STEPS_WANTED, large_output_epochs

    batch = LARGE_OUTPUT_PRESET["batch_size"]
    epochs = large_output_epochs(points, batch)
    assert LARGE_EPOCHS == (LARGE_OUTPUT_PRESET["epochs"], 10) and LARGE_EPOCHS[0] <= epochs <= LARGE_EPOCHS[1]
    steps = -(-points // batch)
    assert epochs * steps >= LARGE_STEPS_WANTED or epochs == LARGE_EPOCHS[1]  # unless the cap binds first
    assert epochs == LARGE_EPOCHS[0] or (epochs - 1) * steps < LARGE_STEPS_WANTED  # no epoch more than needed
    picked, why = preset_for_shape(100, DENSE_OUTPUT_MAX + 1, points)
    assert picked["epochs"] == epochs and f"batch {batch} for up to {epochs} epochs" in why
    assert preset_for_shape(100, DENSE_OUTPUT_MAX + 1)[0]["epochs"] == LARGE_OUTPUT_PRESET["epochs"]  # unknown size
    # debian-rdeps (25,586 points after its hold-out: 100 steps an epoch) takes 8; debian-deps 6
    assert {25_586: 8, 40_839: 6, 490_449: 6}.get(points, epochs) == epochs


def test_medical_sized_data_is_no_longer_trained_for_a_handful_of_steps():
    """333 points at batch 128 were 3 steps an epoch: 60 steps in all, P@1 0.51 on Medical; at
    batch 16, 200 steps at Adam's 1e-2 reach 0.83 (600 at 3e-3 reached 0.82)."""
    from slide.shape_defaults import SMALL_OUTPUT_PRESET, small_output_schedule

    batch, epochs = small_output_schedule(333)
    assert batch == 16 and epochs * -(-333 // batch) >= 200
    assert SMALL_OUTPUT_PRESET["learning_rate"] == 1e-2


def test_large_outputs_stop_early_on_their_validation_split():
    assert LARGE_OUTPUT_PRESET["validation_split"] > 0 and LARGE_OUTPUT_PRESET["early_stopping"] >= 1
    picked, why = preset_for_shape(1000, 50_000, 10_000)
    assert "stopping after 2 without a better validation nDCG@5" in why
    first = first_averaged_epoch(picked["epochs"])  # 10 epochs for 10,000 points (large_output_epochs)
    assert picked["epochs"] == 10 and first == picked["epochs"] // 4 + 1 > 1
    assert first_averaged_epoch(LARGE_OUTPUT_PRESET["epochs"]) == LARGE_OUTPUT_PRESET["epochs"] // 4 + 1 > 1
    assert f"the mean of the epochs since epoch {first} beside each epoch's own (swa)" in why


def test_held_out_settings_apply_only_with_held_out_points():
    """early stopping and averaging judge epochs on held-out points: a preset's apply to a run
    that holds some out, and to no other (slide train and SlideClassifier read the one helper)."""
    from slide.shape_defaults import LARGE_OUTPUT_PRESET, SMALL_OUTPUT_PRESET, held_out_settings

    assert held_out_settings(LARGE_OUTPUT_PRESET, 0.02) == {"early_stopping": 2, "averaging": "swa",
                                                            "monitor": "nDCG@5"}
    assert held_out_settings(LARGE_OUTPUT_PRESET, 0.0) == {} == held_out_settings(LARGE_OUTPUT_PRESET, None)
    assert held_out_settings(SMALL_OUTPUT_PRESET, 0.05) == {}
