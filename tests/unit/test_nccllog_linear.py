"""The NCCL log reader takes time linear in the length of a line, and reads normal lines as before.

A log is not trusted: a line may be 64 KiB (MAX_LINE) of whatever makes a regular expression try a long run at
every position, or scan to the end of the line from each of many starts. Here, without fixtures:

* each expression rewritten to be linear finds what it found before (on lines a few hundred characters long, where
  the expressions as they were finish quickly): the same match and groups, or the same answer where only the
  answer is used;
* long and pathological lines, generated and known, go through ``parse`` and through ``nccldiag log``'s filtered
  path within a budget 100 times what a line of the same length that says nothing costs, measured in CPU time
  in the same process, and both paths give the same facts.
"""
import io
import re
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nccldiag.nccl import grammar, parser, ras, scan
from nccldiag.nccl.facts import MAX_LINE

# The expressions as they were before they were made linear (each quadratic, or worse, on some long line): the
# reference that the grammar's expressions are compared with on short lines. How: "match" compares the first
# match and its groups, "all" every match of finditer, "bool" whether there is one (all that is used of it).
BEFORE = {
    "PREFIX": ("all", r"(?P<host>[A-Za-z0-9_.<>\-]*):(?P<pid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}):"
                      r"(?P<tid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}) (?:\[(?P<dev>-?\d+)\] (?:\d{1,12}\.\d{1,9} )?"
                      r"(?:(?P<file>[\w./+\-]+):(?P<fline>\d+) (?:\((?P<func>[^()\s]*)\) )?)?"
                      r"(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)|NCCL (?P<call>CALL))(?= |$)"),
    # a list marker before any line ('- ' as well as '* ', '+ ', '• '): a forum's or an editor's list around a paste
    "_BULLET": ("match", r"^\s*(?:[*+•]|-(?=\s+\S))\s+"),
    "_SOCK_IF": ("all", r"(?:\[(?P<idx>\d+)\])?(?P<name>[^\s:\[\]]+):(?P<addr>\S+)"),
    "_OLD_IB_PORT": ("match", r"(?P<name>[\w\-]+)/(?P<port>\d+)(?:\((?P<dist>\w+)\))?"),
    "_LOADED_PLUGIN": ("match", r"\bLoaded (?P<kind>net|collnet|coll) plugin (?P<v>.+?)\s*$"),
    "_ENV": ("match", r"\b(?P<name>[A-Z][A-Z0-9_]{2,}) set by environment to (?P<value>.*?)\s*$"),
    "_TORCH_OLD": ("match", r"\bNCCL Error (?P<code>\d+): (?P<msg>.+?)\s*$"),
    "_COUNTS": ("match", r"(?P<coll>\d+) coll channels, (?:(?P<collnet>\d+) collnet channels, )?"
                         r"(?:(?P<nvls>\d+) nvls channels, )?(?P<p2p>\d+) p2p channels, (?P<ppp>\d+) p2p channels per peer"),
    "_WD_FIELD": ("all", r"(?P<k>\w+(?:\(ms\))?)=(?P<v>[^,\s)]+)"),
    "_WD_RANK": ("match", r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\]\s*Watchdog|\[Rank (?P<rank2>\d+)\]"),
    "_TORCH_ERR": ("match", r"NCCL error in: (?P<where>\S+?),\s*(?P<msg>.*?)(?:, NCCL [vV]ersion (?P<ver>[\d.]+\w*))?\s*$"),
    "_TESTS_FAIL": ("match", r"(?:(?P<host>[\w.\-]+): )?(?:Test NCCL failure (?P<where>\S+)|"
                             r"(?<!\S)NCCL failure (?P<old>[\w./\-]+\.cu:\d+)) '(?P<msg>[^']*)"),
    "_TESTS_CUDA": ("match", r"(?:(?P<host>[\w.\-]+): )?(?:Test CUDA failure (?P<where>\S+)|"
                             r"(?<!\S)Cuda failure (?P<old>[\w./\-]+\.cu:\d+))(?:\s+'(?P<msg>[^']*)'?)?\s*$"),
    "_INIT": ("match", r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cdev>-?\d+)"
                       r"(?: nvmlDev (?P<nvml>-?\d+))?(?: busId (?P<bus>[0-9a-fA-F]+))?(?: commId (?P<cid>0x[0-9a-fA-F]+))?"
                       r"(?: localSize \d+)?.*?- Init (?P<phase>START|COMPLETE)"),
    "_WATCHDOG": ("match", r"Watchdog caught collective operation timeout: WorkNCCL\((?P<body>.*?)\)\s*ran for "
                           r"(?P<ran>\d+) milliseconds"),
    "_BENCH_START": ("bool", r"^\s*#?\s*(?:nThread\b|Collective test starting|Using devices|(?:size|bytes)\s+(?:count|N)\b|"
                             r"Out of bounds values\s*:|Avg bus bandwidth\s*:)"
                             r"|^\s*\d+\s+\d+\s+(?:float|half|double|u?int\d*|bfloat16|fp8\w*|char|f\d+|bf16)\s+\S"
                             r"|\b(?:BW|Lat(?:ency)?) Test\b|P2P=(?:Enabled|Disabled) Bandwidth\b"),
    "_UNPREFIXED": ("bool", r"\b(?:Channel|Ring) \d+(?:/\d+)? : (?:\d+(?:\[[0-9a-fA-F]+\])? -> .* via |\s*\d+(?:\s+\d+)*\s*$)"
                            r"|\bUsing network \S|\bNET/[\w\-]+(?:/[\w\-]+)? ?: Using\b|\bNCCL_[A-Z0-9_]+ set by environment to "
                            r"|- Init (?:START|COMPLETE)|\bNVLS multicast support is|\bNVLS comm 0x"
                            r"|\bcomm 0x[0-9a-fA-F]+ rank \d+ nRanks \d+|\bBootstrap ?: Using\b|\d+ coll channels, "
                            r"|\bConnected all (?:rings|trees)|\bGPU Direct RDMA (?:Enabled|Disabled) for"
                            r"|\bNET/Plugin ?: \S|\bLoaded (?:net|collnet|coll) plugin \S|\bP2P plugin \S|\bPlugin Path : \S"
                            r"|\bcudaDriverVersion \d+"),
    "_ERROR_TEXT": ("bool", r"\b(?:[Ee]rror|ERROR|[Ff]ail(?:ed|ure|s)?|FAIL(?:ED|URE)?|[Ff]atal|FATAL|[Ee]xception|Traceback|"
                            r"[Tt]imed? ?out|[Rr]efused|[Uu]nreachable|[Aa]bort(?:ed|ing)?|[Kk]illed|[Ss]egmentation fault|"
                            r"core dumped|not supported|[Uu]nable to|[Cc]annot|[Cc]an't|[Cc]ould not|[Cc]ouldn't|[Cc]an’t|[Cc]ouldn’t|[Dd]enied|"
                            r"[Nn]o such|[Ii]nvalid|[Mm]ismatch|out of memory|busy or unavailable|[Ii]nsufficient|not found|"
                            r"Unknown Error|is neither AF_INET|Duplicate GPU detected|terminate called after throwing|fi_getinfo|"
                            r"No space left on device|Disk quota exceeded|In use by another client|is corrupted|"
                            r"is not compatible with the current PyTorch installation|install supports CUDA capabilities|duplicate mac found|"
                            r"no CUDA-capable device is detected|double free or corruption|corrupted unsorted chunks|"
                            r"corrupted size vs\. prev_size|corrupted double-linked list|unaligned tcache chunk|"
                            r"unaligned fastbin chunk|unaligned chunk detected in tcache|malloc\(\): memory corruption|"
                            r"corrupted top size|double free detected in tcache|double linked list corrupted|"
                            r"mismatching next->prev_size|too many chunks detected in tcache|chunks in smallbin corrupted|"
                            r"Event Queue overflow detected|no userspace device-specific driver found|PCIPassthru: total number of pages needed|"
                            r"do not have the same subnet_prefix|"
                            r"Detected Hardware Unit Hang|Detected Tx Unit Hang|Reset adapter unexpectedly|tx_timeout recovery level|PORT_DOWN)\b"),
    "_KERNEL_TEXT": ("bool", r"NVRM:|\bXid\b|AMD-Vi|\bDMAR\b|IO_PAGE_FAULT|nv_peer_mem|nvidia[-_]peermem|PCIe Bus Error|"
                             r"\bAER\b|\bmlx\d_(?:core|ib|en)\b|fallen off the bus|\bib_umad\b|nv-fabricmanager|"
                             r"[Ff]abric ?[Mm]anager"),
    "_QUOTED_WARN": ("bool", r"Error while creating shared memory segment \S|[Ff]ailed to extend /dev/shm/\S|"
                             r"Call to posix_fallocate failed|Call to shm_open failed|"
                             r"(?:socket|ncclOsSocket)StartConnect: [Cc]onnect to \S{1,300} (?:failed : |"
                             r"returned [A-Za-z ]{1,60}(?:, exceeded|$))|"
                             r"(?:socket|ncclOsSocket)PollConnect: [Cc]onnect to \S{1,300} (?:failed : |"
                             r"returned -?[0-9]{1,4}\(|returned [A-Za-z ]{1,60}(?:, exceeded|$))|"
                             r"(?:socket|ncclOsSocket)PollConnect to \S{1,300} failed with error "),
    "_RAS_START": ("bool", r"^\s*(?:NCCL version \S+ compiled with CUDA|Job summary\s*$|Communicators\.\.\."
                           r"|\{\s*$|\"communicators_count\"\s*:)"
                           r"|job process(?:es)? (?:is|are) considered dead \(unreachable via the RAS network\)"
                           r"|Missing communicator data from \d+ (?:job process|rank)"),
    "_NOTES.ib_no_active_port": ("bool", r"NET/IB ?: .*(?:no active|No active) port"),
    "WARN_KINDS.ibv": ("match", r"Call to (?P<fn>ibv_\w+) failed(?: with error (?P<err>[^\n]*?))?(?: errno \d+)?\s*$"),
    "WARN_KINDS.ib_completion": ("match", r"Got completion from peer .*?status=(?P<status>\d+)"),
    "WARN_KINDS.socket_connect": ("bool", r"socketStartConnect|Connect to .* failed|Connection refused|"
                                          r"Network is unreachable|Connection timed out|neither AF_INET"),
    "ras._PROCESS": ("match", r"^\s*Process (?P<pid>\d+) on node (?P<node>\S+) managing GPUs? (?P<gpus>.+?)\s*$"),
}


def now(name: str):
    """The grammar's expression named ``name`` (a module attribute, or a row of WARN_KINDS or _NOTES)."""
    table, _, kind = name.partition(".")
    if not kind:
        return getattr(grammar, name)
    if table == "ras":
        return getattr(ras, kind)
    rows = grammar.WARN_KINDS if table == "WARN_KINDS" else grammar._NOTES
    return next(r[-1] for r in rows if r[0] == kind)


def _found(m):
    return None if m is None else (m.span(), m.groupdict(), m.groups())


def _texts(old: "re.Pattern[str]", new) -> st.SearchStrategy:
    """Short lines around what both expressions read: matches of either, and their words shuffled with blanks."""
    full = getattr(new, "full", new)
    words = sorted(set(re.findall(r"[A-Za-z0-9_ /:.\-=,\[\]()'<>{}#]+", re.sub(r"\\.", " ", old.pattern))))
    pieces = st.lists(st.sampled_from(words + [" ", "  ", "0", "12", "a", ":", "[", "]", "(", ")", "'", ",", "=", "-",
                                               "/", ".", "_", "\t", "x1", " via "]), max_size=24).map("".join)
    line = st.one_of(st.from_regex(old), st.from_regex(full), pieces,
                     st.tuples(st.from_regex(old), pieces, st.from_regex(full)).map("".join))
    return line.map(lambda s: s.replace("\n", " ")[:400])


@pytest.mark.parametrize("name", sorted(BEFORE))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_each_expression_made_linear_reads_a_normal_line_as_before(name, data):
    how, pattern = BEFORE[name]
    old, new = re.compile(pattern), now(name)
    text = data.draw(_texts(old, new))
    if how == "bool":
        assert bool(old.search(text)) == bool(new.search(text)), text
    elif how == "all":
        assert [_found(m) for m in old.finditer(text)] == [_found(m) for m in new.finditer(text)], text
    else:
        before = old.search(text)
        if name == "_WD_RANK":  # a '[' inside the part before 'Rank' is no longer scanned over
            assume(before is None or "[" not in before.group(0)[1:])
        assert _found(before) == _found(new.search(text)), text


# ---- long lines


def cpu(fn) -> float:
    """The least CPU time of three calls of ``fn``."""
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def read_both(line: str, before: str = ""):
    data = (before + line + "\n").encode("utf-8", "surrogatepass")
    return (parser.parse_streams([("long.log", io.BytesIO(data))]),
            scan.parse_streams([("long.log", io.BytesIO(data))]))


_NORMAL = {}


def normal(length: int) -> float:
    """CPU time of reading a line of ``length`` characters that says nothing (written for this test)."""
    if length not in _NORMAL:
        line = ("the quick brown fox jumps over the lazy dog " * (length // 44 + 1))[:length]
        _NORMAL[length] = max(cpu(lambda: read_both(line)), 0.001)
    return _NORMAL[length]


def within_budget(line: str, before: str = "") -> None:
    """``line`` (after the lines ``before``) is read within 100 times what a line that says nothing costs, and the
    filtered path reads what reading every line reads."""
    took = cpu(lambda: read_both(line, before))
    assert took <= 100 * normal(len(line)), (line[:80], len(line), took, normal(len(line)))
    every, filtered = read_both(line, before)
    assert (every.nccl_lines, every.unprefixed, len(every.errors), len(every.warns)) == \
        (filtered.nccl_lines, filtered.unprefixed, len(filtered.errors), len(filtered.warns))


N = MAX_LINE - 100
# Written for this test: the lines that took minutes to hours before, each about 64 KiB.
KNOWN = {
    "nccl-tests failure": "Test " + "0" * N,
    "watchdog body": "Watchdog caught collective operation timeout: WorkNCCL(" + "a" * N + ") ran for 5 milliseconds",
    "socket interfaces": "h:1:2 [0] NCCL INFO NET/Socket : Using " + "x=" * (N // 2),
    "old IB ports": "h:1:2 [0] NCCL INFO CUDA Dev 0, IB Ports : " + "-0" * (N // 2),
    "bootstrap": "h:1:2 [0] NCCL INFO Bootstrap : Using " + "0," * (N // 2),
    "markdown bullet": "- " + "a:" * (N // 2),
    "host characters": "_" * N,
    "a long rank": "h:1:2 [0] NCCL INFO comm 0x1 rank " + "1" * N + " nRanks 1 nNodes 1 localRanks 1 localRank 0",
    "process group": "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(x) ran for 5 milliseconds " +
                     "[PG " * (N // 4),
    "Init heads": "h:1:2 [0] NCCL INFO " + "comm 0x1 rank 0 nranks 1 cudaDev 0 " * (N // 34) + "- Init FOO",
    "watchdog heads": "Watchdog caught collective operation timeout: WorkNCCL(" * (N // 55),
    "watchdog without its tail": "Watchdog caught collective operation timeout: WorkNCCL(" + "a(ms)" * (N // 10) +
                                 ")" + " " * (N // 2) + "x",
    "PyTorch error blanks": "NCCL error in: a.cc:1, x" + " " * N + "y",
    "environment blanks": "h:1:2 [0] NCCL INFO NCCL_X set by environment to a" + " " * N + "b",
    "merged NICs": "h:1:2 [0] NCCL INFO NET/IB : Using " + "={[0] a:1/IB " * (N // 14),
    "glued prefixes": "h:1:2 [0] NCCL WARN x " * (N // 22),
    "channel heads": "Channel 0 : 0 -> " * (N // 17),
    "channel counts": "0" * N + " coll channels, x",
    "IB completions": "h:1:2 [0] NCCL WARN " + "Got completion from peer " * (N // 25),
    "connects": "h:1:2 [0] NCCL WARN " + "Connect to " * (N // 11),
    "ibv blanks": "h:1:2 [0] NCCL WARN Call to ibv_x failed with error a" + " " * N + "b",
    "no active port": "h:1:2 [0] NCCL INFO " + "NET/IB : " * (N // 9),
    "plugin blanks": "Loaded net plugin a" + " " * N + "b",
    "old PyTorch blanks": "NCCL Error 1: a" + " " * N + "b",
    "ring order": "Channel 00 : " + "1 " * (N // 2) + "x",
    "chain files": "h:1:2 [0] NCCL INFO " + "a." * (N // 2) + " -> 1",
    "benchmark table": "#  nThread 1 " + "1 " * (N // 2),
}
# Lines that start a benchmark output or a RAS report: the lines after them are kept and read by their parsers.
CONTEXTS = {
    "": "", "nccl-tests": "#  nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n",
    "perftest": "                    RDMA_Write BW Test\n",
    "RAS report": "NCCL version 2.24.3 compiled with CUDA 12.8\nJob summary\n===========\n",
}
KNOWN_KEPT = {
    "RAS process blanks": ("RAS report", "INCOMPLETE\n  Process 1 on node x managing GPU a" + " " * N + "b"),
    "RAS collection time": ("RAS report", "Communicators... (" + "1." * (N // 2) + "s)"),
    "nccl-tests average": ("nccl-tests", "# Avg bus bandwidth : " + "1." * (N // 2)),
    "nccl-tests row": ("nccl-tests", "  " + "1" * N + "  2  float  sum  -1  1.0 1.0 1.0 0 1.0 1.0 1.0 0"),
    "perftest row": ("perftest", " 65536      1000          " + "1." * (N // 2) + "            1.0"),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_a_known_pathological_line_is_read_in_linear_time(name):
    within_budget(KNOWN[name])


@pytest.mark.parametrize("name", sorted(KNOWN_KEPT))
def test_a_known_pathological_line_of_a_benchmark_output_or_ras_report_is_read_in_linear_time(name):
    context, line = KNOWN_KEPT[name]
    within_budget(line, CONTEXTS[context])


# Units a long line is made of: the grammar's words, the literal pieces of its expressions, and characters that
# runs of its classes are made of.
_UNITS = sorted(set(grammar.WORDS) | {w for p in BEFORE.values() for w in re.findall(r"[A-Za-z_/:.\-=,\[\]()' ]{2,12}", p[1])}
                | set("a0 .-_:=,/[]()<>{}'x\t;#*"))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(head=st.lists(st.sampled_from(_UNITS), max_size=6).map("".join),
       unit=st.lists(st.sampled_from(_UNITS), min_size=1, max_size=3).map("".join),
       tail=st.lists(st.sampled_from(_UNITS), max_size=6).map("".join),
       prefix=st.sampled_from(["", "h:1:2 [0] NCCL INFO ", "h:1:2 [0] x.cc:1 NCCL WARN ", "- ", "> ", "[rank0]: "]),
       context=st.sampled_from(sorted(CONTEXTS)))
def test_a_long_line_of_repeated_pieces_is_read_in_linear_time(head, unit, tail, prefix, context):
    body = prefix + head
    line = (body + unit * ((N - len(body) - len(tail)) // len(unit)) + tail).replace("\0", " ").replace("\n", " ")
    within_budget(line[:N], CONTEXTS[context])


def test_the_recorded_error_expression_holds_every_error_word():
    """A word added to the reader's error words is added to the recorded expression too: the comparison above draws
    its lines at random, so a word missing there fails it only on some runs."""
    old = re.compile(BEFORE["_ERROR_TEXT"][1])
    assert [w for w in grammar.ERROR_WORDS if not old.search(w)] == []
