"""A network plugin failing, or differing across nodes: aws-ofi-nccl (EFA/libfabric) warnings at memory
registration or provider set-up (an old libfabric with a newer NCCL: 'Unable to register memory ... RC: -22'),
a plugin that fails to load, or some nodes loading an external libnccl-net.so (HPC-X SHARP, IBext) while others
use NCCL's internal IB: their ranks cannot talk and the job hangs across nodes.

Evidence: NET/OFI and NET/Plugin WARNs and load failures in NCCL's log; 'Plugin Path' / 'Loaded net plugin' on
some hosts beside 'Could not find: libnccl-net.so ... internal' on others.
References: awslabs/awsome-distributed-ai#203 (FI_EFA_SET_CUDA_SYNC_MEMOPS, EFA installer 1.29.1+);
NVIDIA/nccl#1634; aws-ofi-nccl release notes.
"""
from __future__ import annotations

import re
import sys
from typing import Dict, List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.rules import firewall, rdma_hidden

ID = "net-plugin"
TITLE = "Network plugin failing or differing across nodes"
CATEGORY = "net_plugin"
FIX = ("Use one network plugin, at one version, on every node (the same image or NCCL_NET_PLUGIN path), matched to "
       "NCCL and the fabric software: for EFA, an EFA installer with libfabric 1.29.1+ for NCCL 2.19+ and the "
       "aws-ofi-nccl release made for that NCCL; for HPC-X/SHARP, the plugin of that HPC-X on all nodes or on none.")
WORKAROUND = ("EFA with an old libfabric: FI_EFA_SET_CUDA_SYNC_MEMOPS=0; a plugin on some nodes only: NCCL_NET_PLUGIN=none "
              "(NCCL's internal IB everywhere)")
CONFIRM = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: 'NET/Plugin' and 'Using network' lines of every node"

PLUGIN_ERR = re.compile(r"NET/OFI\b.*(?:Unable|[Ff]ail|[Ee]rror|RC: -\d+|not supported|Could not find|[Nn]o \w+ provider)|"
                        r"NET/Plugin\s*:.*(?:[Ff]ailed to (?:load|find|initiali)|dlerror|undefined symbol|"
                        r"incompatible|version mismatch)|ncclNetPlugin_v\d+.*not found|"
                        r"NET/(?:IBext|UCX|SHARP)\w*\s*:.*(?:[Ff]ail|[Ee]rror|Unable)|OFI plugin\b.*(?:fail|error)", re.I)


def plugin_split(inp: Inputs) -> List[C.Clue]:
    """Hosts that load an external net plugin beside hosts that use NCCL's internal one."""
    external: Dict[str, C.Clue] = {}
    internal: Dict[str, C.Clue] = {}
    for ls in inp.log_sets():
        for p in ls.facts.plugins:
            host = p.at.host or ""
            clue = C.Clue("error", p.text, p.at, p.text, p.at.host)
            v = p.value or ""
            if p.kind in ("path", "loaded_net") and "libnccl-net" in v or p.kind == "loaded_net":
                external.setdefault(host, clue)
            elif p.kind in ("none_found", "other") and re.search(r"internal|No plugin found|Could not find", v):
                internal.setdefault(host, clue)
    both = set(external) & set(internal)
    ext = [c for h, c in external.items() if h not in both]
    inn = [c for h, c in internal.items() if h not in both]
    return ext[:2] + inn[:2] if ext and inn else []


def diagnose(inp: Inputs) -> List[Diagnosis]:
    # data-path completion errors are the security group's; devices not found, the container's
    errs = [c for c in C.find(inp, PLUGIN_ERR, ("warn", "last-error", "error"))
            if not firewall.OFI_SEND.search(c.text) and not rdma_hidden.HIDDEN.search(c.text)]
    split = plugin_split(inp)
    if not errs and not split:
        return []
    if split:
        what, conf, why = ("some nodes load an external NCCL net plugin and others NCCL's internal one",
                           "high", "the ranks of one job run different network stacks: they cannot connect")
    else:
        what, conf, why = ("the NCCL network plugin failed", "high" if any("NET/OFI" in c.text for c in errs)
                           else "medium", "the plugin itself reported the failure")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(split + errs)), split + errs, confidence=conf, why=why,
                   alternatives=[] if split else ["memlock_limit: registration failures with 'Cannot allocate memory' "
                                                  "are the locked-memory limit, not the plugin"])]
