"""What every check area provides.

An area is one module under ``nccldiag/areas/`` (one per subject, like one
collector per file in node_exporter). It declares:

``NAME``      short id used by ``--only/--skip`` and as the report column
``TITLE``     human title
``SOURCES``   tuple of :class:`Source`: what to collect on the node. Each is a
              POSIX ``sh`` snippet whose output becomes one section of the raw
              output (and one file of a bundle). File paths are written
              relative to ``$R`` (``cat "$R/proc/cmdline"``) so that a fixture
              tree stands in for a live root. Stderr is discarded; a snippet
              should print nothing when its data is absent.
``parse(raw)``  pure: ``{source name: text or None}`` -> facts (a dataclass)
``judge(facts, node)``  pure: facts -> list of :class:`~nccldiag.model.findings.Finding`.
              ``node`` is a :class:`NodeFacts` giving the facts of the other
              areas of the same node (``node.get("gpu")``), for judgements
              that depend on them (IOMMU matters only with GPUs).
``summarize(facts)`` optional: ``{key: value}`` compared across nodes by
              :mod:`nccldiag.areas.consistency` (driver version, GPU count, ...).

Parsers must tolerate tabs turned into spaces, trailing blanks, missing
sections (``None``), empty and truncated output: they never raise on text.
Their regular expressions run in time linear in the line, whatever it holds
(no unanchored ``\\S+`` or lazy ``.*?`` followed by a literal that can be
retried from every position: ``tests/unit/test_fuzz_parsers.py``). A check
reads each line of a node's outputs cut to ``Source.line_limit`` characters
(:class:`Sections`), the cut said in the line itself (:func:`cut_lines`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from nccldiag import rx


# The longest line a check reads of a node's output. The kernel's own lines are under 1 KiB, as are those of
# every tool a source runs; the JSON sources (one object a line) say their own, larger, bound.
LINE_LIMIT = 4096
JSON_LINE_LIMIT = 1 << 20
# The deepest nesting a node's JSON line may have. The node programs print objects of a few levels (an NVML
# snapshot: snapshot -> gpus -> gpu -> links); deeper is not theirs, and a value nested hundreds deep would
# exhaust the stack of whatever walks it next (the report's encoder, the worker's pickler).
JSON_DEPTH = 32


@dataclass(frozen=True)
class Source:
    name: str
    command: str
    timeout: int = 10
    description: str = ""
    line_limit: int = LINE_LIMIT  # longer lines are cut (:func:`cut_lines`) before any parser reads them
    own: bool = False  # its output is nccldiag's own program's (a facts line), which no job prints


def cut_note(dropped: int) -> str:
    """What ends a line that was cut: the cut is seen wherever the line is quoted."""
    return f" [... {dropped} more characters cut by nccldiag]"


def cut_lines(text: Optional[str], limit: int = LINE_LIMIT) -> Optional[str]:
    """``text`` with every line longer than ``limit`` characters cut there, and :func:`cut_note` after it."""
    if text is None or len(text) <= limit:
        return text
    lines = text.split("\n")
    if max(map(len, lines)) <= limit:
        return text
    return "\n".join(l if len(l) <= limit else l[:limit] + cut_note(len(l) - limit) for l in lines)


@dataclass
class NodeFacts:
    """Facts of every area of one node, keyed by area name."""

    host: str
    facts: Dict[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def get(self, area: str) -> Optional[Any]:
        return self.facts.get(area)


class Sections(dict):
    """One node's outputs (``{source name: text or None}``) as the areas of a check read them: a text that
    several areas parse alike (the kernel log, ``nvidia-smi -q``) is parsed once for the node
    (:func:`parsed`). The parses go with the node.

    :meth:`bounded` is how a check reads a node: every line cut to its source's ``line_limit``."""

    __slots__ = ("parses",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.parses: Dict[Tuple[str, Any], Any] = {}

    @classmethod
    def bounded(cls, texts: Mapping[str, Optional[str]], areas: Iterable[Any] = ()) -> "Sections":
        """:func:`bounded` ``texts``, parsed once for the node."""
        return cls(bounded(texts, areas))


def bounded(texts: Mapping[str, Optional[str]], areas: Iterable[Any] = ()) -> Dict[str, Optional[str]]:
    """``texts`` without terminal control sequences (:func:`plain`), each line cut to the ``line_limit`` of its
    source in ``areas`` (:func:`line_limits`; :data:`LINE_LIMIT` for a text none of them names)."""
    limits = line_limits(areas)
    return {name: cut_lines(plain(text), limits.get(name, LINE_LIMIT)) for name, text in texts.items()}


#: A terminal control sequence (ECMA-48 CSI: ``ESC [``, parameters, intermediates, a final byte).
_CONTROL = rx.compile(r"\x1b\[[0-?]{0,32}[ -/]{0,4}[@-~]")


def plain(text: Optional[str]) -> Optional[str]:
    """``text`` without terminal control sequences. ``nvidia-smi topo -m`` of driver 580 underlines its header
    (``ESC[4mGPU0 ... ESC[0m``) even into a file or a pipe, which would hide the matrix from its parser."""
    if not text or "\x1b" not in text:
        return text
    return _CONTROL.sub("", text)


def line_limits(areas: Iterable[Any]) -> Dict[str, int]:
    """``{source name: line limit}`` of the areas' ``SOURCES``, and of the sources an area reads beyond them
    (its ``LINE_LIMITS``: ``check --p2p-test``'s)."""
    out: Dict[str, int] = {}
    for a in areas:
        out.update({s.name: s.line_limit for s in getattr(a, "SOURCES", ())})
        out.update(getattr(a, "LINE_LIMITS", {}))
    return out


def parsed(raw: Mapping[str, Optional[str]], name: str, parse: Any) -> Any:
    """``parse(raw.get(name))``, parsed once per node when ``raw`` is :class:`Sections`. ``parse`` must be pure
    and its result read, never changed, by the areas that share it."""
    memo = getattr(raw, "parses", None)
    if memo is None:
        return parse(raw.get(name))
    key = (name, parse)
    if key not in memo:
        memo[key] = parse(raw.get(name))
    return memo[key]


def json_line(line: str, limit: int = JSON_LINE_LIMIT, depth: int = JSON_DEPTH) -> Tuple[Any, Optional[str]]:
    """``(value, None)`` of one JSON line a node printed, or ``(None, why)`` when it cannot be read: not JSON,
    longer than ``limit`` characters, or nested deeper than ``depth`` (the parse bounded, never a
    ``RecursionError`` out of it)."""
    if len(line) > limit:
        return None, f"a JSON line of {len(line)} characters (more than the {limit} read)"
    try:
        value = json.loads(line)
    except RecursionError:
        return None, f"JSON nested deeper than {depth} levels"
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    level, todo = 0, [value]
    while todo:  # one level at a time, without recursion
        level += 1
        if level > depth:
            return None, f"JSON nested deeper than {depth} levels"
        nxt = []
        for v in todo:
            if type(v) is dict:
                nxt.extend(x for x in v.values() if type(x) in (dict, list))
            elif type(v) is list:
                nxt.extend(x for x in v if type(x) in (dict, list))
        todo = nxt
    return value, None


def section(raw: Mapping[str, Optional[str]], name: str) -> Optional[str]:
    """The text of one section, or None when it is absent or empty."""
    text = raw.get(name)
    if text is None or not text.strip():
        return None
    return text


# ---- the `==> path <==` dump -------------------------------------------------------------------------

DUMP_HEADER = rx.compile(r"^\s*==> (.+?) <==\s*(.*)$")
_LINK = rx.compile(r"^symlink\s*->\s*(\S+)")


def parse_dump(text: Optional[str], default: Optional[str] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """``(files, links)`` from ``==> path <==`` blocks (the collection script's ``_dump``, or ``head`` of many files).

    ``files`` maps each path to the text that followed its header (lines kept
    as they are); ``links`` maps paths whose header reads ``==> path <==
    symlink -> target`` to their target (the fixtures render symlinks so).
    Text before the first header belongs to ``default`` when one is given (a
    single file captured by hand has no header), and is dropped otherwise.
    """
    files: Dict[str, str] = {}
    links: Dict[str, str] = {}
    path: Optional[str] = default
    buf: List[str] = []

    def close() -> None:
        if path is not None:
            files[path] = "".join(l + "\n" for l in buf)

    for line in (text or "").splitlines():
        m = DUMP_HEADER.match(line)
        if m:
            close()
            path, buf = None, []
            link = _LINK.match(m.group(2))
            if link:
                links[m.group(1)] = link.group(1)
            else:
                path = m.group(1)
            continue
        if path is not None:
            buf.append(line)
    close()
    return files, links
