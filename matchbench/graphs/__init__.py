"""Shared graph models and readers (bipartite CSR, weighted graph, Matrix Market, generators)."""
