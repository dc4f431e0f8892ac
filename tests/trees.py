"""Fixture trees: a ``==> path <==`` dump (as the collection's ``_dump`` prints it) made into files again.

Used by the tests that run the collection script against a fixture root
(``NCCLDIAG_ROOT``), as node_exporter's tests unpack their ttar archives.
"""
from __future__ import annotations

import os
from typing import List

from nccldiag.areas.base import parse_dump


def write_tree(text: str, root: str) -> List[str]:
    """Recreate a dump as a directory tree under ``root`` (files, then symlinks); returns the paths written.

    A file's content is written without the blank line that ``_dump`` adds
    after each file, so that dumping the tree again gives the same text.
    """
    files, links = parse_dump(text)
    written = []
    for path, content in files.items():
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        body = content.rstrip("\n")
        with open(dest, "w", encoding="utf-8") as f:
            f.write(body + "\n" if body else "")
        written.append(dest)
    for path, target in links.items():
        dest = os.path.join(root, path.lstrip("/").rstrip("/"))
        if os.path.lexists(dest):
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        os.symlink(target.rstrip("/"), dest)
        written.append(dest)
    return written
