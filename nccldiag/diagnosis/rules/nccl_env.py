"""An NCCL environment variable set wrong: an error that names the variable ('NCCL_ALGO was set to NVLS', 'Invalid
value for NCCL_...'), no algorithm or protocol left for a collective by NCCL_ALGO/NCCL_PROTO, or a topology or
graph file (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, often set in /etc/nccl.conf or by an image) written for another
machine: 'XML Import Channel : dev N not found', 'Attribute ... of node ... not found'; NCCL_NET_PLUGIN naming a
plugin the node lacks ('NET/Plugin: Could not find: ofi libnccl-net-ofi.so.'), so the network NCCL_NET asks for is
not found. NCCL_GRAPH_FILE is a
graph injection for experiments, never for production: a run of another GPU count fails on it (ncclSystemError,
'dev N not found'), so NCCL echoing it is a warning even where the error that followed was not posted.

Evidence: those WARNs or 'Last error' texts, the variables NCCL echoed ('set by environment to') or a pasted
NCCL configuration file sets ('cat /etc/nccl.conf', '~/.nccl.conf': NCCL reads both at init, each 'NAME=VALUE'
line set as the variable, NVIDIA/nccl src/misc/param.cc), and a system error no WARN explains in a run where NCCL
said 'Loading topology file'.
References: CSCS Alps NCCL documentation, 'Known issues' (do not use NCCL_NET_PLUGIN="ofi" with uenvs,
tests/cases/net-cscs-docs-nccl-net-plugin-ofi-could-not-find-aws-libfabric-not-found); pytorch/pytorch#163063; Azure/azhpc-images#327; NVIDIA/nccl#1240, #1008; NCCL env docs;
an Azure NC48ads A100 v4 held to a quarter of its all-reduce bandwidth by the NC96ads graph its image's
/etc/nccl.conf sets (tests/cases/net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence
from nccldiag.diagnosis.signs import NAMED_PLUGIN_MISSING, named_plugin_missing, network_not_found, plugin_topology

ID = "nccl-env"
TITLE = "An NCCL environment variable set wrong"
FIX = ("Unset or correct the variable named (check the job's environment, /etc/nccl.conf and ~/.nccl.conf, the "
       "container image's ENV, and variables a test or launcher left behind): NCCL_ALGO/NCCL_PROTO restricted to "
       "what a collective cannot use, NCCL_TOPO_FILE/NCCL_GRAPH_FILE for another machine size. NCCL_DEBUG=INFO "
       "NCCL_DEBUG_SUBSYS=ENV lists every variable NCCL read.")
CONFIRM = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV <the job> 2>&1 | grep 'set by environment'"

# a variable's name and its value are bounded (NCCL's names are under 40 characters), so that a run of name
# characters is never scanned again from each of its positions: linear in the text
NAMED = rx.compile(r"\b(NCCL_[A-Z0-9_]{1,64}) (?:was )?set to|[Ii]nvalid (?:value )?(?:for )?(NCCL_[A-Z0-9_]{1,64})|"
                   r"(NCCL_[A-Z0-9_]{1,64})\s{0,8}(?:=\s{0,8}\S{1,256}\s{0,8})?(?:is )?"
                   r"(?:invalid|not (?:valid|supported|recogni[sz]ed))")
NO_ALGO = rx.compile(r"no algorithm/protocol available")
XML = rx.compile(r"XML Import|Attribute \w+ of node \w+ not found|[Tt]opology file|[Gg]raph file|"
                 r"ncclTopoGetXmlFromFile|Could not open XML")
FILES = ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    named = C.find(inp, NAMED, ("warn", "last-error", "error", "app"))
    algo = C.find(inp, NO_ALGO, ("warn", "last-error", "error", "app"))
    xml = C.find(inp, XML, ("warn", "last-error"))
    files = {n: C.env_values(inp, n) + [v for _, v in _conf(inp, n)] for n in FILES}
    files = {n: v for n, v in files.items() if v}
    if named or algo:
        names = sorted({g for c in named for m in [NAMED.search(c.text)] for g in m.groups() if g})
        what = (f"{', '.join(names)} set to a value NCCL cannot use" if names else
                "NCCL_ALGO/NCCL_PROTO leave no algorithm for a collective")
        return [C.make(sys.modules[__name__], what + C.on(C.hosts(named + algo)), named + algo, confidence="high",
                       why="NCCL's error names the variable, or the algorithm choice it restricts")]
    plugin = named_plugin_missing(inp)
    lost = network_not_found(inp)
    if plugin and lost:
        names = sorted({NAMED_PLUGIN_MISSING.search(c.text).group("name") for c in plugin})
        return [C.make(sys.modules[__name__], f"NCCL_NET_PLUGIN={names[0]} names a plugin NCCL cannot find, so the "
                       f"network NCCL_NET asks for is not there{C.on(C.hosts(lost + plugin))}", lost + plugin,
                       confidence="high",
                       why="NCCL looked for the plugin NCCL_NET_PLUGIN names (libnccl-net-<name>.so), did not find "
                           "it, fell back to its internal networks, and then found no network of the name NCCL_NET "
                           "gives: NCCL_NET_PLUGIN is preferred to NCCL_NET, so a wrong plugin name hides the plugin "
                           "that is installed",
                       fix="Unset NCCL_NET_PLUGIN (or set it to the plugin's real library name or path) and let "
                           "NCCL_NET select the network: the installed plugin (aws-ofi-nccl for 'AWS Libfabric') is "
                           "then found under its own name.",
                       alternatives=["net_plugin: no NCCL_NET_PLUGIN set, and the plugin itself missing or not "
                                     "loaded ('Could not find: libnccl-net.so')"])]
    if xml and plugin_topology(inp):
        return []  # the plugin's static topology file: net-plugin's
    if xml:
        if files:
            what = ", ".join(f"{n}={v[0]}" for n, v in files.items())
            return [C.make(sys.modules[__name__], f"{what} does not describe this machine{C.on(C.hosts(xml))}", xml,
                           confidence="high",
                           why="NCCL failed to load the topology or graph file the environment gave it")]
        return [C.make(sys.modules[__name__], f"a topology file given to NCCL does not describe this machine"
                       f"{C.on(C.hosts(xml))}", xml, confidence="low",
                       why="NCCL failed to load a topology XML; no NCCL_TOPO_FILE was logged (a net plugin or "
                           "/etc/nccl.conf may set it)",
                       alternatives=["net_plugin: aws-ofi-nccl sets NCCL_TOPO_FILE to its static topology for "
                                     "p4d/p5; an older plugin's file can mismatch the GPUs visible to the job"])]
    system = _system_error_with_topology_file(inp)
    if system:
        return [C.make(sys.modules[__name__], "NCCL failed with a system error in a run given a topology file: a "
                       "topology or graph file set for NCCL (an image's /etc/nccl.conf sets both) that does not "
                       "describe the GPUs of this run", system, confidence="medium", severity="warn",
                       why="NCCL loaded a topology file it was given and then failed a call without a WARN naming "
                           "another cause; a graph or topology file for another GPU count fails this way",
                       alternatives=["shm_too_small: on one node NCCL's other system calls are those of its /dev/shm "
                                     "segments"])]
    graph = [v for ls in inp.log_sets() for v in ls.facts.env_values().get("NCCL_GRAPH_FILE", [])]
    conf = _conf(inp, "NCCL_GRAPH_FILE")
    if graph or conf:
        value = graph[0] if graph else conf[0][1]
        ev = (Evidence("log", f"NCCL_GRAPH_FILE set by environment to {graph[0]}") if graph else
              Evidence("log", conf[0][0].text, f"{conf[0][0].path}:{conf[0][0].lineno}", conf[0][0].host))
        return [C.make(sys.modules[__name__], f"NCCL_GRAPH_FILE={value} is set: NCCL is forced onto a fixed graph, "
                       f"which fails on any other GPU count, and holds another machine shape to that graph's "
                       f"bandwidth", confidence="medium", severity="warn",
                       nodes=[conf[0][0].host] if not graph and conf[0][0].host else None,
                       extra=[ev],
                       why="NCCL_GRAPH_FILE injects a graph for experiments; it is never set in production, and a "
                           "graph written for another machine size makes NCCL fail with a system error")]
    return []


SYSTEM_ERROR = rx.compile(r"unhandled system error|ncclSystemError|NCCL Error 2\b")


def _conf(inp: Inputs, name: str) -> list:
    """``(line, value)`` of each setting of ``name`` in a pasted NCCL configuration file (the paste reader's
    reading of a 'cat' of /etc/nccl.conf or ~/.nccl.conf), in order."""
    pasted = getattr(inp, "pasted", None)
    return [(x, v) for x, n, v in (getattr(pasted, "nccl_conf", None) or []) if n == name and v]


def _system_error_with_topology_file(inp: Inputs) -> List[C.Clue]:
    """A system error the application printed, in a log where NCCL loaded a topology file it was given and no
    NCCL WARN names the failing call."""
    out: List[C.Clue] = []
    for ls in inp.log_sets():
        f = ls.facts
        topo = [n for n in f.notes if n.kind == "topo_file"]
        errs = [a for a in f.app_errors if SYSTEM_ERROR.search(a.message or a.text)]
        if not topo or not errs or any(w.failure for w in f.warns):
            continue
        out.append(C.Clue("error", errs[0].text, errs[0].at, errs[0].text, errs[0].at.host))
        out.append(C.Clue("error", topo[0].text, topo[0].at, topo[0].text, topo[0].at.host))
    return out
