"""A text whose lines were run together into paragraphs, read line by line again (pure, and a stream that applies
it).

A log pasted into a forum, a wiki or a chat outside a code block is rendered as markdown paragraphs: the lines of a
paragraph are joined, their leading and trailing blanks taken off (CommonMark 0.31.2, 4.8 "Paragraphs"), and each
line ending shown as a space (6.13 "Soft line breaks"). A user who copies the rendered page back gets each
paragraph as one long line: twenty NCCL records, a ``dmesg`` excerpt or a ``dcgmi diag`` table in one line. Read as
it stands, such a line is one record: the readers that read a record from the start of a line (the NCCL log reader,
a kernel line's time, a table's rows) see only the first, and the failure lexicon reads the rest as the message of
the first.

:func:`split` gives each such line back as its records. A record's start in the middle of a line, after a space,
begins a new line:

- a line's records are told by the start its first record has (the start at the line's head, else the first one
  in it): an NCCL record's ``host:pid:tid [dev] `` prefix, a kernel time (``[  123.456789]``, ``dmesg -T``'s
  ``[Wed May  1 12:00:00 2024]``), a syslog time (``May  1 12:00:00``), an ISO time, a launcher's rank prefix
  (``[rank3]:``, ``[default0]:``, ``[1,3]<stderr>:``). The line is cut before each later start of that kind, where
  the line holds two or more of them, or starts with one and holds one more; the text before a start of another
  kind is the start's own prefix (a syslog line's ``host kernel:`` before a kernel time; a time before an NCCL
  record), never cut. Where the first record has a label before its start (``node017: ``), a later start with
  the same label before it is cut before the label;
- a Python ``Traceback (most recent call last):`` after the text of a record begins a new line;
- a table's rows (``| ... |``, ``+---+``: ``nvidia-smi``, ``dcgmi diag``) are cut where one row's closing bar and
  the next one's opening bar stand a space apart (``| |``, ``+ |``, ``| +``), in a line that starts with a row or
  holds two such joints.

- a key-value output's fields (``ibstat``'s ``CA 'mlx5_0'``, ``Port 1:``, ``State: Active``; ``ibv_devinfo``'s
  ``hca_id:``, ``port:``, ``state:``; ``lspci -vvv``'s ``LnkCap:``, ``LnkSta:``) are cut before each of the
  output's own keys, in a line that holds the output's head (``CA '...'``, ``hca_id:``, a PCIe capability's field)
  and two of its keys or more after a blank (:data:`_FIELDS`: the keys the ``paste/kinds`` of those outputs read);
  ``nvidia-smi -q``'s report (``ECC Errors``, ``Fabric``, ``CliqueId   :``) before each key of the real reports'
  vocabulary and each section title before a key. Where each line held a list's marker (``- hca_id: mthca0 -
  transport: ...``), the cut is before the marker.

A line is never cut where it holds one start of its kind and does not begin with it, nor inside a record's
prefix. The lines after a line cut are cited as many lines further on. Every expression runs in time linear in
the line's length, and a text whose first 256 KiB hold no such line is handed on as it comes
(:class:`nccldiag.nccl.encoded.Mapped`), so a log that was not run together pays one pass over its start: by
Hyperscan, where it is installed, with the expressions loosened (:func:`gated`), Python's search only where that
finds a line.
"""
from __future__ import annotations

import bisect
import re
from typing import IO, Any, List

from nccldiag import rx
from nccldiag.nccl.encoded import Mapped
from nccldiag.nccl.records import _lines_end

# a record's start, each of its kind: an NCCL record's prefix, NCCL's level with no prefix (a source file's line
# before it), a kernel time, dmesg -T's, a syslog time with its host and process, an ISO time, a launcher's rank
_KINDS = (
    ("nccl", rb"[\w.<>-]{0,253}:\d{1,10}:\d{1,10} \[-?\d{1,4}\] "),
    ("bare", rb"(?:[\w./-]{1,200}\.\w{1,4}: ?\d{1,6} )?NCCL (?:INFO|WARN|TRACE) "),
    ("kernel", rb"\[ {0,12}\d{1,10}\.\d{3,9}\] "),
    ("dmesg", rb"\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "),
    ("syslog", rb"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,253} [\w./-]{1,64}(?:\[\d{1,10}\])?: "),
    ("iso", rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?[ \t|]"),
    ("rank", rb"\[(?:rank|default)\d{1,6}\]:|\[\d{1,6},\d{1,6}\]<std(?:out|err)>:"),
)
_TRACEBACK = rb"Traceback \(most recent call last\):"
_AFTER_BLANK = rb"(?:^|(?<=[ \t]))"
_STARTS = rx.compile(_AFTER_BLANK + rb"(?:" + rb"|".join(rb"(?P<%s>%s)" % (k.encode(), p) for k, p in _KINDS)
                     + rb"|(?P<tb>" + _TRACEBACK + rb"))")
# a line's label: a host's or a launcher's (``node017: ``, ``192.168.11.119: ``, ``[trainer3]:``, ``3: ``); a
# progress bar's description before its percentage and bar (tqdm's ``fp4_gemm:  82%|``, repeated at each update
# of a bar whose carriage returns a paste lost) is none
_LABEL_FORM = (rb"\[[^\]\s]{1,64}\]:|(?!\d{1,64}: )[^\s:\[\d]{0,63}\d[^\s:\[]{0,63}: "
               rb"(?! {0,3}\d{1,3}(?:\.\d{1,3})?%\|)")
_LABEL = rx.compile(_LABEL_FORM)
# where two table rows were joined: one row's closing bar (or border's corner) after a cell's text and a blank or
# after a padded cell's blanks, a space, the next one's opening; a bar right after another bar and one blank closes
# an empty cell, no row ('| | | MIG M. |': a row whose blanks a page collapsed, its first cells empty), nor does
# the bar a row opens after its indent (:func:`_joints`)
_JOINT_FORM = rb"(?<=[^|+\s][-= ][|+]|  [|+]) (?=\|[-= ]|\+[-=])"
_JOINT = rx.compile(_JOINT_FORM)
_TABLE_HEAD = rx.compile(rb"[ \t]{0,12}[|+][-= ]")
# nvidia-smi -q's keys and section titles, as its real reports print them (every one in the captures of
# ../shared/fixtures/node/nvidia-smi-q and nvidia-smi-ecc-rowremap: drivers 460 to 560, A100, A10, H100, RTX 4090,
# TITAN V): a report is a tree of 'Key      : value' lines under titles, each key padded with blanks to the colon
# (one blank where a page collapsed them). A rendered page runs a report's lines into one; it is cut before each
# key followed by its colon, and before each title followed by a key (or by one or two titles, then a key), where
# the line holds one of the report's own heads (:data:`_SMI_HEAD`). Longer names first, so that 'SRAM
# Uncorrectable Parity' is one key, not 'SRAM Uncorrectable' and a value.
_SMI_KEYS = (
    "Memory Max Operating T.Limit Temp", "Invalid HW Power Brake Slowdown", "GPU Max Operating T.Limit Temp",
    "Accounting Mode Buffer Size", "Applications Clocks Setting", "Drain and Reset Recommended",
    "Invalid HW Thermal Slowdown", "Remapping Failure Occurred", "SRAM Uncorrectable SEC-DED",
    "GPU Shutdown T.Limit Temp", "GPU Slowdown T.Limit Temp", "Memory Max Operating Temp",
    "SRAM Uncorrectable Parity", "HW Power Brake Slowdown", "Power Management Object", "Replay Number Rollovers",
    "SRAM Threshold Exceeded", "vGPU Heterogeneous Mode", "GPU Max Operating Temp", "GPU Target Temperature",
    "Pending Page Blacklist", "Display Clock Setting", "Relaxed Ordering Mode", "Requested Power Limit",
    "Sparse Operation Mode", "Atomic Caps Outbound", "Enforced Power Limit", "GSP Firmware Version",
    "Product Architecture", "SRAM Microcontroller", "Atomic Caps Inbound", "Compute instance ID",
    "Current Power Limit", "Default Power Limit", "HW Thermal Slowdown", "Invalid HW Slowdown",
    "Memory Current Temp", "Replays Since Reset", "SW Thermal Slowdown", "Uncorrectable Error",
    "Virtualization Mode", "Auto Boost Default", "DRAM Uncorrectable", "SRAM Uncorrectable", "Board Part Number",
    "Correctable Error", "GPU Shutdown Temp", "GPU Slowdown Temp", "Performance State", "DRAM Correctable",
    "GPU Current Temp", "GPU T.Limit Temp", "Latest Timestamp", "Persistence Mode", "Power Management",
    "SRAM Correctable", "Accounting Mode", "Active Sessions", "Addressing Mode", "Average Latency",
    "FRU Part Number", "GPU Part Number", "GPU instance ID", "Latest Duration", "Max Power Limit", "Min Power Limit",
    "Used GPU Memory", "Base Classcode", "Device Current", "Display Active", "Double Bit ECC", "Driver Version",
    "Host VGPU Mode", "MultiGPU Board", "Reset Required", "Single Bit ECC", "Texture Memory", "Texture Shared",
    "Attached GPUs", "Device Memory", "Image Version", "Product Brand", "Register File", "Remapped Rows",
    "Rx Throughput", "Serial Number", "Sub Classcode", "Sub System Id", "Tx Throughput", "VBIOS Version",
    "CUDA Version", "Compute Mode", "Display Mode", "GPU C2C Mode", "Minor Number", "Product Name", "SW Power Cap",
    "Average FPS", "ClusterUUID", "HW Slowdown", "Power Limit", "Auto Boost", "Device Max", "ECC Object",
    "OEM Object", "Power Draw", "Process ID", "SRAM Other", "Sync Boost", "Bandwidth", "Device Id", "Fan Speed",
    "Module ID", "Processes", "SRAM PCIE", "Timestamp", "Board ID", "CliqueId", "Firmware", "GPU UUID", "Graphics",
    "Host Max", "L1 Cache", "L2 Cache", "Reserved", "Current", "Decoder", "Encoder", "Partial", "Pending", "SRAM L2",
    "SRAM SM", "Bus Id", "Device", "Domain", "Memory", "Status", "State", "Total", "Video", "Free", "High", "Idle",
    "JPEG", "Name", "None", "Type", "Used", "Bus", "CBU", "EGM", "Gpu", "Low", "Max", "OFA", "SM",
)
_SMI_TITLES = (
    "Aggregate Uncorrectable SRAM Sources", "Conf Compute Protected Memory Usage",
    "Bank Remap Availability Histogram", "Default Applications Clocks", "GPU Memory Power Readings",
    "Max Customer Boost Clocks", "Inforom BBX Object Flush", "Clocks Throttle Reasons", "GPU Virtualization Mode",
    "Module Power Readings", "Clocks Event Reasons", "Applications Clocks", "GPU Operation Mode",
    "GPU Power Readings", "BAR1 Memory Usage", "GPU Reset Status", "Deferred Clocks", "FB Memory Usage",
    "Inforom Version", "PCIe Generation", "Power Readings", "Encoder Stats", "GPU Link Info", "Remapped Rows",
    "Retired Pages", "Capabilities", "Clock Policy", "Driver Model", "Bridge Chip", "Temperature", "Utilization",
    "Double Bit", "ECC Errors", "Link Width", "Max Clocks", "Single Bit", "Aggregate", "FBC Stats", "Processes",
    "ECC Mode", "Ecc Mode", "MIG Mode", "Volatile", "Voltage", "Clocks", "Fabric", "Health", "IBMNPU", "PCI",
)


def _alternation(names) -> bytes:
    return b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))


_SMI_KEY = rb"(?:%s)[ \t]{1,40}:(?=[ \t]|$)" % _alternation(_SMI_KEYS)
_SMI_TITLE = rb"(?:%s)(?= (?:(?:%s) ){0,2}%s)" % (_alternation(_SMI_TITLES), _alternation(_SMI_TITLES), _SMI_KEY)
_SMI_HEAD = (rb"NVSMI LOG|nvidia-smi -q|ECC Errors|Remapped Rows|Retired Pages|Clocks (?:Event|Throttle) Reasons|"
             rb"(?:Attached GPUs|Driver Version|Product Name|CliqueId|ClusterUUID|Replays Since Reset|Remapping Failure Occurred|"
             rb"(?:SRAM|DRAM) (?:Correctable|Uncorrectable)|(?:Single|Double) Bit ECC|VBIOS Version)[ \t]{1,40}:")
# key-value outputs a rendered page ran together: (head, key); a line holding the head is cut before each key that
# follows a blank, where two keys or more do. ibstat's keys are infiniband-diags' ibstat.c (ca_dump, port_dump);
# ibv_devinfo's rdma-core's libibverbs/examples/devinfo.c (print_hca_cap without -v: a port's 'port:' before its
# number, its 'state:' before PORT_<state>; another tool's 'phys state:' in the same paragraph is not one); lspci
# -vvv's the PCI Express and ACS capabilities' fields (pciutils' ls-caps.c, ls-ecaps.c) and each capability's
# 'Capabilities: [<offset>]' line. Each is a key the kind of nccldiag/paste/kinds reads at a line's head (ibstat.py,
# ibv_devinfo.py, lspci.py); nvidia-smi -q's, its report's keys and titles (above).
_FIELDS = (
    (rb"CA '[^'\n]{1,200}'",
     rb"CA '[^'\n]{1,200}'|(?:CA type|Number of ports|Firmware version|Hardware version|Node GUID|System image GUID|"
     rb"Port \d{1,4}|State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|Link layer):(?= |$)"),
    (rb"hca_id:",
     rb"(?:hca_id|transport|fw_ver|node_guid|sys_image_guid|vendor_id|vendor_part_id|hw_ver|board_id|phys_port_cnt|"
     rb"max_mtu|active_mtu|sm_lid|port_lid|port_lmc|link_layer):(?=[ \t]{1,40}\S)|port:(?=[ \t]{1,40}\d)|"
     rb"state:(?=[ \t]{1,40}PORT_)"),
    (rb"(?:Lnk|Dev|ACS)(?:Cap|Ctl|Sta)2?:",
     rb"(?:(?:Lnk|Dev|Slt|Root)(?:Cap|Ctl|Sta)2?|ACS(?:Cap|Ctl)):(?=[ \t])|Capabilities: \[[0-9a-f]{1,4}"),
    (_SMI_HEAD, rb"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f](?= |$)|" + _SMI_KEY + rb"|"
     + _SMI_TITLE),
)
_FIELD_HEADS = [rx.compile(h) for h, _ in _FIELDS]
_FIELD_KEYS = [rx.compile(rb"(?<= )(?:" + k + rb")") for _, k in _FIELDS]
# a line that may hold several records: two starts of one kind, a traceback after a record's text, two table rows,
# its label twice (each search linear in the line's length: the second start is the first's form again)
_GATE = rx.compile(rb"(?m)" + rb"|".join(
    [_AFTER_BLANK + rb"(?:%s)[^\n]* (?:%s)" % (p, p) for _, p in _KINDS]
    + [rb"[^:\s] " + _TRACEBACK, _JOINT_FORM, rb"^(" + _LABEL_FORM + rb")[^\n]* \1"]))
# a key-value output's head anywhere in a text: its lines are then searched for the output's keys (:func:`_field_cuts`)
_FIELD_GATE = rx.compile(rb"|".join(rb"(?:%s)" % h for h, _ in _FIELDS))
# a traceback's frame, after a blank
_FRAME = rx.compile(rb" (?=File \"[^\"\n]{1,4096}\", line \d)")
# the exception a traceback ends with, after its last frame
_RAISED = rx.compile(rb" (?=(?:[A-Za-z_]\w{0,64}\.){0,8}[A-Z]\w{0,64}(?:Error|Exception|Exit|Interrupt):)")
_WORD = rx.compile(rb"[A-Za-z]{3}")
_MARKER = rx.compile(rb"(?:[-*+]|\xe2\x80\xa2) ")  # a list's marker at a line's head: '- ', '* ', '+ ', '\u2022 '
_DIGITS = rx.compile(rb"[\d ]+")
MAX_LABEL = 64  # a label before the first record's start longer than this is text, not a label


def _starts(line: bytes) -> List[tuple]:
    """(position, kind, end) of every record start in ``line`` at its head or after a blank."""
    return [(m.start(), m.lastgroup, m.end()) for m in _STARTS.finditer(line)]


_TIMES = ("dmesg", "syslog", "iso")  # a time in a message is a record's start only where it is written as the first


def _form(line: bytes, found: tuple) -> bytes:
    """How a time is written (its digits and blanks each one ``0``): the times that start a paragraph's records are
    all written alike, a time quoted in a message seldom as the record's own."""
    return _DIGITS.sub(b"0", line[found[0]:found[2]])


def _kinds(line: bytes, found: List[tuple], starts: List[int], lo: int, hi: int, used: frozenset,
           cuts: List[int]) -> None:
    """Cut ``line[lo:hi]`` (one record or several) before the later starts of its records' kind, and each piece so
    cut before the starts of the next kind that recurs in it (a launcher's label before each line of a
    traceback), kind by kind. ``starts``: the positions of ``found``, made once for the line (each call reads only
    its own piece of them, so that the cuts stay linear in the line's length)."""
    inside = [f for f in found[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
              if f[1] not in used and f[1] != "tb"]
    if not inside:
        return
    kind = inside[0][1]
    form = _form(line, inside[0]) if kind in _TIMES else b""
    same = [f for f in inside if f[1] == kind and (not form or _form(line, f) == form)]
    used = used | {kind}
    if len(same) < 2:
        _kinds(line, found, starts, lo, hi, used, cuts)
        return
    first = same[0][0]
    label = line[lo:first] if lo < first <= lo + MAX_LABEL and _LABEL.fullmatch(line[lo:first]) else b""
    bounds = [lo]
    headed = bool(label) or first == lo  # the piece starts with its first record (and its label)
    text_from = same[0][2] if headed else lo  # where the text of the record before the next cut begins
    for at, _, end in same[1:] if headed else same:
        cut = at
        if label and at - len(label) > lo and line[at - len(label):at] == label:
            cut = at - len(label)
        if cut > lo and _whole(line[text_from:cut]):
            bounds.append(cut)
        text_from = end
    cuts += bounds[1:]
    for a, b in zip(bounds, bounds[1:] + [hi]):
        _kinds(line, found, starts, a, b, used, cuts)


def _whole(text: bytes) -> bool:
    """Whether ``text`` is the text of a record: not blank, and not a prefix waiting for its record (a label, a
    logging library's ``- INFO -``, a separator)."""
    text = text.strip()
    if not text or text[-1:] in (b"-", b"|"):
        return False
    # 'Traceback (most recent call last):' is one; '[rank0]:', '  1 | 1:' are not
    return text[-1:] != b":" or b" " in text and bool(_WORD.search(text))


def _cuts(line: bytes) -> List[int]:
    """Where ``line`` is cut into its records (positions, ascending; none where it is one record)."""
    found = _starts(line)
    cuts: List[int] = []
    m = _LABEL.match(line)
    if m:  # the line's own label before each of its records ('node017: ', '[trainer3]:')
        label = m.group()
        at_from = len(label)
        for at in _occurrences(line, b" " + label, len(label)):
            if _whole(line[at_from:at]):
                cuts.append(at)
            at_from = at + len(label)
    if found:
        bounds = sorted(set([0] + cuts))
        starts = [f[0] for f in found]
        for a, b in zip(bounds, bounds[1:] + [len(line)]):
            _kinds(line, found, starts, a, b, frozenset(), cuts)
        tbs = [(at, end) for at, kind, end in found if kind == "tb"]
        ends = [at for at, _ in tbs[1:]] + [len(line)]
        placed = sorted(set(cuts))
        for (at, end), tb_end in zip(tbs, ends):
            before_at = placed[bisect.bisect_left(placed, at) - 1] if bisect.bisect_left(placed, at) else 0
            if at > 0 and _FRAME.search(line, end, tb_end) and _whole(line[before_at:at]) and \
                    b" " in line[before_at:at].strip():
                cuts.append(at)  # a traceback run together with its frames, after a record's text
            later = bisect.bisect_right(placed, at)
            if later < len(placed):
                tb_end = min(tb_end, placed[later])
            frames = []
            text_from = at
            for f in _FRAME.finditer(line, end, tb_end):
                at_f = f.start() + 1
                i = bisect.bisect_left(placed, at_f)
                start = max(text_from, placed[i - 1] if i else 0)
                if _whole(line[start:at_f]):
                    frames.append(at_f)
                text_from = at_f
            cuts += frames
            last = None
            for e in _RAISED.finditer(line, frames[-1] if frames else end, tb_end):
                last = e.start() + 1
            if frames and last:
                cuts.append(last)  # the exception the traceback ends with
    joints = _joints(line)
    if joints and (len(joints) >= 2 or _TABLE_HEAD.match(line)):
        cuts += joints
    return sorted(set(c for c in cuts if 0 < c < len(line)))


def _joints(line: bytes) -> List[int]:
    """Where ``line`` joins two table rows (:data:`_JOINT`), each plus one: never after the bar a row opens after
    its indent (its first non-blank)."""
    first = len(line) - len(line.lstrip(b" \t"))
    return [j.start() + 1 for j in _JOINT.finditer(line) if j.start() - 1 != first]


def _field_cuts(line: bytes) -> List[int]:
    """Where ``line`` is cut before a key-value output's keys (:data:`_FIELDS`): none unless it holds the output's
    head and two of its keys after a blank. A bulleted paragraph (a list's marker before each of its lines, the
    line starting with one) is cut before the marker that stands before a key."""
    cuts: List[int] = []
    marker = _MARKER.match(line)
    bullet = b" " + marker.group() if marker else b""
    for head, key in zip(_FIELD_HEADS, _FIELD_KEYS):
        if head.search(line):
            keys = [k.start() for k in key.finditer(line)]
            if len(keys) >= 2:
                cuts += [k - len(bullet) + 1 if bullet and (k == len(bullet) - 1 or line[k - len(bullet):k] == bullet)
                         else k for k in keys]
    return cuts


def _occurrences(line: bytes, needle: bytes, skip: int) -> List[int]:
    """The positions of ``needle`` in ``line``, each plus one (after its leading blank)."""
    out = []
    at = line.find(needle, skip)
    while at >= 0:
        out.append(at + 1)
        at = line.find(needle, at + len(needle))
    return out


# :data:`_GATE` loosened into expressions Hyperscan compiles (no look-behind, look-ahead or back-reference): every
# text :data:`_GATE` matches, these match too; a text none of them matches is handed on without Python's search of
# it, which reads a job's output at about 3 MB/s (0.07 s for the 256 KiB that decide a file), where Hyperscan takes
# under a millisecond
_LOOSE_LABEL = rb"\[[^\]\s]{1,64}\]:|[^\s:\[\d]{0,63}\d[^\s:\[]{0,63}: "
_LOOSE = ([rb"(?:%s)[^\n]* (?:%s)" % (p, p) for _, p in _KINDS]
          + [rb"[^:\s] " + _TRACEBACK, rb"[-= ][|+] (?:\|[-= ]|\+[-=])", rb"^(?:%s)[^\n]* (?:%s)" % ((_LOOSE_LABEL,) * 2)])
_LOOSE_DB: List[Any] = []  # the database, or None where Hyperscan does not import or compile them


def _loose_db() -> Any:
    if not _LOOSE_DB:
        db = None
        try:
            import hyperscan

            from nccldiag import hscache

            one = hyperscan.HS_FLAG_SINGLEMATCH
            db = hscache.database(hyperscan, _LOOSE, range(len(_LOOSE)),
                                  [one] * (len(_LOOSE) - 1) + [one | hyperscan.HS_FLAG_MULTILINE])
        except Exception:  # not installed, no wheel for this platform, or an expression it cannot compile
            db = None
        _LOOSE_DB.append(db)
    return _LOOSE_DB[0]


def gated(data: bytes) -> bool:
    """Whether ``data`` holds a line that may hold several records (:data:`_GATE`): searched by Python only where
    Hyperscan, with the same expressions loosened, finds one (or is not installed)."""
    db = _loose_db()
    if db is not None:
        found: List[bool] = []
        try:
            db.scan(data, match_event_handler=lambda *_a: found.append(True) or True)
        except Exception:  # ended by its first match (as some versions report it), or failed: Python searches
            found.append(True)
        if not found:
            return False
    return _GATE.search(data) is not None


def split(data: bytes) -> bytes:
    """``data`` (whole lines) with each line run together from several cut back into them (see the module's
    docstring)."""
    fields = _FIELD_GATE.search(data) is not None
    if not fields and not gated(data):
        return data
    out = []
    for line in data.split(b"\n"):
        cuts = _cuts(line) if _GATE.search(line) else []
        if fields:
            cuts = sorted(set(cuts + [c for c in _field_cuts(line) if 0 < c < len(line)]))
        if cuts:
            pieces = [line[a:b].rstrip(b" \t") for a, b in zip([0] + cuts, cuts + [len(line)])]
            line = b"\n".join(p.lstrip(b" ") for p in pieces)
        out.append(line)
    return b"\n".join(out)


def split_text(text: str) -> str:
    """:func:`split` of a text."""
    data = text.encode("utf-8", "surrogateescape")
    got = split(data)
    return text if got == data else got.decode("utf-8", "surrogateescape")


class Splitting(Mapped):
    """A binary stream read through :func:`split`, a line at a time (a line cut by a read waits for its end)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(stream, split, _lines_end)
