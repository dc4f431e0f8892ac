"""What the evidence says, read once for every cause that needs it (pure).

The rules of :mod:`nccldiag.diagnosis.rules` read their causes' words
themselves; what several of them ask of the same evidence lives here, so
that no rule imports another: whether a log shows a failure or a run that
stopped, NCCL's NVLS set-up failures, the
socket words of a failed connection, a network plugin's static topology, the
network NCCL_NET names not found, a run of one host that stalled. Who explains whom is not decided here: that
is the catalog's precedence (``knowledge/causes.toml``).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.areas.netdev import ip_of
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs, LogView
from nccldiag.diagnosis.model import Diagnosis, Evidence, log_evidence
from nccldiag.knowledge import lexicon
from nccldiag.nccl.facts import Loc

# ---- runs: failed, unfinished, stopped in init ---------------------------------------------------------------

# Lines that say a run ended badly, whatever printed them.
ENDED_BADLY = rx.compile(
    r"Traceback \(most recent call last\)|core dumped|Segmentation fault|\bAborted\b|ChildFailedError|"
    r"Root Cause \(first observed failure\)|mpirun noticed that process|srun: error:|exited with (?:exit )?code [1-9]|"
    r"exitcode\s*:\s*-?[1-9]|terminate called after throwing|Primary job\s+terminated normally, but|"
    r"Some NCCL operations have failed or timed out|RuntimeError|DistBackendError|\bFAILED\b|"
    # MPICH's MPID_Abort of an error that MPI_ERRORS_ARE_FATAL makes fatal ('Abort(N): Fatal error in PMPI_Init: ...')
    r"\bAbort\([0-9]{1,12}\)[^\n:]{0,60}: Fatal error in |"
    # SGLang's disaggregated serving: a KV cache transfer between its prefill and decode instances failed (class
    # KVTransferError of python/sglang/srt/disaggregation/{common,mooncake}/conn.py, the request aborted); Mooncake's
    # Transfer Engine whose RDMA transport did not start (rdma_transport.cpp: 'RdmaTransport: No available RNIC', then
    # 'RdmaTransport: cannot initialize RDMA resources' as RdmaTransport::install returns the error)
    r"\bKVTransferError\b|RdmaTransport: (?:No available RNIC|cannot initialize RDMA resources)|"
    # NCCL's own result, as any program prints it ('NCCL error ...: unhandled system error', ncclSystemError)
    r"\bNCCL (?:[Ee]rror|[Ff]ailure)\b[^\n]{0,300}?\b(?:unhandled (?:cuda|system) error|internal error|invalid usage|"
    r"invalid argument|remote process exited)|"
    r"\bnccl(?:SystemError|InternalError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError)\b")


def ended_badly(text: str) -> bool:
    """Whether a line says a run ended badly: one of ENDED_BADLY's, or a process killed as a shell or a launcher
    says it in the user's locale (the failure lexicon's row 'killed': 'Killed', '已杀死', 'Getötet', ...)."""
    return ENDED_BADLY.search(text) is not None or lexicon.shape("killed").reads(text)


def unfinished(inp: Inputs) -> List[Evidence]:
    """Evidence in the logs that a run did not finish: stopped before its first result, or ended in an error."""
    out: List[Evidence] = []
    for ls in inp.log_sets():
        f = ls.facts
        for e in f.errors:
            if ended_badly(e.text):
                out.append(log_evidence(e.at, e.text))
                break
        stuck = stopped_in_init(f)
        if stuck is not None:
            out.append(stuck)
    return out


def stopped_in_init(f: LogView) -> Optional[Evidence]:
    """A log whose ranks started init, got as far as setting up channels, and never completed it nor ran a
    collective: the run hung in init. A short excerpt that stops earlier (at the network choice) is not taken
    for one."""
    if not f.inits or any(e.phase == "COMPLETE" for e in f.inits):
        return None
    if f.nccl_tests:
        return None
    if f.watchdogs or f.app_errors:
        return None
    setup = [c for c in f.channels[:1]] or [n for n in f.connected[:1]] or [n for n in f.nvls if n.kind == "comm"][:1]
    if not setup:
        return None
    last = setup[0]
    return log_evidence(last.at, "init reached channel set-up here but no rank logged Init COMPLETE: " + last.text)


def log_failed(f: LogView) -> bool:
    """An NCCL log that shows a failure: a failed WARN or call chain, an application's NCCL error, a watchdog
    timeout, or a line saying the run ended badly."""
    return (any(w.failure for w in f.warns) or any(oc.failed for oc in f.orphan_chains) or bool(f.app_errors)
            or bool(f.watchdogs) or any(ended_badly(e.text) for e in f.errors))


CONSUMER = rx.compile(r"RTX ?[45]0\d0", re.I)  # consumer generations without PCIe P2P
_NVLINK = rx.compile(r"SXM|HGX|DGX|NVL\b|GH200|GB200", re.I)  # GPUs that talk over NVLink, not PCIe P2P


def stalled_single_node(inp: Inputs) -> List[Evidence]:
    """A run of GPUs of one host that stopped before its first result, with no error printed."""
    out: List[Evidence] = []
    for ls in inp.log_sets():
        f = ls.facts
        if f.warns and any(w.failure for w in f.warns) or f.app_errors or f.watchdogs:
            continue
        hosts = {p.host for p in f.procs}
        if len(hosts) > 1:
            continue
        # a communicator of several nodes, or a channel through the network, is no run of one host (a log whose
        # host:pid:tid prefixes were cut names no host)
        if any((c.nnodes or 0) > 1 for c in f.comms) or any(c.transport in ("NET", "COLLNET")
                                                             for c in f.channels[:1000]):
            continue
        runs = [] if f.nccl_tests else [r for r in f.nccl_tests_no_result if r.ranks != 1 and not r.elided]
        table = [r for r in runs if r.table]
        pcie = [r for r in runs if r.devices and not any(_NVLINK.search(d) for d in r.devices)]
        stuck = stopped_in_init(f)
        if table:
            out.append(Evidence("log", f"nccl-tests on {table[0].ranks or 'several'} GPUs of one host printed its "
                                       "table header and no result: its first collective never finished",
                                table[0].source))
        elif stuck is not None:
            out.append(stuck)
        elif pcie and f.nccl_lines and not f.inits:
            out.append(Evidence("log", f"nccl-tests on {pcie[0].ranks} PCIe GPUs of one host ({pcie[0].devices[0]}) "
                                       "stops during NCCL's init, with no error", pcie[0].source))
    return out


def consumer_gpus(inp: Inputs) -> bool:
    """Whether an nccl-tests run of the logs names consumer GPUs (no PCIe P2P)."""
    for ls in inp.log_sets():
        for r in list(ls.facts.nccl_tests) + list(ls.facts.nccl_tests_no_result):
            if any(CONSUMER.search(d) for d in r.devices):
                return True
    return False


# ---- GPUs: NVLink SHARP (Xid codes and the driver's messages: diagnosis/events.py) -------------------------

NVLS_TEXT = rx.compile(r"(?:NVLS|NVLink SHARP|nvls\.cc)[^\n]{0,300}?(?:[Ff]ail|[Ee]rror|invalid|not supported|cannot)|"
                       r"(?:[Ff]ail|[Ee]rror)[^\n]{0,300}?(?:NVLS|NVLink SHARP)|Fabric Manager or NVSwitches")
# 'no algorithm ... NCCL_ALGO was set to NVLS' is the environment's doing, not an NVLS set-up failure
_ASKED = rx.compile(r"NCCL_ALGO|no algorithm/protocol")


def nvls_failures(inp: Inputs) -> List[C.Clue]:
    """NCCL's NVLS set-up failures: the WARN kind, CUDA failures in its nvls source file, and the words NCCL 2.2x
    prints ('Failed to bind NVLink SHARP (NVLS) Multicast memory ... Fabric Manager or NVSwitches')."""
    out = []
    for c in C.find(inp, r".", ("warn", "last-error")):
        w = c.warn
        if w is not None and (w.kind == "nvls" or "nvls" in (w.file or "").lower()):
            out.append(c)
    out += [c for c in C.find(inp, NVLS_TEXT, ("warn", "last-error", "error", "app")) if c not in out]
    return [c for c in out if not _ASKED.search(c.text)]


def nvls_defect(inp: Inputs) -> bool:
    """NCCL 2.26.0 to 2.26.4: NVLS buffer set-up fails 'invalid argument' with drivers before CUDA 12.4's
    (fixed in 2.26.5, pytorch/pytorch#150852)."""
    return any((2, 26, 0) <= C.version_tuple(v) < (2, 26, 5) for v in C.nccl_versions(inp))


def stopped_at_nvls(inp: Inputs) -> List[C.Clue]:
    """A log whose init stopped right after NVLS set-up (the last set-up line is an NVLS one): an NVLS buffer
    registration that never returned."""
    out = []
    for ls in inp.log_sets():
        f = ls.facts
        nv = [n for n in f.nvls if n.kind == "comm"]
        if not nv or stopped_in_init(f) is None:
            continue
        last_other = max([c.at.lineno for c in f.channels[-50:]] + [c.at.lineno for c in f.connected[-50:]] + [0])
        if nv[-1].at.lineno > last_other:
            out.append(C.Clue("error", nv[-1].text, nv[-1].at, nv[-1].text, nv[-1].at.host))
    return out


# ---- sockets ------------------------------------------------------------------------------------------------

# interfaces that cannot leave the host: loopback, container bridges and their veth ends, tunnels
VIRTUAL = rx.compile(r"^(lo|docker\d*|veth\w*|virbr\d*|br-\w+|cni\d*|flannel\.\d+|cali\w+|tun\d*|tap\d*)$")
NO_IFACE = rx.compile(r"Socket creation failed\s*:\s*Address family not supported|no socket interface found|"
                      r"No usable listening interface|[Nn]o interface found|Bootstrap\s*:\s*no socket interface")
# a connection that failed, and the address it was to. The address is read ahead (a look-ahead is never tried
# again once it matched) and the window starts at the connect itself, so that the window is tried once per
# connect, not once per character of a long address: linear in the text.
CONNECT = rx.compile(r"(?:Connect to|connect(?:ing)? to|Call to connect)(?=\s*\[?(?P<addr>[0-9a-fA-F:.%\w]*))"
                     r"[^\n]{0,380}?(?:timed out|refused|unreachable|No route|connection abort)", re.I)
# what the node's own stack answers a connect it cannot send: no route to that network (ENETUNREACH), or the
# connection aborted on this side (ECONNABORTED): the address is not one this node's interfaces reach, whatever a
# firewall on the path does (a REJECT answers 'No route to host' or 'Connection refused', a DROP times out)
NO_PATH = rx.compile(r"Network is unreachable|ENETUNREACH|Software caused connection abort|ECONNABORTED", re.I)
# a link-local address: IPv6 fe80::/10 (with or without its %interface), IPv4 169.254.0.0/16 (RFC 3927: an address an
# interface gives itself, or a host-local agent's such as EKS Pod Identity's 169.254.170.23; routers never forward
# it), or an address on an interface that cannot leave the host
LINK_LOCAL = rx.compile(r"\b[fF][eE]80:[0-9a-fA-F:]*(?:%\w+)?|(?<![\d.])169\.254\.\d{1,3}\.\d{1,3}(?!\.?\d)|%(?:"
                        + VIRTUAL.pattern.strip("^$") + r")\b")
# a connection that ssh failed to open, in OpenSSH's words ('ssh: connect to host %s port %s: %s', sshconnect.c) or
# behind Ansible's ssh connection plugin ('Failed to connect to the host via ssh: ...', its UNREACHABLE! result): a
# launcher's or a configuration tool's login to a node, read by knowledge/launchers.toml's ssh rows, no rank's socket
SSH_CONNECT = rx.compile(r"\bssh: connect to host |\bconnect to the host via ssh\b")
ROUTABLE = rx.compile(r"\b(?!127\.)\d{1,3}(?:\.\d{1,3}){3}\b|\b[23][0-9a-fA-F]{3}:[0-9a-fA-F:]+")
_LOOPBACK = rx.compile(r"\b127\.0\.[01]\.1\b")
# c10d's client socket that timed out or found no route: a rank's connection to the rendezvous store
# (MASTER_ADDR:MASTER_PORT), not to a peer, and its address unreachable (a refusal is the store not listening yet,
# which c10d retries)
STORE_CLIENT = rx.compile(r"(?:\[c10d\] The client socket|client socket has)[^\n]{0,300}?(?:timed out|No route|unreachable)",
                          re.I)
REFUSED = rx.compile(r"Connection refused|ECONNREFUSED", re.I)


def failed_connects(inp: Inputs) -> List[C.Clue]:
    """Failed connections (refused, timed out, unreachable) to a routable peer address: not loopback, not
    link-local nor a container's interface (those are the interface's fault, not the path's), nor one the node's
    own stack would not send (:func:`no_path_connects`), nor c10d's client socket that could not reach the
    rendezvous store (:data:`STORE_CLIENT`: the rendezvous cause reads those)."""
    return [c for c in C.find(inp, CONNECT, ("warn", "last-error", "error"))
            if not LINK_LOCAL.search(c.text) and not _LOOPBACK.search(c.text) and ROUTABLE.search(c.text)
            and not NO_PATH.search(c.text) and not STORE_CLIENT.search(c.text) and not SSH_CONNECT.search(c.text)]


def no_path_connects(inp: Inputs) -> List[C.Clue]:
    """Failed connections to a routable peer address that the node's own stack refused to send
    (:data:`NO_PATH`): the interface or route toward the address is the fault, not the peer nor a firewall."""
    return [c for c in C.find(inp, CONNECT, ("warn", "last-error", "error"))
            if NO_PATH.search(c.text) and not LINK_LOCAL.search(c.text) and not _LOOPBACK.search(c.text)
            and ROUTABLE.search(c.text) and not SSH_CONNECT.search(c.text)]


def own_addresses(inp: Inputs, host: Optional[str]) -> List[Tuple[str, str]]:
    """The socket interfaces and addresses NCCL printed as its own on ``host`` ('NET/Socket : Using
    [0]eth0:10.0.0.2<0>', 'Bootstrap : Using eth0:10.0.0.2<0>'); with no host named, those of a log of one host."""
    out: List[Tuple[str, str]] = []
    for ls in inp.log_sets():
        lines = [n for n in ls.facts.nets if n.net.lower().startswith("socket") or n.oob is not None]
        boots = list(ls.facts.bootstrap)
        hosts = {x.at.host for x in lines + boots}
        if host is None and len(hosts) > 1:
            continue  # several hosts, and none named: whose is whose cannot be told
        lines = [n for n in lines if host is None or n.at.host == host]
        boots = [b for b in boots if host is None or b.at.host == host]
        devices = [d for n in lines if n.net.lower().startswith("socket") for d in n.devices]
        devices += [n.oob for n in lines if n.oob is not None]
        devices += [d for b in boots for d in b.interfaces]
        for d in devices:
            addr = (d.address or "").split("<")[0].strip("[]")
            if addr and (d.name, addr) not in out:
                out.append((d.name, addr))
    return out


def apart(peer: str, own: List[str]) -> Optional[bool]:
    """Whether ``peer`` shares no /24 (IPv4) or /64 (IPv6) with any of ``own``; None when they cannot be compared."""
    try:
        p = ipaddress.ip_address(peer)
    except ValueError:
        return None
    nets = []
    for a in own:
        ip = ip_of(a)
        if ip is not None and ip.version == p.version:
            nets.append(ipaddress.ip_network(f"{ip}/{24 if ip.version == 4 else 64}", strict=False))
    if not nets:
        return None
    return not any(p in n for n in nets)


# the peer address a failed connect names
PEER = rx.compile(r"(?:Connect to|connect(?:ing)? to|Call to connect)\s*\[?(?P<addr>[0-9a-fA-F:.]+)")
NO_ROUTE = rx.compile(r"No route to host|EHOSTUNREACH", re.I)


# an IPoIB interface (ib0, ib1, ibp65s0, ibs3, the P_Key child ib0.8001): its neighbours are resolved through the
# InfiniBand fabric (ARP over the subnet manager's IPoIB broadcast group), not on an Ethernet segment
IPOIB = re.compile(r"^ib[A-Za-z0-9]*(?:\.[0-9a-fA-F]{1,4})?$")


def ipoib_peer(peer: str, own: List[Tuple[str, str]]) -> Optional[Tuple[str, str]]:
    """The node's own IPoIB interface and address (:data:`IPOIB`) whose /24 (/64) holds ``peer``, if any."""
    for name, addr in own:
        if IPOIB.match(name or "") and apart(peer, [addr]) is False:
            return name, addr
    return None


def unrouted_connects(inp: Inputs) -> List[C.Clue]:
    """Failed connections to a routable peer answered 'No route to host' (EHOSTUNREACH) where the peer is not shown
    on a subnet of the node's own addresses (NCCL's 'Bootstrap : Using' and 'NET/Socket : Using' lines, compared as
    /24 or /64): the interface NCCL chose, on this node or on the peer that published the address, does not reach
    it. A peer on the node's own subnet is reached on the link, so the answer came from a REJECT rule of a firewall
    (firewalld's default answers icmp-host-prohibited, which the sender reads as 'No route to host'): those stay
    :func:`failed_connects` of a firewall. Unless that subnet is the one of an IPoIB interface of the node
    (:func:`ipoib_peer`): there the kernel resolves the neighbour through the InfiniBand fabric, and a peer whose
    port is down or on another fabric never answers, which the connect reads as 'No route to host' too (in
    tests/cases: a Cori-GPU bootstrap on ib0 that NCCL_SOCKET_IFNAME=eth fixed, gaps78c; Open MPI's tcp BTL toward a
    node whose IB port was down, openmpi-users-24833 of gaps71d)."""
    out = []
    for c in failed_connects(inp):
        if not NO_ROUTE.search(c.text):
            continue
        m = PEER.search(c.text)
        own = own_addresses(inp, c.host)
        if m and apart(m.group("addr"), [a for _, a in own]) is False and ipoib_peer(m.group("addr"), own) is None:
            continue
        out.append(c)
    return out


def refusing_peer(inp: Inputs) -> Optional[str]:
    """The one peer address that every failed connection names, when every one of them was refused: that peer's
    host answered (a refusal is its TCP reset) but nothing listens on the port, while no other peer failed."""
    found = failed_connects(inp)
    if not found or not all(REFUSED.search(c.text) for c in found):
        return None
    peers = {m.group("addr") for m in (CONNECT.search(c.text) for c in found) if m is not None and m.group("addr")}
    return peers.pop() if len(peers) == 1 else None


# ---- RDMA devices and network plugins ----------------------------------------------------------------------

# the RDMA devices (or the rights to them) not in the container: NCCL cannot open the HCA or find its provider
HIDDEN = rx.compile(r"/dev/infiniband[^\n]{0,380}?(?:No such file|Permission denied|not permitted|cannot open|failed)|"
                    r"(?:Failed to open|cannot open|Unable to open) (?:device )?/dev/infiniband|"
                    r"couldn't load driver 'lib\w+-rdmav\d+'|No eligible providers? (?:were )?found|"
                    # aws-ofi-nccl before 1.15 warns 'OFI fi_getinfo() call failed: No data available' where it
                    # finds no provider (FI_ENODATA; src/nccl_ofi_rdma.cpp, an INFO 'No eligible providers were
                    # found' from aws/aws-ofi-nccl a8380ba1 on)
                    r"fi_getinfo(?:\(\))?(?: call)? failed[^\n]{0,300}?(?:No data available|-61|ENODATA)|"
                    # fi_info -p <provider> itself: libfabric has no device for that provider here (the CXI hook,
                    # or the EFA device, not given to the container)
                    r"fi_getinfo: -61 \(No data available\)|"
                    r"(?:EFA|efa) (?:device|provider)s? (?:not found|not available|unavailable)|"
                    r"Unable to (?:find|open) (?:an? )?(?:RDMA|IB|EFA) device|NET/OFI[^\n]{0,300}?[Nn]o NICs? (?:found|available)")
# NCCL's WARN when no network of the name NCCL_NET asks for is there (net.cc: 'Error: network %s not found.', then
# ncclInvalidUsage): a plugin's network ('AWS Libfabric', 'OFI', ...) whose plugin did not load. NCCL's own
# networks, IB and Socket, are not found for other reasons (no RDMA device, NCCL_IB_DISABLE): not the plugin's.
NET_NOT_FOUND = rx.compile(r"Error: network (?P<net>[^\n]{1,80}?) not found")
BUILT_IN = ("IB", "Socket", "")
# NCCL's INFO line when the plugin NCCL_NET_PLUGIN names is not there: 'NET/Plugin: Could not find: ofi
# libnccl-net-ofi.so.' (unset, it looks for plain libnccl-net.so): the variable names a plugin the node lacks
NAMED_PLUGIN_MISSING = rx.compile(r"Could not find: (?P<name>[\w.+-]{1,60}) libnccl-net-(?P=name)\.so")


def network_not_found(inp: Inputs) -> List[C.Clue]:
    """NCCL's WARN that the network NCCL_NET names is not there, for a plugin's network."""
    return [c for c in C.find(inp, NET_NOT_FOUND, ("warn", "last-error"))
            if NET_NOT_FOUND.search(c.text).group("net").strip() not in BUILT_IN]


def named_plugin_missing(inp: Inputs) -> List[C.Clue]:
    """NCCL's 'NET/Plugin' lines saying the plugin NCCL_NET_PLUGIN names was not found."""
    return [C.Clue("error", p.text, p.at, p.text, p.at.host) for ls in inp.log_sets() for p in ls.facts.plugins
            if NAMED_PLUGIN_MISSING.search(p.text)]


# EFA drops what its security group does not allow: the first sends complete with an error
OFI_SEND = rx.compile(r"NET/OFI[^\n]{0,300}?(?:Request|request) [^\n]{0,300}?completed with error|rxr_cq_write_tx_error|efa[^\n]{0,300}?tx_error")
# a CPU node of a topology XML without the attributes NCCL's own topology dump always writes
CPU_ATTR = rx.compile(r"Attribute \w+ of node cpu not found")
PLUGIN_PATH = rx.compile(r"aws-ofi-nccl|/opt/amazon/|/efa/", re.I)


def plugin_topology(inp: Inputs) -> List[C.Clue]:
    """The plugin's static topology XML failing to load: CPU attributes missing, NCCL_TOPO_FILE not the user's."""
    found = C.find(inp, CPU_ATTR, ("warn", "last-error"))
    if not found:
        return []
    files = C.env_values(inp, "NCCL_TOPO_FILE")
    if files and not all(PLUGIN_PATH.search(f) for f in files):
        return []
    versions = [C.version_tuple(v) for v in C.nccl_versions(inp)]
    if versions and all(v < (2, 8) for v in versions):
        return []
    return found


# ---- a job's monitor -------------------------------------------------------------------------------------------

# a monitor's or scheduler's line saying how long a job has been running: 'PULSE: tr11-176B-ml is running for
# 1-07:27:33 since ...' (Slurm's elapsed time, [days-]hours:minutes:seconds); the paste kind 'job monitor' finds them.
# The name starts where a name can (no name character before it): a search tries one start per name, not one per
# character of a long run of them
RUNNING = rx.compile(r"(?<![\w.:@/+-])(?P<job>[\w.:@/+-]{1,200}) is (?:still )?running for (?P<days>\d{1,5}-)?(?P<h>\d{1,3}):"
                     r"(?P<m>\d\d):(?P<s>\d\d)\b")


def running(text: str) -> Optional[Tuple[str, int, str]]:
    """``(job, seconds it has been running, the time as written)`` of a line that says so, else None."""
    m = RUNNING.search(text[:2000])
    if m is None:
        return None
    days = int(m.group("days")[:-1]) if m.group("days") else 0
    seconds = ((days * 24 + int(m.group("h"))) * 60 + int(m.group("m"))) * 60 + int(m.group("s"))
    return m.group("job"), seconds, m.group(0).split(" running for ", 1)[1]


# ---- py-spy dump ---------------------------------------------------------------------------------------------

PY_THREAD = rx.compile(r"[ \t]{0,8}Thread (?:0x)?[0-9a-fA-F]{1,16}(?:\.\.\.)? \((?:active|idle)[^)\n]{0,40}\): \"")
PY_FRAME = rx.compile(r"[ \t]{2,40}(?P<fn><?[\w.<>]{1,200}>?) \((?P<file>[^()\n]{1,300}?)(?::\d{1,7})?\)[ \t]{0,200}"
                      r"(?:<--.{0,200})?$")
# the functions of torch.distributed a rank waits in while a collective (or a point-to-point transfer) does not end
COLLECTIVES = frozenset(("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                         "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier", "reduce", "gather",
                         "scatter", "send", "recv", "isend", "irecv", "broadcast_object_list", "all_gather_object",
                         "recv_object_list", "send_object_list", "monitored_barrier", "wait"))


def py_stacks(text: str) -> List[Tuple[int, str, str]]:
    """The stacks of the main threads in a py-spy dump: ``(threads, innermost frame, its file)`` for each group of
    thread lines and the frames under it (a thread line with no frame under it shares the next one's, as grouped
    dumps print them)."""
    out: List[Tuple[int, str, str]] = []
    threads = 0
    for line in text.splitlines():
        if PY_THREAD.match(line):
            threads += '"MainThread"' in line  # a rank's own thread; py-spy lists its helpers too
            continue
        m = PY_FRAME.match(line)
        if m and threads:
            out.append((threads, m.group("fn"), m.group("file")))
            threads = 0
    return out


def in_collective(fn: str, path: str) -> bool:
    """Whether a frame is torch.distributed's collective or point-to-point call (distributed_c10d.py)."""
    return fn in COLLECTIVES and "distributed" in path


# ---- ps and top: processes in uninterruptible sleep -----------------------------------------------------------

_PS_LAST = ("COMMAND", "CMD", "COMM", "ARGS")  # the command column, last: its text may hold spaces
_PS_STATE = ("STAT", "S")  # ps's STAT (BSD: 'Dl', 'Rsl') and S (-l, -o s: one letter); top's S
_PS_SIZE = ("VSZ", "SZ", "VIRT")  # 0 for a kernel thread, which has no user memory
# a column's name as ps and top print it: capitals, digits and '%+:_-' ('%CPU', 'TIME+', 'WCHAN'); a label before
# the header ('(RayTrainWorker pid=1234, ...)', a time) makes the line no header, read behind the label
_PS_COLUMN = rx.compile(r"[%A-Z][A-Z0-9%+:_-]{0,15}")
# NVIDIA's own tools and services: one blocked in the driver is the GPU's or the driver's, not I/O
_NVIDIA_TOOL = rx.compile(r"\[?(?:nvidia-[\w-]{1,30}|nv-hostengine|NvmlTaskRunner|dcgm[\w-]{0,30})\b")


# ---- a launcher's command line: how many nodes the job was started on ----------------------------------------

# the launchers that start a job on several nodes and the option each takes the count by: torchrun and
# torch.distributed.launch/run ('--nnodes', argparse taking '--nnode' as its prefix; elastic 'MIN:MAX'), deepspeed
# ('--num_nodes'), accelerate ('--num_machines'), Slurm's srun, sbatch and salloc ('-N', '--nodes', 'MIN-MAX')
_LAUNCHER = rx.compile(r"(?:\btorchrun\b|torch\.distributed\.(?:run|launch)\b|/distributed/(?:run|launch)\.py\b|"
                       r"\bdeepspeed\b|\baccelerate launch\b|\b(?:srun|sbatch|salloc)\b)")
_NODES = rx.compile(r"(?:--nnodes?|--num[_-]nodes|--num[_-]machines|--nodes)(?:=|[ \t]{1,4})(?P<n>\d{1,6})(?:[:-]\d{1,6})?\b"
                    r"|(?:^|[ \t])-N[ \t]{0,4}(?P<s>\d{1,6})(?:-\d{1,6})?\b")


LAUNCH = "launch command"  # the paste kind of launchers' command lines (paste/kinds/launch.py)


def launch_line(text: str) -> Optional[int]:
    """The number of nodes a launcher's command line starts the job on (the least where a range is given), or None
    for a line that is not one."""
    if len(text) > 4000:
        return None
    m = _LAUNCHER.search(text)
    if not m:
        return None
    n = _NODES.search(text, m.end())
    if not n:
        return None
    return int(n.group("n") or n.group("s"))


def launch_nodes(inp: Inputs) -> Tuple[int, Optional[C.Clue]]:
    """The most nodes a pasted launcher's command line starts the job on (1 where none says), with its line."""
    best, clue = 1, None
    for b in (inp.pasted.blocks if inp.pasted is not None else ()):
        if b.kind != LAUNCH:
            continue
        for i, line in enumerate(b.text.splitlines()):
            n = launch_line(line)
            if n is not None and n > best:
                best = n
                clue = C.Clue("app", line.strip(), Loc(b.path, b.lineno + i, b.host), line.strip(), b.host)
    return best, clue


def ps_header(text: str) -> Optional[List[str]]:
    """The column names of a ``ps`` or ``top`` header that has a process id, a state and the command last."""
    if len(text) > 400:
        return None
    names = text.split()
    if not 3 <= len(names) <= 30 or names[-1] not in _PS_LAST or "PID" not in names:
        return None
    if not all(_PS_COLUMN.fullmatch(n) for n in names):
        return None
    return names if any(n in _PS_STATE for n in names) else None


def ps_row(text: str) -> bool:
    """Whether a line reads as a row of a process listing: three fields or more, a number among the first four."""
    fields = text.split(None, 4)
    return len(fields) >= 3 and any(f.isdigit() for f in fields[:4])


def ps_stuck(text: str) -> List[Tuple[int, str, str, str]]:
    """The processes of a ``ps``/``top`` listing in uninterruptible sleep (a state starting with ``D``):
    ``(line offset in the text, pid, state, command)``. Kernel threads (no user memory: a size column of 0, or a
    command in brackets) and NVIDIA's own tools (blocked in the driver, not in I/O) are left out."""
    out: List[Tuple[int, str, str, str]] = []
    names: Optional[List[str]] = None
    for i, line in enumerate(text.splitlines()):
        head = ps_header(line)
        if head is not None:
            names = head
            continue
        if names is None:
            continue
        fields = line.split(None, len(names) - 1)
        if len(fields) != len(names):
            continue
        row = dict(zip(names, fields))
        state = row.get("STAT", row.get("S", ""))
        pid = row.get("PID", "")
        cmd = fields[-1].strip()
        if not state.startswith("D") or not pid.isdigit() or len(state) > 8:
            continue
        if cmd.startswith("[") or any(row.get(n) == "0" for n in _PS_SIZE) or _NVIDIA_TOOL.match(cmd):
            continue
        out.append((i, pid, state, cmd[:200]))
    return out


# ---- RDMA registrations and the locked-memory limit -----------------------------------------------------------

# the verbs calls that pin memory or create queues: a low memlock limit, or the HCA's resources, make them fail
RDMA_FNS = {"ibv_reg_mr", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr", "ibv_create_qp", "ibv_create_cq", "ibv_alloc_pd"}

# a call the RDMA stack does not offer (ibv_reg_dmabuf_mr on a driver without DMA-BUF): no limit makes it fail
NOT_SUPPORTED = rx.compile(r"Operation not supported|EOPNOTSUPP|errno:? 95\b")

# RDMA and UCX registration failures for want of locked memory, in any program's words (the call, then the
# error within a few hundred characters: one bounded window after a literal, so linear in the text)
_ENOMEM = rx.compile(r"(?:ibv_\w|mlx5dv_\w|create_cq|reg_mr|register memory)[^\n]{0,380}?(?:Cannot allocate memory|ENOMEM|errno 12)|"
                     r"RLIMIT_MEMLOCK|max locked memory[^\n]{0,300}?\b(?:64|65536|8192)\b|memlock[^\n]{0,300}?(?:too (?:low|small)|limit)")


def memlock_low(inp: Inputs) -> list:
    """The node findings that say the locked-memory limit is low."""
    from nccldiag.model.findings import Status

    node = inp.check_findings("limits.memlock", Status.WARN)
    return [f for f in node if f.check in ("limits.memlock", "limits.memlock_services")]


def rdma_failures(inp: Inputs) -> Tuple[list, List[C.Clue]]:
    """NCCL's ibv WARNs of the calls that pin memory or create queues, and other programs' registration failures
    for want of locked memory (or a low limit in their words)."""
    warns = [w for ls in inp.log_sets() for w in ls.facts.warns
             if w.kind == "ibv" and (w.detail.get("fn") in RDMA_FNS or "Cannot allocate memory" in w.message)
             and not NOT_SUPPORTED.search(w.message)]
    text = [c for c in C.find(inp, _ENOMEM, ("error", "app", "last-error")) if c.warn is None]
    return warns, text


def cited(c: C.Clue, refs: set, quoted: List[str]) -> bool:
    """Whether a diagnosis cites the line of ``c``: its ``file:line`` among ``refs`` (the evidence's refs), or its text
    inside one of ``quoted`` (the evidence's texts)."""
    at = c.at
    if at is not None and f"{getattr(at, 'source', '')}:{getattr(at, 'lineno', '')}" in refs:
        return True
    return any(c.text in q for q in quoted)


def shows_failure(inp: Inputs, diagnoses: List[Diagnosis]) -> bool:
    """Whether the evidence shows a failure: a log that failed or stopped, or a failing diagnosis."""
    return (any(log_failed(ls.facts) for ls in inp.log_sets()) or bool(unfinished(inp))
            or any(d.severity == "fail" for d in diagnoses))


def unexplained_messages(inp: Inputs, diagnoses: List[Diagnosis], found: Sequence[Any],
                         fail_shows_failure: bool = False) -> Dict[str, List[Any]]:
    """The messages of ``found`` (events of a message table: a category, a severity, a clue) left over once the
    catalog's causes have spoken, by category in the order first met. A message is left to the catalog's causes when
    a fail or warn diagnosis of ``diagnoses`` cites its line or quotes its text (:func:`cited`), or names its category
    already. A message of severity ``warn`` counts only beside a failure of the run (:func:`shows_failure`; with
    ``fail_shows_failure``, a message of severity ``fail`` among ``found`` shows one too)."""
    causes = [d for d in diagnoses if d.severity in ("fail", "warn") and d.category != "unexplained"]
    named = {d.category for d in causes}
    refs = {e.ref for d in causes for e in d.evidence if e.ref}
    quoted = [e.text for d in causes for e in d.evidence]
    failed = None
    by: Dict[str, List[Any]] = {}
    for e in found:
        if e.category in named or cited(e.clue, refs, quoted):
            continue
        if e.severity == "warn":
            if failed is None:
                failed = shows_failure(inp, diagnoses) or (fail_shows_failure
                                                           and any(x.severity == "fail" for x in found))
            if not failed:
                continue
        by.setdefault(e.category, []).append(e)
    return by
