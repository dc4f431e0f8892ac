"""NCCL logs: the parser (text -> facts) and the checks on those facts, used by ``log`` and ``probe``."""
