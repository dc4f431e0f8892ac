"""A head that uses its cores: the SSH collection (and the judging of each node) shared out over worker
processes.

One Python process judges about a dozen real-size nodes a second under its global lock; at a thousand nodes
the head, not the nodes, sets the pace. :mod:`nccldiag.shards.pool` spreads the hosts over ``--workers``
processes (:mod:`nccldiag.shards.worker`, paramiko as ever), each with its share of ``--fanout``: names are
looked up and the node-to-node test planned once, in the parent; each worker connects, collects, writes each
node's outputs where the run keeps them, judges the node (:mod:`nccldiag.shards.judged`) and sends back only
what the run keeps of it. The parent writes the rest of the run in input order, as a single process does.
"""
