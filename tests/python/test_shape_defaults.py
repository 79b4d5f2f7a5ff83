"""Settings from the data's shape: dense output up to 8,192 labels, the batch-shared LSH mode above,
each said when `slide train` picks it for a user's files."""

import pytest

from slide.shape_defaults import DENSE_OUTPUT_MAX, LARGE_OUTPUT_PRESET, SMALL_OUTPUT_PRESET, preset_for_shape


@pytest.mark.parametrize("labels, preset", [(159, SMALL_OUTPUT_PRESET), (DENSE_OUTPUT_MAX, SMALL_OUTPUT_PRESET),
                                            (DENSE_OUTPUT_MAX + 1, LARGE_OUTPUT_PRESET),
                                            (670_091, LARGE_OUTPUT_PRESET)])
def test_the_output_width_picks_the_preset(labels, preset):
    picked, why = preset_for_shape(1000, labels)
    assert picked is preset
    assert f"{labels:,} labels" in why


def test_large_outputs_train_in_the_batch_shared_mode():
    import slide

    lsh = slide.LSHConfig(**LARGE_OUTPUT_PRESET["lsh"])
    assert lsh.batch_active > 1 and lsh.min_active >= lsh.batch_active  # LSH candidates, topped up uniformly
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
