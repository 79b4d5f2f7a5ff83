"""Prediction with the neighbours' vote: a network and a memory of training points, composed
(`fused.VotedNetwork`); the network alone ranks without either."""
