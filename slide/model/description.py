"""A network described: its constructor arguments (what model files and run folders store) and
the one line `repr` prints."""

from __future__ import annotations

from typing import Any


def config_of(net: Any) -> dict[str, Any]:
    """`net`'s constructor arguments, JSON-serialisable (callable schedules are not)."""
    if callable(net.lr_schedule):
        raise ValueError("a network with a callable lr_schedule cannot be serialised; use a named schedule")
    names = ("input_dim", "output_dim", "optimizer", "learning_rate", "lr_schedule", "lr_warmup",
             "lr_schedule_steps", "beta1", "beta2", "eps", "input_norm", "input_dropout", "output_loss", "precision",
             "matmul", "neighbours", "neighbour_weight", "neighbour_space", "rerank", "rerank_weight", "label_tree", "label_trees", "tree_weight",
             "fusion_weights", "threads", "seed",
             "sparse_exchange")
    config = {name: getattr(net, name) for name in names}
    config.update(hidden=list(net.hidden), lsh=net.lsh.to_dict() if net.lsh else None,
                  hidden_lsh=[c.to_dict() if c else None for c in net.hidden_lsh])
    return config


def describe(net: Any) -> str:
    """One line: the layers, how the output trains, the optimizer, precision, threads and rank."""
    matmul = ", bf16 matmul" if net.matmul == "bf16" else ""
    out = f"sampled by {net.lsh.family.upper()} (K={net.lsh.k}, L={net.lsh.l})" if net.lsh else "dense"
    if net.mode == "batch":
        late = (f", {net.lsh.late_min_active} after {net.lsh.late_after:,} samples"
                if net.lsh.late_min_active > net.lsh.min_active else "")
        out += (f" per batch (batch_active={net.lsh.batch_active}, "
                f"min_active={net.lsh.min_active}{late})")
    elif net.mode == "sample":
        out += " per sample"
    ranks = "" if net.comm is None else (f", rank {net.comm.rank} of {net.comm.size} holding outputs "
                                          f"[{net.output_shard[0]}, {sum(net.output_shard)})")
    return (f"Network({net.input_dim} -> {' -> '.join(map(str, net.hidden))} -> {net.output_dim}, "
            f"output {out}, {net.optimizer}, lr={net.learning_rate:g}, {net.precision}{matmul}, threads={net.threads}"
            f"{ranks})")
