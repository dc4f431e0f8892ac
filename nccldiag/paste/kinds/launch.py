"""A launcher's command line with the number of nodes it starts the job on: ``torchrun --nnodes=2 ...``,
``python -m torch.distributed.launch --nnode=2 ...`` (its ``--nnodes`` taken by prefix, as argparse does),
``deepspeed --num_nodes 2``, ``accelerate launch --num_machines 2``, ``srun -N 2`` / ``--nodes=2``, ``sbatch`` and
``salloc`` alike. No area reads it: it is read and shown, and the number tells a job of several nodes from one of a
single node (:func:`nccldiag.diagnosis.signs.launch_nodes`), where nothing else in the paste does."""
from __future__ import annotations

from nccldiag.diagnosis.signs import launch_line
from nccldiag.paste.kinds.base import shown_only

NAME = "launch command"
WORDS = ("--nnode", "--num_nodes", "--num-nodes", "--num_machines", "--num-machines", "--nodes", "srun ", "sbatch ",
         "salloc ")
SOURCES = ()
CONTEXT = True
GAPS = 0
UP = False


def anchor(text: str) -> bool:
    return launch_line(text) is not None


member = anchor

sections = shown_only
