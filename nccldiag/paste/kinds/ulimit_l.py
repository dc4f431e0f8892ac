"""A locked-memory limit asked by hand (``ulimit -l``, bash's builtin: the soft limit in KiB, or ``unlimited``; ``-H``
the hard one), the answer under its command: the limits area's ``ulimit`` source, in the collection's own words
(``memlock soft 64``), as ``ulimit -S -l`` prints it there."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context

NAME = "ulimit -l"
WORDS = ("ulimit",)
SOURCES = ("ulimit",)
UP = False  # the answer is found under its command (the anchor)
GAPS = 0
MIN = 2

# the command at the start of its line, behind the prompt it was typed at ('$ ', 'user@host:~$ ', '[user@host ~]$ ',
# '# '): the anchor is the line with its prompt, so that the answer under it, which has none, is read with it, and a
# line the paste decorated (a launcher's label, a time) is read behind its decoration
_COMMAND = rx.compile(r"[ \t]{0,4}(?:(?:\[[^\]\n]{1,80}\]|[\w@.:~/()-]{1,120})?[$#>][ \t]{1,4})?(?:sudo[ \t]{1,4})?"
                      r"ulimit[ \t]{1,4}(?:-(?P<sh>[SH])[ \t]{1,4}-l|-(?P<sh2>[SH])?l)[ \t]{0,4}$")
_VALUE = rx.compile(r"[ \t]{0,40}(?P<v>[0-9]{1,15}|unlimited)[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_COMMAND.match(text))


def member(text: str) -> bool:
    return bool(_VALUE.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    m = _COMMAND.match(lines[0]) if lines else None
    values = [v for v in map(_VALUE.match, lines[1:2]) if v]
    if not m or not values:
        return {}
    which = "hard" if "H" in ((m.group("sh") or "") + (m.group("sh2") or "")) else "soft"
    return {"ulimit": f"memlock {which} {values[0].group('v')}\n"}
