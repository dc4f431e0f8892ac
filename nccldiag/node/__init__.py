"""Everything that runs on the nodes: the probe worker and its collectives, the P2P copy test.

These modules are staged onto nodes (or run there from an installed nccldiag)
and import the standard library and torch only, never the rest of nccldiag:
``tests/unit/test_node_package.py`` holds them to that.
"""
