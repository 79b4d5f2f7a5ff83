"""Datasets: generated extreme-classification problems (real-file loaders come with the data issue)."""

from .synthetic import (AMAZON670K_SHAPE, Split, make_extreme_classification, make_train_test, small_default,
                        synthetic_amazon670k)

__all__ = ["AMAZON670K_SHAPE", "Split", "make_extreme_classification", "make_train_test", "small_default",
           "synthetic_amazon670k"]
