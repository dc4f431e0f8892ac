"""This rank is a victim: a peer went away. 'Connection reset by peer', 'Connection closed by remote peer',
'remote process exited or there was a network error' (ncclRemoteError) are what the survivors print when another
rank died (killed, out of memory, a crash) or its node's network failed. The cause is on that peer: read its log
or its node's health.

Evidence: those errors, when no cause of their own is in the evidence.
References: NVIDIA/nccl#2076; NCCL docs (ncclRemoteError).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "remote-peer"
TITLE = "A peer rank or its node went away"
FIX = ("Look at the peer, not this rank: the address in the error names its node. Read that rank's own log (the "
       "first error in time), the node's kernel log (OOM killer, Xid, link down: 'dmesg -T'), and run "
       "'nccldiag check' on it; the launcher's root-cause block names the rank that exited first.")
CONFIRM = "nccldiag check <the peer's node>; dmesg -T on it around the time of the error"

GONE = re.compile(r"Connection reset by peer|Connection closed by (?:remote )?peer|remote process exited|"
                  r"ncclRemoteError|peer closed|Broken pipe|socketProgress\w*: .*(?:reset|closed)|"
                  r"NCCL communicator was aborted|ProcessGroupNCCL.*(?:aborted|is aborting)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, GONE, ("warn", "last-error", "app", "error"))
    if not found:
        return []
    peers = sorted(set(re.findall(r"(?:from|to|peer)\s+\[?(\d{1,3}(?:\.[\d.]+)+|[0-9a-f:]{6,})", " ".join(c.text for c in found))))
    return [C.make(sys.modules[__name__], "a peer rank exited or its network failed"
                   + (f" (peer {', '.join(peers[:4])})" if peers else "") + ": this rank is a victim", found,
                   confidence="medium",
                   why="the survivors report the connection closed by the other side; the cause is on that side")]
