"""Everything that runs on the nodes: the probe worker and its collectives, the P2P copy test.

These modules are staged onto nodes (or run there from an installed nccldiag)
and import the standard library and torch only, never the rest of nccldiag:
``tests/unit/test_node_package.py`` holds them to that.
"""

import os as _os


def node_program(name: str) -> str:
    """The source of ``nccldiag/node/<name>.py``, for ``python -c`` inside shell single quotes.

    Programs that run on nodes live here as files (read, linted and tested as
    code), not as strings inside the admin-side modules that send them.
    """
    path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), name + ".py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "'" in text:
        raise ValueError(f"{path}: holds a single quote; it travels inside shell single quotes")
    return text.strip()
