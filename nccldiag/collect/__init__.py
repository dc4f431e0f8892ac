"""Gathering raw outputs: the collection script, its sections, and bundles."""
