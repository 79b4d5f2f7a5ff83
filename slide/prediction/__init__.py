"""Prediction beyond the network alone: the neighbours' vote and the shortlist re-ranker, composed
with the network (`fused.VotedNetwork`) and offered on `Network` (`methods.FusedPrediction`)."""
