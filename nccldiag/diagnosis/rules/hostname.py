"""Host names that do not resolve, or resolve to loopback: getaddrinfo fails ('Name or service not known',
'Temporary failure in name resolution'), torchrun's c10d rendezvous cannot find its host, and NCCL or gloo
advertise 127.0.x.x to their peers (Debian's '127.0.1.1 <host>' line) so that the others never reach them.

Evidence: resolution errors in any output; connections to peers on a loopback address (a name resolving to
127.0.1.1); Gloo's 'Unable to resolve hostname ... Using the loopback address as fallback' beside a failed connection. A node whose own name resolves badly, seen by ``check``, is ``wrong-interface`` with this category.
References: PyTorch distributed docs (MASTER_ADDR, GLOO_SOCKET_IFNAME); Debian reference (127.0.1.1);
aws-samples/aws-do-eks#50.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "hostname-resolution"
TITLE = "Host names do not resolve (or resolve to loopback)"
FIX = ("Make every node's host name resolve to its data-network address on every node (DNS, or /etc/hosts without "
       "a '127.0.1.1 <host>' line), or launch by address (MASTER_ADDR=<ip>, torchrun --rdzv-endpoint=<ip>:<port>, "
       "hostfiles of addresses) and name the interface (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME).")
CONFIRM = "getent ahosts $(hostname) on each node; getent ahosts <MASTER_ADDR>"

UNRESOLVED = re.compile(r"Name or service not known|Temporary failure in name resolution|nodename nor servname|"
                        r"getaddrinfo(?:\(\))? (?:failed|error)|socket\.gaierror|gaierror|[Cc]ould not resolve|"
                        r"[Ff]ailed to resolve|Unknown host|No address associated with hostname|"
                        r"[Cc]annot assign requested address")


# A peer advertised loopback (its host name resolves to 127.0.1.1 or 127.0.0.1), so connecting to it fails.
# NCCL's own 'Connect to 127.0.0.1<port>' is not a name's: NCCL advertises its socket interface's address, so a
# loopback one there is the interface (``wrong-interface``).
LOOPBACK = re.compile(r"(?:connect(?:ing)?(?: to)?|remote=|Connect to)\s*\[?127\.0\.[01]\.1\]?[:\]]|"
                      r"local=\[127\.0\.[01]\.1\]|\[127\.0\.1\.1\]:\d+")


# PyTorch's Gloo could not resolve the host name and bound to loopback: harmless on one node, so it counts only
# beside a failure to connect
GLOO_FALLBACK = re.compile(r"Unable to resolve hostname to a \(local\) address|[Uu]sing the loopback address as fallback")
CONNECT_FAILED = re.compile(r"connectFullMesh failed|Connection refused|[Tt]imed out|DistNetworkError|"
                            r"[Ff]ailed to connect|Connection reset")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    kinds = ("warn", "last-error", "app", "error")
    text = C.find(inp, UNRESOLVED, kinds)
    text += [c for c in C.find(inp, LOOPBACK, kinds) if c not in text]
    fallback = C.find(inp, GLOO_FALLBACK, kinds)
    if fallback and C.find(inp, CONNECT_FAILED, kinds):
        text += [c for c in fallback if c not in text]
    # the node's own name resolving badly (system.hostname_* findings) is wrong-interface's, with the interface
    # to name; here: a run that failed on a name
    found = text
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"host names do not resolve to a reachable address{C.on(C.hosts(found))}",
                   found, confidence="high", why="name resolution failed, or a peer was reached on loopback",
                   alternatives=["rendezvous_unreachable: a MASTER_ADDR that resolves but is not reachable"])]
