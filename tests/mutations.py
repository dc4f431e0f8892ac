"""The real cases' texts pasted otherwise: the mutation harness of the case tests and ``scripts/bench_mutations``.

Each transformation here is a pure function of a text, written for the test: it transforms the real text of a
case (tests/realcases.py) as a user's paste damages or decorates it (a tail, a launcher's prefix, a redaction, a
terminal's wrap, a quote on a forum, a timestamp, a forum's line numbers or a markdown list, lines trimmed flush
left), it never invents a line. :func:`run` gives the transformed
files of a ``log`` case to the same reader ``nccldiag log`` uses, in this process (no subprocess per run), and
returns the fail/warn diagnoses; :func:`tests.realcases.score` scores them as it scores the case itself.

The invariants the tests hold: a failed run is never given no fail/warn diagnosis (``false all-clear``), a healthy
run never gets one (``false alarm``); and a failed run named right stays right where the evidence survives the
transformation (a tail that cut the failure off may honestly leave it unexplained).
"""
from __future__ import annotations

import html
import re
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from tests import realcases

Transform = Callable[[str], str]


def _lines(text: str) -> List[str]:
    return text.splitlines()


def _join(lines: List[str]) -> str:
    return "\n".join(lines) + "\n"


def tail(n: int) -> Transform:
    """(a) the last ``n`` lines only: a user pastes the tail."""
    return lambda text: _join(_lines(text)[-n:])


_NCCL_INFO = re.compile(r"\bNCCL INFO\b")


def no_nccl_info(text: str) -> str:
    """(b) every NCCL INFO line dropped."""
    return _join([ln for ln in _lines(text) if not _NCCL_INFO.search(ln)])


def prefixed(prefix: str) -> Transform:
    """(c) a launcher's prefix on every line."""
    return lambda text: _join([prefix + ln for ln in _lines(text)])


_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_PCI = re.compile(r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
_HOME = re.compile(r"/home/[^/\s'\"]+")
_NCCL_HOST = re.compile(r"^(\s*)([A-Za-z][\w.-]*)(:\d+:\d+ \[)", re.M)  # host:pid:tid [dev] NCCL ...
_SYSLOG_HOST = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d )([^\s:]+)( [^\s:]+(?:\[\d+\])?:)", re.M)  # host, process


def anonymised(ip: str = "x.x.x.x", pci: str = "0000:xx:00.0", host: str = "node-xxx") -> Transform:
    """(d) host names, IPv4 addresses, PCI addresses and user paths redacted as users redact them."""
    def f(text: str) -> str:
        text = _NCCL_HOST.sub(lambda m: m.group(1) + host + m.group(3), text)
        text = _SYSLOG_HOST.sub(lambda m: m.group(1) + host + m.group(3), text)
        text = _PCI.sub(pci, text)
        text = _IPV4.sub(ip, text)
        return _HOME.sub("/home/<user>", text)
    return f


def wrapped(width: int = 80) -> Transform:
    """(e) lines wrapped at ``width`` columns as a terminal or a forum does (continuations without prefix)."""
    def f(text: str) -> str:
        out: List[str] = []
        for ln in _lines(text):
            out += [ln[i:i + width] for i in range(0, len(ln), width)] or [""]
        return _join(out)
    return f


def crlf_bom(text: str) -> str:
    """(f) CRLF line ends and a UTF-8 byte order mark."""
    return "\ufeff" + "\r\n".join(_lines(text)) + "\r\n"


def quoted_html(text: str) -> str:
    """(g) a markdown quote on every line, and the text HTML-escaped with ``<br>`` line ends."""
    return _join(["> " + html.escape(ln, quote=True) + "<br>" for ln in _lines(text)])


def stamped(stamp: str) -> Transform:
    """(h) a timestamp before every line (ISO, syslog, ``dmesg -T``)."""
    return lambda text: _join([stamp + ln for ln in _lines(text)])


def numbered(form: str) -> Transform:
    """(j) a forum's or an editor's line number before every line, counted from 1 (``form`` a format of it:
    ``"{:>4}. "``, ``"{:>3} | "``, ``"{}: "``)."""
    return lambda text: _join([form.format(i) + ln for i, ln in enumerate(_lines(text), 1)])


def flush_left(text: str) -> str:
    """(k) every line's indentation taken off, as a chat or a form that trims lines pastes it."""
    return _join([ln.lstrip(" \t") for ln in _lines(text)])


def lexicon_only(text: str) -> str:
    """(i) every line but those the failure lexicon reads removed: only the failure lines."""
    from nccldiag.knowledge import lexicon

    return _join([ln for ln in _lines(text) if lexicon.shape_of(ln) is not None])


TRANSFORMS: Dict[str, Transform] = {
    "tail-40": tail(40),
    "tail-15": tail(15),
    "no-nccl-info": no_nccl_info,
    "prefix-rank": prefixed("[rank3]: "),
    "prefix-torchrun": prefixed("[default0]:"),
    "prefix-srun": prefixed("3: "),
    "prefix-pdsh": prefixed("node017: "),
    "prefix-vllm": prefixed("(VllmWorkerProcess pid=1234) "),
    "prefix-mpirun": prefixed("[1,3]<stderr>:"),
    "anon-x": anonymised(),
    "anon-redacted": anonymised(ip="10.x.x.x", pci="...", host="<redacted>"),
    "wrap-80": wrapped(80),
    "crlf-bom": crlf_bom,
    "quote-html": quoted_html,
    "time-iso": stamped("2024-05-01T12:00:00.123Z "),
    "time-syslog": stamped("May  1 12:00:00 host kernel: "),
    "time-dmesg-T": stamped("[Wed May  1 12:00:00 2024] "),
    "lineno-dot": numbered("{:>4}. "),
    "lineno-pipe": numbered("{:>3} | "),
    "lineno-colon": numbered("{}: "),
    "list-dash": prefixed("- "),
    "list-star": prefixed("* "),
    "flush-left": flush_left,
    "lexicon-only": lexicon_only,
}


def log_cases() -> List[realcases.Case]:
    """Every ``log`` case of both sets (bundles are node outputs collected by a tool, never pasted)."""
    out = list(realcases.cases(realcases.IN_REPO))
    if realcases.CASES.is_dir():
        out += realcases.cases(realcases.CASES)
    return [c for c in out if not c.bundle]


def texts(case: realcases.Case) -> List[Tuple[str, str]]:
    return [(name, (case.path / name).read_bytes().decode("utf-8", "replace")) for name in case.meta["files"]]


def alarms(files: List[Tuple[str, str]]) -> List[Dict]:
    """The fail/warn diagnoses ``nccldiag log`` gives the texts ``files`` (name, text), read in this process."""
    from nccldiag.report import log_report
    from nccldiag.report.jsonout import plain
    from nccldiag.sessions import log as session

    with tempfile.TemporaryDirectory(prefix="nccldiag-mut-") as tmp:
        paths = []
        for i, (name, text) in enumerate(files):
            p = Path(tmp) / f"{i}-{Path(name).name}"
            p.write_text(text, encoding="utf-8", newline="")
            paths.append(str(p))
        read = session.run(paths, workers=1)
        doc = plain(log_report.to_json(read.facts, read.findings, read.diagnoses, False, read.pastes))
    return [d for d in doc.get("diagnoses") or [] if d.get("severity") in ("fail", "warn")]


def outcome(case: realcases.Case, transform: Optional[str]) -> Tuple[str, List[Dict]]:
    """The case's outcome with its texts transformed by ``TRANSFORMS[transform]`` (``None``: as they are)."""
    f = TRANSFORMS[transform] if transform else (lambda t: t)
    got = alarms([(name, f(text)) for name, text in texts(case)])
    return realcases.score(case, got), got
