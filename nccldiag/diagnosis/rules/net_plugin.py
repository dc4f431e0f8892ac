"""A network plugin failing, or differing across nodes: aws-ofi-nccl (EFA/libfabric) warnings at memory
registration or provider set-up (an old libfabric with a newer NCCL: 'Unable to register memory ... RC: -22'),
a plugin that fails to load, or some nodes loading an external libnccl-net.so (HPC-X SHARP, IBext) while others
use NCCL's internal IB: their ranks cannot talk and the job hangs across nodes. Also the static topology XML
that aws-ofi-nccl older than 1.11 hands NCCL on p4d/p5 (NCCL_TOPO_FILE set by the plugin, not the user): its CPU
nodes lack the attributes NCCL reads ('Attribute arch of node cpu not found'), and init fails, most often when
the job sees a subset of the GPUs.

Evidence: NET/OFI and NET/Plugin WARNs and load failures in NCCL's log (the plugin found but refused by the
loader: a library it needs missing or of another version, 'version ... not found'; or offering no API version
NCCL reads), not NCCL's normal lines about an absent libnccl-net.so or older API and CollNet symbols;
'Plugin Path' / 'Loaded net plugin' on some hosts beside 'Could not find: libnccl-net.so ... internal' on others;
'Attribute X of node cpu not found' with no NCCL_TOPO_FILE echoed from the environment, or one under the plugin's
install (NCCL 2.8 and newer: older NCCL failed the same way on any injected topology, NVIDIA/nccl#379).
NCCL's WARN 'Error: network X not found.' for a plugin's network (its plugin not loaded).
Not a failure of the plugin: aws-ofi-nccl's GIN (GPU-initiated networking) set-up refusing to start ('NET/OFI Failed
to initialize GDRCopy: Failed to open gdr handle' without /dev/gdrdrv, 'GIN requires GDRCopy 2.5+ ...', 'GIN only
supports RDMA transport protocol.'; src/rdma/gin/nccl_ofi_gin_api.cpp): NCCL then reports 'Failed to initialize any
GIN plugin' and runs its collectives over the plugin's network without GIN, as a real two-node p4d run over EFA shows
(busbw 57.8 GB/s beside that line: tests/cases/net-blogs49-tosshi-zenn-eks-p4d-nccl-efa-3-nics-busbw-57gbs-gdrcopy-notice-healthy).
References: awslabs/awsome-distributed-ai#203 (FI_EFA_SET_CUDA_SYNC_MEMOPS, EFA installer 1.29.1+);
NVIDIA/nccl#1634; aws/aws-ofi-nccl#785, NVIDIA/nccl#1726 (p5.48xl-topo.xml missing arch and vendor);
aws-ofi-nccl release notes; NCCL src/transport/net.cc (the network not found); CSCS Alps NCCL documentation,
'Known issues' (tests/cases/net-cscs-docs-nccl-tests-invalid-usage-aws-libfabric-plugin-not-loaded).
"""
from __future__ import annotations

import re
import sys
from typing import Dict, List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.nccl.grammar import GIN_DECLINED

ID = "net-plugin"
TITLE = "Network plugin failing or differing across nodes"
FIX = ("Use one network plugin, at one version, on every node (the same image or NCCL_NET_PLUGIN path), matched to "
       "NCCL and the fabric software: for EFA, an EFA installer with libfabric 1.29.1+ for NCCL 2.19+ and the "
       "aws-ofi-nccl release made for that NCCL; for HPC-X/SHARP, the plugin of that HPC-X on all nodes or on none.")
WORKAROUND = ("EFA with an old libfabric: FI_EFA_SET_CUDA_SYNC_MEMOPS=0; a plugin on some nodes only: NCCL_NET_PLUGIN=none "
              "(NCCL's internal IB everywhere)")
CONFIRM = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: 'NET/Plugin' and 'Using network' lines of every node"

# the plugin's file was found but cannot load: a library it needs is missing or of another version (the loader's
# words; a plugin file that is absent, 'libnccl-net.so: cannot open shared object file', is NCCL's normal case).
# A version, a file name and a path are bounded in length, so that a search is linear in the text.
LOAD_BROKEN = rx.compile(r"version `?[\w.\-]{1,128}' not found|undefined symbol|"
                         r"\.so[\w.]{0,32}: \S{0,256}?lib[\w.\-]{1,128}\.so[\w.]{0,32}: cannot open shared object file")
# the plugin loaded, but offers no API version this NCCL reads
NO_API = rx.compile(r"Failed to find ncclNetPlugin symbol")
PLUGIN_ERR = rx.compile(r"NET/OFI\b[^\n]{0,300}?(?:Unable|[Ff]ail|[Ee]rror|RC: -\d+|not supported|Could not find|[Nn]o \w+ provider)|"
                        # not NCCL's normal lines: the absent libnccl-net.so it reports with its dlerror, nor the
                        # older API versions ('ncclNetPlugin_v8') and the CollNet symbols it looks for in vain
                        r"NET/Plugin\s{0,8}:[^\n]{0,300}?(?:[Ff]ailed to (?:load|initiali)|Failed to find ncclNetPlugin symbol|"
                        r"incompatible|version mismatch|" + LOAD_BROKEN.pattern + r")|ncclNetPlugin_v\d{1,4}[^\n]{0,300}?not found|"
                        r"NET/(?:IBext|UCX|SHARP)\w{0,40}\s{0,8}:[^\n]{0,300}?(?:[Ff]ail|[Ee]rror|Unable)|OFI plugin\b[^\n]{0,300}?(?:fail|error)", re.I)


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


def plugin_load_broken(inp: Inputs) -> List[C.Clue]:
    """NCCL's own 'NET/Plugin' INFO lines saying the plugin it found could not be loaded for a library it needs, or
    offers no API version NCCL reads."""
    return [C.Clue("error", p.text, p.at, p.text, p.at.host) for ls in inp.log_sets() for p in ls.facts.plugins
            if "NET/Plugin" in p.text and (LOAD_BROKEN.search(p.text) or NO_API.search(p.text))]


def diagnose(inp: Inputs) -> List[Diagnosis]:
    # data-path completion errors are the security group's; devices not found, the container's
    errs = [c for c in C.find(inp, PLUGIN_ERR, ("warn", "last-error", "error"))
            if not signs.OFI_SEND.search(c.text) and not signs.HIDDEN.search(c.text)
            and not GIN_DECLINED.search(c.text)]
    errs += [c for c in plugin_load_broken(inp) if all(c.at is not e.at for e in errs)]
    if not signs.named_plugin_missing(inp):  # a plugin name set wrong is nccl-env's
        errs += signs.network_not_found(inp)
    split = plugin_split(inp)
    topo = signs.plugin_topology(inp)
    if not errs and not split and topo:
        files = C.env_values(inp, "NCCL_TOPO_FILE")
        where = f" ({files[0]})" if files else ""
        return [C.make(sys.modules[__name__], f"the static topology file of the NCCL network plugin{where} lacks the "
                       f"CPU attributes NCCL needs{C.on(C.hosts(topo))}", topo, confidence="medium",
                       why=("NCCL failed to load a topology XML whose CPU nodes miss attributes NCCL's own dump "
                            "always writes, and the user set no NCCL_TOPO_FILE of their own: aws-ofi-nccl older "
                            "than 1.11 injects such a file on p4d/p5"),
                       fix=("Upgrade aws-ofi-nccl to 1.11 or later (it builds the topology from the devices NCCL "
                            "sees); until then unset NCCL_TOPO_FILE after the plugin sets it, or add the arch, "
                            "vendor, familyid and modelid attributes to the file's cpu nodes."),
                       alternatives=["nccl_env_misconfig: a topology file of your own (NCCL_TOPO_FILE in the job, "
                                     "/etc/nccl.conf or the image) written by hand for another machine"])]
    if not errs and not split:
        return []
    if split:
        what, conf, why = ("some nodes load an external NCCL net plugin and others NCCL's internal one",
                           "high", "the ranks of one job run different network stacks: they cannot connect")
    else:
        what, conf, why = ("the NCCL network plugin failed", "high" if any("NET/OFI" in c.text for c in errs)
                           else "medium", "the plugin itself reported the failure")
        if all(signs.NET_NOT_FOUND.search(c.text) for c in errs):
            nets = sorted({signs.NET_NOT_FOUND.search(c.text).group("net").strip() for c in errs})
            what, why = (f"the network NCCL_NET asks for ({', '.join(nets)}) is not there: its plugin did not load",
                         "NCCL found no network of that name among those loaded and stopped with 'invalid usage': "
                         "the plugin that provides it (aws-ofi-nccl for 'AWS Libfabric') was not found or not "
                         "loaded (its module not loaded, or not on LD_LIBRARY_PATH in the container)")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(split + errs)), split + errs, confidence=conf, why=why,
                   alternatives=[] if split else ["memlock_limit: registration failures with 'Cannot allocate memory' "
                                                  "are the locked-memory limit, not the plugin"])]
