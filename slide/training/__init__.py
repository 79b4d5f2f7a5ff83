"""Training: one loop (`loop.TrainingLoop`) under `Network.fit`, `Network.partial_fit` and the
`slide train` run loop (`slide.runs`): epochs of segments of rows, a piece at a time, with the
position it has reached always exact (so a run can checkpoint and resume anywhere). Validation,
early stopping and callbacks are built around it here; run folders and checkpoints in `slide.runs`."""
