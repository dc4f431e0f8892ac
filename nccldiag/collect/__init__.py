"""Gathering raw outputs: the collection script, its sections, and bundles."""

# the ways a check's collection reaches its nodes: SSH from here, or one Slurm step on every node
TRANSPORTS = ("ssh", "srun")
