"""Slurm: node names and states, allocations, srun steps, and verdicts sent back as drains.

``nodes.py`` and ``verdicts.py`` are pure (text in, facts out; facts in,
actions out); ``commands.py`` builds every argv (pure, printed as is);
``client.py`` runs them, each bounded by a timeout, never through a shell.
"""
