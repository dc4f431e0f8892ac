"""What every kind of pasted output provides, and the helpers most of them share (pure).

A kind is one module under ``nccldiag/paste/kinds/`` (one per command's output, as an area is one module per
subject), named in ``KINDS`` (``paste/kinds/__init__.py``). It declares:

``NAME``        the kind's name, as the report shows it
``WORDS``       literal words, one of which is on the line a block of the kind is found by (its anchor): the text
                is searched for them first, and only the lines holding one are read
``SOURCES``     the collection sources (``areas/*.py``'s ``Source`` names) its blocks feed; empty for a kind no
                area judges (it is read and shown, not judged)
``anchor(text)``  whether a clean line is one a block of the kind is found by
``member(text)``  whether a clean line belongs to a block of the kind (the anchor's neighbours, up and down)
``sections(lines, context)``  the block's clean lines -> ``{source: text}``: what the areas read, exactly as a
                bundle holds that source; ``{}`` when the lines are not the kind's after all (:func:`shown_only`
                for a kind with no ``SOURCES``)

and may declare ``CONTEXT`` (True: a block that feeds no source is still read and shown, as a kind with no
``SOURCES`` always is), ``GAPS`` (blank lines a block may hold in a row; 1), ``UP`` (whether a block grows above its
anchor; True), ``MIN`` (the fewest non-blank lines of a block; 1), ``enough(lines)`` (in place of ``MIN``: whether the lines are enough for a block), ``KEEP_TIME`` (True: a log whose lines keep their time
and what follows it, only what surrounds them goes), ``MAX`` (the most lines; 20000) and
``extent(view, i, template)`` where the neighbours are not found line by line alike (kernel lines), and
``restarts(lines)`` (the indexes of the lines where the same command's output starts again with no prompt between,
such as a CA ``ibstat`` names a second time: each run is a block, a reading of its own). ``context``
is a :class:`Context`: the command typed above the block, where one is. Every expression is anchored and its repeats
bounded, so that each runs in time linear in the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from nccldiag import rx

MAX_LINES = 20000  # the lines of one block at most: a longer run is cut there (and the rest read as a new block)


@dataclass(frozen=True)
class Context:
    """What surrounds a block: the command typed above it (prompt, ``# cmd``), where there is one."""

    command: str = ""


def joined(lines: List[str]) -> str:
    """The block's lines as one text, as a bundle file holds it (blank lines at its ends dropped)."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "".join(line + "\n" for line in lines)


def shown_only(lines: List[str], context: Context) -> Dict[str, str]:
    """``sections`` of a kind no area judges (no ``SOURCES``): its blocks are read and shown, and feed no source."""
    return {}


def one(source: str, lines: List[str]) -> Dict[str, str]:
    text = joined(lines)
    return {source: text} if text.strip() else {}


INDENTED = rx.compile(r"[ \t]{1,40}\S")
KEY_VALUE = rx.compile(r"[ \t]{0,40}[A-Za-z][\w .()/+#-]{0,60}:(?:[ \t]|$)")  # 'State: Active', 'fw_ver:  20.1'
# a line of dots alone stands for lines the poster left out: three or more, or two (``..``, as some trim a field
# list); a lone '.' is not one
ELISION = rx.compile(r"[ \t]{0,40}(?:\[(?:\.\.\.|…|snip|snipped|truncated|cut)\]|\.{2,}|…)[ \t]{0,40}$", re.I)


def indented(text: str) -> bool:
    return bool(INDENTED.match(text))


def elided(text: str) -> bool:
    """An elision the poster left in place of lines (``[...]``, ``....``, ``..``, ``[snip]``)."""
    return bool(ELISION.match(text))


def command(context: Optional[Context], pattern: "re.Pattern[str]") -> bool:
    return bool(context is not None and context.command and pattern.search(context.command))
