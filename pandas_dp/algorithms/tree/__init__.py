"""Hierarchical histograms: tree layout, branching factor, level budgets, release, inference, variances."""
