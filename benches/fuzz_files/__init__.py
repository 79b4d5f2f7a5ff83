"""Structure-aware fuzzing of model files, run folders, shard folders and skip-gram models (see __main__)."""
