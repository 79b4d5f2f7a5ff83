"""Settings chosen from a problem's shape, for data slide has no preset for (`slide train --train
FILE --test FILE`). Measured on the real Bibtex (159 labels) and Delicious (983 labels) XC splits,
2 threads, exact P@1 on the test split (docs/benchmarks/index.md):

- Below DENSE_OUTPUT_MAX labels the full softmax is cheap and LSH only loses accuracy (Delicious,
  hidden 512: P@1 0.566 sampled against 0.654 dense), so the output layer is dense.
- A wide hidden layer learns more per epoch and over-fits sooner; dropping input features while
  training, L2-normalised rows and a cosine-decayed rate let 1,024 units train for 20 epochs
  without the decline (Bibtex 0.635, Delicious 0.667; SLIDE's 128-unit setting: 0.587 and 0.655).

Above DENSE_OUTPUT_MAX the output layer is LSH-sampled in the batch-shared mode, measured on
Amazon-670K-shaped catalogue data (100k training points, 670,091 labels; docs/benchmarks/catalogue.md, Amazon-670K-shaped
data as hard as the real thing): hidden 128 at Adam's 1e-3 for 20 epochs reaches P@1 0.219 in
300 s, where SLIDE's per-sample mode reaches 0.18 and its one-epoch preset 0.004. Faster learners
(hidden 256 at 1e-2 or 3e-3) peak early (0.17, 0.15) and then memorise the training set, whose tail
labels have one or two points each.
"""

from __future__ import annotations

from typing import Any

from .datasets.registry import BATCH_PRESET, SLIDE_PRESET

DENSE_OUTPUT_MAX = 8192

SMALL_OUTPUT_PRESET: dict[str, Any] = dict(
    hidden=[1024], learning_rate=1e-3, lr_schedule="cosine", batch_size=128, epochs=20, dense=True,
    input_norm="l2", input_dropout=0.3, neighbours=10, lsh=SLIDE_PRESET["lsh"])


LARGE_OUTPUT_PRESET: dict[str, Any] = BATCH_PRESET


def preset_for_shape(n_features: int, n_labels: int) -> tuple[dict[str, Any], str]:
    """(preset, why): the settings for a problem with this many features and labels, and a line
    that says what was picked and why."""
    if n_labels <= DENSE_OUTPUT_MAX:
        p = SMALL_OUTPUT_PRESET
        return p, (f"{n_labels:,} labels <= {DENSE_OUTPUT_MAX:,}: dense output, hidden {p['hidden'][0]}, "
                   f"L2-normalised inputs, input dropout {p['input_dropout']}, {p['epochs']} epochs with a "
                   f"{p['lr_schedule']} learning rate from {p['learning_rate']:g}")
    p = LARGE_OUTPUT_PRESET
    return p, (f"{n_labels:,} labels > {DENSE_OUTPUT_MAX:,}: LSH-sampled output in the batch-shared mode "
               f"(the batch's labels, its {p['lsh']['batch_active']:,} most frequent DWTA candidates, uniform "
               f"negatives up to {p['lsh']['min_active']:,}), hidden {p['hidden'][0]}, {p['epochs']} epochs at "
               f"learning rate {p['learning_rate']:g}")
