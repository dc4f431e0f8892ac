"""The CUDA samples' ``p2pBandwidthLatencyTest`` output: the peer-access lines (``Device=0 CAN Access Peer
Device=1``), the ``P2P Connectivity Matrix`` and the bandwidth matrices measured with peer access off (``P2P=Disabled``:
copies staged through host memory) and on (``P2P=Enabled``: direct peer copies, ``(P2P Writes)`` or ``(P2P Reads)``).

The sample prints each matrix as a title, a ``D\\D`` line naming the destination columns, and one row per source
device (cuda-samples Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu,
``outputBandwidthMatrix`` and ``outputBidirectionalBandwidthMatrix``). Pastes often hold a few of the matrices only,
or stop inside one: what is there is read, row by row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

from nccldiag import rx

Pair = Tuple[int, int]

# "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)"
TITLE = rx.compile(r"(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth(?: \(P2P (Writes|Reads)\))? "
                   r"Matrix \(GB/s\)")
CONNECTIVITY = rx.compile(r"P2P Connectivity Matrix")
BANNER = rx.compile(r"\[P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test\]")
ACCESS = rx.compile(r"Device=(\d{1,4}) (CAN|CANNOT) Access Peer Device=(\d{1,4})\b")
DEVICE = rx.compile(r"Device: (\d{1,4}), ([^,\n]{1,200}), pciBusID: [0-9a-fA-F]{1,8}")
TOKEN = rx.compile(r"\S{1,64}")
INTEGER = rx.compile(r"\d{1,4}")
NUMBER = rx.compile(r"\d{1,9}(?:\.\d{1,9})?")


@dataclass
class P2pBandwidth:
    devices: Dict[int, str] = field(default_factory=dict)  # index -> name ("NVIDIA RTX A6000")
    access: Dict[str, bool] = field(default_factory=dict)  # "src->dst" -> peer access reported
    connectivity: Dict[str, int] = field(default_factory=dict)  # "src->dst" -> the 'P2P Connectivity Matrix' entry
    # matrix name ("Unidirectional P2P=Enabled (P2P Writes)", "Bidirectional P2P=Disabled") -> {"src->dst": GB/s}
    matrices: Dict[str, Dict[str, float]] = field(default_factory=dict)
    source: str = ""

    def peer(self, pair: Pair) -> Optional[bool]:
        """Whether the pair has peer access, as the connectivity matrix or the access lines say (None: not said)."""
        k = key(pair)
        if k in self.connectivity:
            return self.connectivity[k] > 0
        return self.access.get(k)


def key(pair: Pair) -> str:
    return f"{pair[0]}->{pair[1]}"


def pair_of(k: str) -> Pair:
    src, _, dst = k.partition("->")
    return int(src), int(dst)


def matrix_name(direction: str, state: str, method: str = "") -> str:
    return f"{direction} P2P={state}" + (f" (P2P {method})" if method else "")


def _matrix(text: str, start: int, end: int) -> Dict[str, float]:
    """The cells of the matrix whose title ends at ``start``: ``D\\D``, the destination columns (0, 1, ... in
    order), then per source row its index and one figure per column, up to ``end`` or the first word that is no
    number. Read as words, so that a matrix run into one line (a page's paragraph) reads as its lines do."""
    words = (m.group(0) for m in TOKEN.finditer(text, start, end))
    if next(words, None) != "D\\D":
        return {}
    columns: List[int] = []
    word = next(words, None)
    while word is not None and INTEGER.fullmatch(word) and int(word) == len(columns):
        columns.append(int(word))
        word = next(words, None)
    cells: Dict[str, float] = {}
    while columns and word is not None and INTEGER.fullmatch(word):
        src = int(word)
        for dst in columns:
            word = next(words, None)
            if word is None or not NUMBER.fullmatch(word):
                return cells
            cells[key((src, dst))] = float(word)
        word = next(words, None)
    return cells


def parse_p2p_bandwidth(text: Optional[str]) -> Optional[P2pBandwidth]:
    """What a p2pBandwidthLatencyTest output holds; None when the text holds none of it (no banner, peer-access
    line or matrix)."""
    text = (text or "").replace("\t", " ")
    r = P2pBandwidth()
    for m in ACCESS.finditer(text):
        r.access[key((int(m.group(1)), int(m.group(3))))] = m.group(2) == "CAN"
    for m in DEVICE.finditer(text):
        r.devices[int(m.group(1))] = m.group(2).strip()
    marks = sorted([(m.start(), m.end(), matrix_name(m.group(1), m.group(2), m.group(3) or ""))
                    for m in TITLE.finditer(text)] + [(m.start(), m.end(), "") for m in CONNECTIVITY.finditer(text)])
    for k, (_, end, name) in enumerate(marks):
        stop = marks[k + 1][0] if k + 1 < len(marks) else len(text)
        cells = _matrix(text, end, stop)
        if not name:
            r.connectivity.update({pair: int(v) for pair, v in cells.items()})
        elif cells:
            r.matrices.setdefault(name, {}).update(cells)
    if any(r.matrices.values()) or r.connectivity or r.access or BANNER.search(text):
        return r
    return None


@dataclass(frozen=True)
class SlowPair:
    """A pair with peer access whose direct copies ran well below the same copies staged through host memory."""

    test: str  # "Unidirectional (P2P Writes)"
    src: int
    dst: int
    enabled: float
    disabled: float


SLOW_RATIO = 0.5  # a peer copy at under half the host-staged copy's bandwidth takes a path that does not forward P2P
MIN_STAGED = 1.0  # GB/s: a host-staged figure under this is too small to compare with


def _compared(r: P2pBandwidth) -> Iterator[Tuple[str, int, int, float, float]]:
    """``(test, src, dst, enabled, staged)`` for every pair of a ``P2P=Enabled`` matrix that its test's
    ``P2P=Disabled`` matrix measured too (the diagonal, a GPU's copy to itself, left out)."""
    for name, on in sorted(r.matrices.items()):
        direction, _, rest = name.partition(" P2P=")
        if not rest.startswith("Enabled"):
            continue
        off = r.matrices.get(matrix_name(direction, "Disabled"), {})
        method = rest[len("Enabled"):].strip()
        test = direction + (f" {method}" if method else "")
        for k, gbps in on.items():
            src, dst = pair_of(k)
            if src != dst and k in off:
                yield test, src, dst, gbps, off[k]


def slow_pairs(r: P2pBandwidth) -> List[SlowPair]:
    """The pairs whose ``P2P=Enabled`` bandwidth is under half the ``P2P=Disabled`` one of the same test.

    A pair the sample says has no peer access is left out (its 'enabled' figure is a staged copy too)."""
    out = [SlowPair(test, src, dst, gbps, staged) for test, src, dst, gbps, staged in _compared(r)
           if staged >= MIN_STAGED and r.peer((src, dst)) is not False and gbps < SLOW_RATIO * staged]
    return sorted(out, key=lambda p: (p.test, p.src, p.dst))


def compared_pairs(r: P2pBandwidth) -> int:
    """How many (test, pair) figures have both an enabled and a disabled measure."""
    return sum(1 for _ in _compared(r))
