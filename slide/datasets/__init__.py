"""Datasets: Extreme Classification Repository files, multi-label ARFF (Mulan, MEKA), Text8 corpora, and generated problems."""

from .arff import load_arff
from .catalogue import catalogue_amazon670k, catalogue_chunks, make_catalogue
from .convert import convert_xc
from .errors import DataFormatError, DatasetNotFoundError
from .synthetic import (AMAZON670K_SHAPE, Split, make_extreme_classification, make_train_test, small_default,
                        synthetic_amazon670k)
from .pieces import read_pieces
from .shards import ShardError, ShardFolder
from .stream import Stream
from .text8 import Text8Corpus, load_text8
from .xc_files import load_xc, parse_xc_bytes, write_xc

__all__ = ["AMAZON670K_SHAPE", "catalogue_amazon670k", "catalogue_chunks", "convert_xc", "read_pieces", "ShardError",
           "ShardFolder", "Stream", "DataFormatError", "DatasetNotFoundError", "Split", "Text8Corpus", "load_arff", "load_text8",
           "load_xc", "make_catalogue", "make_extreme_classification", "make_train_test", "parse_xc_bytes", "small_default",
           "synthetic_amazon670k", "write_xc"]
