"""The model: a network's configuration and its engine handle, and what every layer above it
shares (argument checks, the batch loop, the training errors, validated training data). The
training loop (`slide.training`), prediction with the neighbours' vote (`slide.prediction`), MPI
(`slide.distributed`) and persistence (`slide.model_file`) are built on it, never the reverse."""
