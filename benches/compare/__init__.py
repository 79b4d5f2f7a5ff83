"""Side-by-side comparison of slide with the dense and sampled-softmax baselines (`python -m benches.compare`)."""
