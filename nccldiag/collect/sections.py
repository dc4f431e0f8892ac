"""Raw outputs: splitting the collection script's output into sections (bundles on disk: :mod:`nccldiag.bundle`)."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from nccldiag import rx

MARK = rx.compile(r"^[0-9a-f]{8,64}$")


def new_mark() -> str:
    """A fresh value for ``NCCLDIAG_MARK``: the markers of one run, which no node output can guess."""
    import secrets

    return secrets.token_hex(8)


MAX_SECTIONS = 256  # sections read from one node's output when the script's own names are not given


def split_sections(text: str, mark: str = "", names: Optional[Sequence[str]] = None) -> tuple:
    """``(sections, rcs, truncated)`` from the collection script's stdout.

    Only markers with this run's ``mark`` count, and only the script's own
    source ``names`` (:func:`nccldiag.collect.script.source_names`), in the
    script's order: a begin marker for a name the script does not run, or
    for one at or before the last section opened, is text of the section it
    is in. So a node yields at most one section per source of the script,
    whatever it prints; without ``names``, names made of letters, digits and
    ``_`` are taken, at most :data:`MAX_SECTIONS`. A section whose end marker
    never came (the script was cut off) is kept with the text it had and
    flagged as truncated.
    """
    tag = f"@@nccldiag:{mark}:" if mark else "@@nccldiag:"
    begin_re = re.compile("^" + re.escape(tag) + r"begin ([A-Za-z0-9_]{1,64})@@$")
    end_re = re.compile("^" + re.escape(tag) + r"end ([A-Za-z0-9_]{1,64}) rc=(-?\d{1,4})@@$")
    place = {n: i for i, n in reversed(list(enumerate(names)))} if names is not None else None
    last = -1  # the place of the last section opened
    sections: Dict[str, str] = {}
    rcs: Dict[str, int] = {}
    current: Optional[str] = None
    buf: List[str] = []
    for line in text.splitlines():
        m = begin_re.match(line) if line.startswith(tag) else None
        if m and place is not None:
            at = place.get(m.group(1), -1)
            if at <= last:
                m = None
            else:
                last = at
        elif m and (m.group(1) in sections or m.group(1) == current or len(sections) >= MAX_SECTIONS):
            m = None
        if m:
            if current is not None:
                sections.setdefault(current, "\n".join(buf))
            current, buf = m.group(1), []
            continue
        m = end_re.match(line) if line.startswith(tag) else None
        if m and current == m.group(1):
            # the script prints a newline before the end marker
            if buf and buf[-1] == "":
                buf.pop()
            if current not in sections:
                sections[current] = "\n".join(buf) + ("\n" if buf else "")
                rcs[current] = int(m.group(2))
            current, buf = None, []
            continue
        if current is not None:
            buf.append(line)
    truncated = current is not None
    if truncated:
        sections.setdefault(current, "\n".join(buf))
    return sections, rcs, truncated
