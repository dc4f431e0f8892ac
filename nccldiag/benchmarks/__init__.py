"""Outputs of the benchmarks admins run by hand: nccl-tests (``all_reduce_perf`` ...) and perftest (``ib_write_bw`` ...).

Pure parsers (text -> facts), one module per tool. ``nccldiag log`` reads
these outputs wherever they appear in the files it is given (a job's output
holds NCCL's lines and nccl-tests' table together), and the diagnosis
compares their bus bandwidth with the expected figure.
"""
