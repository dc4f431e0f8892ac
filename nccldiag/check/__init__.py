"""The check side's judge: raw nodes -> findings -> one report.

``engine`` runs every area's parse and judge on each node and adds the checks
that are not one node's own: the SSH reachability and node-to-node test (the
``ssh`` area, with ``areas/mesh``) and the node that differs from the others
(``consistency``).
"""
