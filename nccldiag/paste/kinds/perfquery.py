"""``perfquery [-x]`` (a ``# Port counters: Lid N port N`` or ``# Port extended counters: ...`` header, then a
``Name:......value`` line per counter) and ``ibqueryerrors`` (``Errors for 0x... "node"``, then ``GUID 0x... port
N: [Counter == value] ...``), both of infiniband-diags (rdma-core ``infiniband-diags/perfquery.c``,
``ibqueryerrors.c``): the ibcounters area's ``ib_counters`` source reads the port error counters in them, as it
reads them where the collection ran ``perfquery`` itself. A ``perfquery -C DEV -P PORT`` typed above the block names
the port's HCA."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "perfquery"
WORDS = ("counters: Lid ", "Errors for ", "ports checked, ", "GUID 0x")
SOURCES = ("ib_counters",)
GAPS = 1
UP = False

# the headers perfquery prints before each port's counters (PortCounters, PortCountersExtended and the detail
# attributes: '# PortRcvErrorDetails counters: Lid 1432 port 1') and ibqueryerrors' node line and summary
_HEAD = rx.compile(r"[ \t]{0,40}(?:#[ \t]{0,4}[A-Za-z ]{1,60}counters:[ \t]{0,4}Lid \d{1,6} port \w{1,8}\b"
                   r"|Errors for[ \t]{1,8}(?:0x[0-9a-fA-F]{1,16}|\")"
                   r"|##[ \t]{0,4}\d{1,9} ports checked, \d{1,9} ports have errors)")
# 'SymbolErrorCounter:..............0', 'CounterSelect:...................0x0000', the old 'SymbolErrors:....0'
_COUNTER = rx.compile(r"[ \t]{0,40}[A-Za-z][A-Za-z0-9]{1,60}:\.{0,60}[ \t]{0,8}(?:0x[0-9a-fA-F]{1,16}|\d{1,24})[ \t]{0,8}$")
# ibqueryerrors: '   GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] ...', its '## Summary: ...' lines
_IBQ = rx.compile(r"[ \t]{0,40}(?:GUID[ \t]{1,8}0x[0-9a-fA-F]{1,16}[ \t]{1,8}port[ \t]{1,8}\w{1,8}:"
                  r"|##[ \t]{0,4}(?:Summary|\d{1,9} ports? ))")
# an ibqueryerrors port line pasted alone: 'GUID 0x1070fd0300370ea2 port ALL: [LinkDownedCounter == 25 (25.000)] ...'
_IBQ_PORT = rx.compile(r"[ \t]{0,40}GUID[ \t]{1,8}0x[0-9a-fA-F]{1,16}[ \t]{1,8}port[ \t]{1,8}\w{1,8}:[ \t]{0,8}"
                       r"\[[A-Za-z0-9]{1,60}[ \t]{0,4}==[ \t]{0,4}\d")
_COMMAND = rx.compile(r"\bperfquery\b")


def anchor(text: str) -> bool:
    return bool(_HEAD.match(text) or _IBQ_PORT.match(text))


def member(text: str) -> bool:
    return bool(_HEAD.match(text) or _COUNTER.match(text) or _IBQ.match(text) or elided(text))


def enough(lines: List[str]) -> bool:
    """Two lines of a perfquery block (its header and a counter), or one ibqueryerrors port line, which holds its
    counters."""
    return sum(1 for line in lines if line.strip()) >= 2 or any(_IBQ_PORT.match(line) for line in lines)


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    if context.command and _COMMAND.search(context.command):
        lines = [context.command] + lines  # 'perfquery -x -C mlx5_0 -P 1': the port's HCA and number
    return one("ib_counters", lines)
