"""Collective probes: plan, the per-rank worker, its collectives, and reading their results."""
