"""``nccldiag isolate``: the bad node, link or network path, in a constant number of rounds of small jobs.

``pairing.py`` plans the rounds (pure), ``judge.py`` judges jobs, then
nodes and pairs (pure), and ``run.py`` runs each round's jobs with the
probe's launchers, runner and counters (:mod:`nccldiag.probe`).
"""
