"""DCGM's active diagnostics: the result table of ``dcgmi diag``, one finding per test that failed or warned.

``dcgmi diag`` is an active test: it needs the GPUs free (a GPU a job holds fails its tests as "busy or
unavailable"), so ``check``, which must never fail a healthy node at work, does not run it; the table an
administrator ran and pasted into ``nccldiag log`` (whatever its level) reaches this parser through the paste kind
``dcgmi diag``, as does the source file ``dcgmi_diag`` of a bundle.

The table (DCGM's ``Diag.cpp``; docs.nvidia.com/datacenter/dcgm, "dcgmi diag") holds sections
(``Deployment``, ``Integration``, ``Hardware``, ``Stress``), one row per test (``| GPU Memory | Fail - GPU: 0
|``), more results of the same test on rows with an empty first cell (``| | Pass - GPUs: 1, 2 |``), and
message rows (``| Error | ... |``, ``| Warning | ... |``, ``| Info | ... |``, or ``Error: ...`` inside the
result cell) whose text wraps over several rows, cut at the cell's width even inside a word. A message row
belongs to the test above it (an ``Error`` right under a section header stands alone).

What a failed test means (DCGM's plugin pages): a memory test (``GPU Memory``, ``Memory``, ``Memtest``,
``Memory Bandwidth``, ``Page Retirement/Row Remap``) whose messages name uncorrectable errors, row remapping or
page retirement is the GPU's memory errors (``gpu_ecc_rowremap``), otherwise a GPU memory fault
(``gpu_lost_xid``); ``PCIe`` is the link (``pcie_link_aer``); ``NVLink`` the links (``nvlink_error``);
``Diagnostic``, ``SM Stress``, ``Targeted Stress``, ``EUD``, ``Context Create`` a GPU that computes wrong or
not at all (``gpu_lost_xid``); ``Targeted Power`` and ``Pulse Test`` the board's power or cooling
(``other:gpu-power-thermal``; a thermal warning beside another test's failure stays that test's); a deployment
test the node's software set-up (``other:dcgm-deployment``; the fabric manager's is ``fabric_manager``), any
other test ``other:dcgm-diag``. ``Skip`` and ``Pass`` say nothing; ``Info`` rows are quiet.

``dcgmi nvlink -s`` (``--link-status``; DCGM's ``DcgmiNvlink.cpp``), pasted or in a bundle as ``dcgmi_nvlink``:
each GPU's (``gpuId N:``) and NVSwitch's (``physicalId N:``) link states, ``U`` up, ``D`` down, ``X`` disabled,
``_`` not supported (``Key: Up=U, Down=D, Disabled=X, Not Supported=_``). A link Down where others of the node are
Up fails; every link Down and none Up warns (PCIe cards with no NVLink bridge fitted show the same); a Disabled
link warns; all ``nvlink_error``.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, parsed
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "dcgm"
TITLE = "DCGM diagnostics"

SOURCE = Source(
    "dcgmi_diag", ":", timeout=5,
    description="nothing run on the node: dcgmi diag needs the GPUs free; its output pasted to nccldiag log, "
                "or saved in a bundle as dcgmi_diag.txt, is read")
LINK_SOURCE = Source(
    "dcgmi_nvlink", ":", timeout=5,
    description="nothing run on the node: 'dcgmi nvlink -s' (each GPU's and NVSwitch's link states) pasted to "
                "nccldiag log, or saved in a bundle as dcgmi_nvlink.txt, is read")
SOURCES = (SOURCE, LINK_SOURCE)

CHECK = "dcgm.diag"
LINK_CHECK = "dcgm.nvlink"
WRAP = 45  # the characters of a message on one row of the table (DCGM's text output)
_ROW = rx.compile(r"[ \t]{0,40}\|([^|]{0,400})\|([^|]{0,400})\|")
_HEADER = rx.compile(r"[ \t]{0,40}[|+]-{3,40}[ \t]{1,10}([A-Za-z][A-Za-z ]{0,40}?)[ \t]{1,10}-{2,60}\+")
_STATUS = rx.compile(r"(Pass|Fail|Skip|Warn|Warning|Not Run|Error)(?:[ \t]{0,10}-[ \t]{0,10}(.{0,200}))?$",
                     re.IGNORECASE)
_MESSAGE_KINDS = ("error", "warning", "info")
_INLINE_MESSAGE = rx.compile(r"(Error|Warning|Info)[ \t]{0,4}:[ \t]{0,4}(.{0,400})$")
_SAYS_FAILED = rx.compile(r"[ \t]{0,40}\|[^|]{0,400}\|[ \t]{0,40}(?:Fail|FAIL|Error)\b"  # a result cell
                          r"|[ \t]{0,40}\|[ \t]{0,40}Error[ \t]{0,40}\|")  # an Error message row
ROWS_KEPT = 4  # of a test's failing rows, quoted in its finding
_META = ("Diagnostic", "DCGM Version", "Driver Version Detected", "GPU Device IDs Detected")

MEMORY_TESTS = ("gpu memory", "memory", "memtest", "memory bandwidth", "page retirement/row remap",
                "page retirement")
MEMORY_ERRORS = rx.compile(r"uncorrectable|row[ \t]{0,4}remap|remapping|page retire|pending retire|\bECC\b|"
                           r"double[ -]bit|DBE\b", re.IGNORECASE)
COMPUTE_TESTS = ("diagnostic", "sm stress", "targeted stress", "eud", "eud test", "cpu eud", "gpu burn",
                 "context create")
POWER_TESTS = ("targeted power", "pulse test", "power", "thermal")
DEPLOYMENT_SECTION = "deployment"


@dataclass
class DiagTest:
    name: str
    section: str = ""
    results: List[Tuple[str, str]] = field(default_factory=list)  # (Pass/Fail/Skip/Warn, what: "GPU: 0", "All")
    messages: List[Tuple[str, str]] = field(default_factory=list)  # (error/warning/info, text joined)
    rows: List[str] = field(default_factory=list)  # the table's rows that say it failed or erred, as printed

    @property
    def failed(self) -> bool:
        return any(s == "fail" for s, _ in self.results) or any(k == "error" for k, _ in self.messages)

    @property
    def warned(self) -> bool:
        return any(s == "warn" for s, _ in self.results) or any(k == "warning" for k, _ in self.messages)


@dataclass
class LinkStates:
    """One GPU's or NVSwitch's line of ``dcgmi nvlink -s``: a state per link (``U`` up, ``D`` down, ``X``
    disabled, ``_`` not supported), and the lines it was read from."""

    entity: str  # "GPU" or "NvSwitch"
    id: str
    states: str  # one character per link, in link order
    lines: List[str] = field(default_factory=list)

    def links(self, state: str) -> List[int]:
        return [i for i, s in enumerate(self.states) if s == state]


@dataclass
class DcgmFacts:
    collected: bool = False  # the source came back with text
    table: bool = False  # a dcgmi diag result table was in it
    tests: List[DiagTest] = field(default_factory=list)
    lines: int = 0
    first_lines: List[str] = field(default_factory=list)  # what it printed first, shown when no table came
    links: Optional[List[LinkStates]] = None  # dcgmi nvlink -s (None: not given)


def _status(text: str) -> Optional[Tuple[str, str]]:
    m = _STATUS.match(text.strip())
    if not m:
        return None
    word = m.group(1).lower()
    word = {"warning": "warn", "error": "fail", "not run": "skip"}.get(word, word)
    return word, (m.group(2) or "").strip()


def parse_diag(text: Optional[str]) -> DcgmFacts:
    """The tests of ``dcgmi diag`` tables (every table of the text, in order); pure, never raises on text."""
    f = DcgmFacts()
    if text is None or not text.strip():
        return f
    f.collected = True
    section = ""
    test: Optional[DiagTest] = None
    message: Optional[List] = None  # [kind, [chunks]] of the message being read
    for line in text.splitlines():
        f.lines += 1
        if len(f.first_lines) < 3:
            f.first_lines.append(line[:400])
        h = _HEADER.match(line)
        if h:
            section, test, message = h.group(1).strip(), None, None
            f.table = True
            continue
        m = _ROW.match(line)
        if not m:
            continue
        name, cell = m.group(1).strip(), m.group(2)
        said = _SAYS_FAILED.match(line) is not None
        chunk = cell[1:] if cell.startswith(" ") else cell
        chunk = chunk.rstrip()
        if name == "Diagnostic" and cell.strip() == "Result":
            f.table = True
            section, test, message = "", None, None
            continue
        if name in _META:
            continue
        if name.lower() in _MESSAGE_KINDS:
            owner = test if test is not None else _alone(f, section)
            message = [name.lower(), [chunk]]
            owner.messages.append((message[0], ""))
            _close(owner, message)
            _keep(owner, line, said)
            f.table = True
            continue
        if name:
            test = DiagTest(name, section)
            f.tests.append(test)
            message = None
            s = _status(chunk)
            if s:
                test.results.append(s)
            _keep(test, line, said)
            f.table = True
            continue
        # a row with an empty first cell: more results of the test, a message in the cell, or wrapped text
        if test is None and message is None:
            continue
        owner = test if test is not None else _alone(f, section)
        inline = _INLINE_MESSAGE.match(chunk.strip())
        s = _status(chunk) if _looks_status(chunk) else None
        if inline:
            message = [inline.group(1).lower(), [inline.group(2)]]
            owner.messages.append((message[0], ""))
            _close(owner, message)
            _keep(owner, line, said or inline.group(1) == "Error")
        elif s:
            owner.results.append(s)
            _keep(owner, line, said)
            message = None
        elif message is not None:
            message[1].append(chunk)
            _close(owner, message)
    return f


def _keep(test: DiagTest, line: str, said: bool) -> None:
    if said and len(test.rows) < ROWS_KEPT:
        test.rows.append(line.strip()[:400])


def _looks_status(chunk: str) -> bool:
    return bool(re.match(r"[ \t]{0,4}(?:Pass|Fail|Skip|Warn)\b", chunk))


def _alone(f: DcgmFacts, section: str) -> DiagTest:
    """The test an ``Error`` row right under a section header belongs to: the section itself."""
    if f.tests and f.tests[-1].name == (section or "Diagnostic") and not f.tests[-1].results:
        return f.tests[-1]
    t = DiagTest(section or "Diagnostic", section)
    f.tests.append(t)
    return t


def _close(owner: DiagTest, message: List) -> None:
    """The last message of ``owner`` made whole from its chunks: DCGM cuts a message every ``WRAP`` characters,
    inside a word too, so a chunk that filled the cell runs on into the next, and a shorter one ended a word."""
    text = prev = ""
    for c in message[1]:
        if text and len(prev) < WRAP and not c.startswith(" "):
            text += " "
        text += c
        prev = c
    owner.messages[-1] = (message[0], " ".join(text.split()))


# 'gpuId 0:' / 'physicalId 2:' (DCGM's DcgmiNvlink.cpp), the states on the next line or, as some pastes have
# it, on the same one ('gpuId 0: U U U U _ _')
ENTITY = rx.compile(r"[ \t]{0,40}(gpuId|physicalId)[ \t]{1,4}(\d{1,6})[ \t]{0,4}:[ \t]{0,4}"
                     r"((?:[UDX_][ \t]{1,4}){0,63}[UDX_])?[ \t]{0,40}$")
STATES = rx.compile(r"[ \t]{0,40}((?:[UDX_][ \t]{1,4}){0,63}[UDX_])[ \t]{0,40}$")


def parse_links(text: Optional[str]) -> Optional[List[LinkStates]]:
    """The link states of ``dcgmi nvlink -s`` (``--link-status``): one entry per GPU and NVSwitch, in order;
    ``None`` where no text was given; pure, never raises on text."""
    if text is None or not text.strip():
        return None
    out: List[LinkStates] = []
    current: Optional[LinkStates] = None
    for line in text.splitlines():
        m = ENTITY.match(line[:2000])
        if m:
            current = LinkStates("GPU" if m.group(1) == "gpuId" else "NvSwitch", m.group(2), "", [line.strip()])
            out.append(current)
            if m.group(3):
                current.states = m.group(3).replace(" ", "").replace("\t", "")
                current = None
            continue
        m = STATES.match(line[:2000])
        if m and current is not None and not current.states:
            current.states = m.group(1).replace(" ", "").replace("\t", "")
            current.lines.append(line.strip())
            current = None
    return [e for e in out if e.states]


def _ranges(links: List[int]) -> str:
    out: List[str] = []
    for i in links:
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = out[-1].split("-")[0] + f"-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def _judge_links(links: Optional[List[LinkStates]]) -> List[Finding]:
    """``dcgmi nvlink -s``: a link Down where other links of the node are Up fails (the node's GPUs are linked);
    every link Down, none Up, warns (GPUs with NVLink bridges or on a baseboard have lost them, PCIe cards with
    no bridge fitted show the same: the model says which); a Disabled link warns."""
    if links is None:
        return []
    if not links:
        return [skip(NAME, LINK_CHECK, "dcgmi nvlink -s printed no GPU's link states")]
    down = [e for e in links if e.links("D")]
    disabled = [e for e in links if e.links("X")]
    up = sum(len(e.links("U")) for e in links)

    def listed(es: List[LinkStates], state: str) -> str:
        return "; ".join(f"{e.entity} {e.id}: link{'s' if len(e.links(state)) > 1 else ''} "
                         f"{_ranges(e.links(state))} of {len(e.states)}" for e in es[:8]) + \
            (f"; and {len(es) - 8} more" if len(es) > 8 else "")

    evidence = [line for e in (down or disabled) for line in e.lines][:6]
    if down and up:
        return [fail(NAME, LINK_CHECK, f"NVLink Down where the node's other links are Up: {listed(down, 'D')}",
                     actual={"category": "nvlink_error", "down": {f"{e.entity} {e.id}": e.links("D") for e in down},
                             "up": up},
                     expected="every supported link Up", evidence=evidence, fix=_fix("nvlink_error"))]
    if down:
        return [warn(NAME, LINK_CHECK, f"every NVLink of the node is Down, none Up: {listed(down, 'D')}; GPUs "
                                       "on an NVLink baseboard or bridged have lost their links (PCIe cards with "
                                       "no NVLink bridge fitted show the same: the GPU model tells)",
                     actual={"category": "nvlink_error", "down": {f"{e.entity} {e.id}": e.links("D") for e in down},
                             "up": 0},
                     expected="the links of linked GPUs Up", evidence=evidence,
                     fix="Where the GPUs are linked (SXM, NVL bridges): " + _fix("nvlink_error"))]
    if disabled:
        return [warn(NAME, LINK_CHECK, f"NVLink Disabled: {listed(disabled, 'X')}",
                     actual={"category": "nvlink_error",
                             "disabled": {f"{e.entity} {e.id}": e.links("X") for e in disabled}},
                     expected="every supported link Up", evidence=evidence, fix=_fix("nvlink_error"))]
    return [ok(NAME, LINK_CHECK, f"{len(links)} GPU(s) and NVSwitch(es): {up} NVLink(s) Up, none Down or Disabled",
               actual={"up": up, "entities": len(links)})]


def category(t: DiagTest) -> str:
    """The category of a failed test: by its name, and for a memory test by what its messages say."""
    name = t.name.lower()
    said = " ".join(text for _, text in t.messages)
    if name in MEMORY_TESTS or MEMORY_ERRORS.search(said):
        return "gpu_ecc_rowremap" if MEMORY_ERRORS.search(said) or name.startswith("page retirement") \
            else "gpu_lost_xid"
    if name == "pcie":
        return "pcie_link_aer"
    if name.startswith("nvlink"):
        return "nvlink_error"
    if name in COMPUTE_TESTS:
        return "gpu_lost_xid"
    if name in POWER_TESTS:
        return "other:gpu-power-thermal"
    if "fabric manager" in name:
        return "fabric_manager"
    if t.section.lower() == DEPLOYMENT_SECTION:
        return "other:dcgm-deployment"
    return "other:dcgm-diag"


def _gpus(t: DiagTest, status: str) -> str:
    return "; ".join(what for s, what in t.results if s == status and what)


def _fix(cat: str) -> str:
    return {
        "gpu_ecc_rowremap": "Drain the node and reset the GPU (nvidia-smi -r, or reboot) so that pending row "
                            "remappings take effect; rerun 'dcgmi diag -r 3'; a GPU whose remapping fails or whose "
                            "errors return is an RMA (NVIDIA's GPU memory error management guide).",
        "gpu_lost_xid": "Drain the node; reset the GPU or reboot and rerun 'dcgmi diag -r 3'; a GPU that fails again "
                        "is a hardware case (nvidia-bug-report.sh, RMA).",
        "pcie_link_aer": "Read the link's width, speed and AER counters (lspci -vvv, the pcie area); reseat the GPU "
                         "or its riser; rerun 'dcgmi diag -r 2'.",
        "nvlink_error": "Read 'nvidia-smi nvlink -s' and '-e'; reset the GPU or reboot; links that stay down point at "
                        "the baseboard or NVSwitch tray: a hardware case.",
        "fabric_manager": "Start the fabric manager (systemctl enable --now nvidia-fabricmanager) at the driver's "
                          "version, then rerun the diagnostic.",
        "other:gpu-power-thermal": "Check the node's cooling and power (fans, airflow, power supplies; "
                                   "'nvidia-smi -q -d PERFORMANCE' for slowdown reasons), then rerun the test.",
    }.get(cat, "Fix what the message of the test says, then rerun 'dcgmi diag -r 1'.")


def judge(facts: Optional[DcgmFacts], node: NodeFacts) -> List[Finding]:
    links = _judge_links(facts.links if facts is not None else None)
    return _judge_diag(facts) + links


def _judge_diag(facts: Optional[DcgmFacts]) -> List[Finding]:
    if facts is None or not facts.collected:
        return [skip(NAME, CHECK, "not run: dcgmi diag is an active test that needs the GPUs free; paste the table "
                                  "of 'dcgmi diag -r 1' (or higher) to 'nccldiag log' to have it read")]
    if not facts.table:
        first = next((l.strip() for l in facts.first_lines if l.strip()), "")
        # the diagnostic did not run (no host engine to reach, most often): nothing is known of the GPUs
        return [skip(NAME, CHECK, "dcgmi diag printed no result table" + (f": {first[:300]}" if first else ""),
                     fix="Start the DCGM host engine (systemctl start nvidia-dcgm, or nv-hostengine) and run "
                         "'dcgmi diag -r 1' by hand.")]
    out: List[Finding] = []
    for t in facts.tests:
        if not (t.failed or t.warned):
            continue
        cat = category(t)
        status = "fail" if t.failed else "warn"
        gpus = re.sub(r"\b(GPUs?)[ \t]{0,4}:[ \t]{0,4}", r"\1 ", _gpus(t, status))
        said = [f"{k}: {text}" for k, text in t.messages if k != "info" and text]
        message = f"DCGM diagnostic '{t.name}' {'failed' if t.failed else 'warned'}" + (f" on {gpus}" if gpus else "")
        if said:
            message += ": " + said[0][:300]
        make = fail if t.failed else warn
        out.append(make(NAME, CHECK, message,
                        actual={"category": cat, "test": t.name, "section": t.section,
                                "results": [f"{s} - {w}" if w else s for s, w in t.results]},
                        expected="Pass", evidence=(t.rows + said)[:6], fix=_fix(cat)))
    if not out:
        ran = [t.name for t in facts.tests if any(s == "pass" for s, _ in t.results)]
        out.append(ok(NAME, CHECK, f"{len(ran)} DCGM test(s) passed, none failed or warned",
                      actual={"passed": ran}))
    return out


def parse(raw) -> DcgmFacts:
    return dataclasses.replace(parsed(raw, SOURCE.name, parse_diag), links=parsed(raw, LINK_SOURCE.name, parse_links))


def summarize(facts: Optional[DcgmFacts]) -> Dict[str, Optional[str]]:
    return {}
