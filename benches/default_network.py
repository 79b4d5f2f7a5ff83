"""slide's default configuration for a problem's shape, built exactly as `slide train --train FILE
--test FILE` builds it (slide.shape_defaults' preset through the CLI's own apply_preset and
build_network), for the benchmarks that score "slide with no tuning flags"."""

from __future__ import annotations

from types import SimpleNamespace


def default_network(n_features: int, n_labels: int, threads: int, seed: int, train_points=None, **network):
    """(network, cfg, why): the network, the run settings the preset fills in (epochs,
    batch_size, validation_split) and the line slide train prints about the choice.
    `train_points` sizes a dense-output run's batch and epochs as slide train does; `network`
    settings (e.g. neighbours=0) override the preset's, as flags would."""
    from slide.cli.train import apply_preset, build_network
    from slide.shape_defaults import preset_for_shape

    preset, why = preset_for_shape(n_features, n_labels, train_points)
    cfg = {"network": dict(network), "lsh": {}, "seed": seed, "threads": threads}
    apply_preset(cfg, preset)
    net = build_network(cfg, SimpleNamespace(input_dim=n_features, output_dim=n_labels))
    return net, cfg, why
