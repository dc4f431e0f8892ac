"""The one finding printer of the terminal: findings as a report document holds them (dicts), worst first.

Every command's table (check, probe, isolate, log) and ``nccldiag report
RUN_DIR`` print their findings here, from the document: identical findings
on several hosts are one line naming the hosts (folded, ``gpu[001-004]``);
a finding that did not pass shows at most :data:`EVIDENCE` evidence lines
(``-v``: all of them) and its fix.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from rich.console import Console
from rich.text import Text

from nccldiag import rx
from nccldiag.model.findings import SEVERITY, Status

EVIDENCE = 4  # evidence lines shown per finding without -v
RANK = {s.value: SEVERITY[s] for s in Status}


# a host name ClusterShell reads as the one node it names, written back as it is (no range, group or operator)
_PLAIN_NAME = rx.compile(r"[A-Za-z0-9_.-]+")


def fold(names: Sequence[str]) -> str:
    """Host names as ClusterShell folds them (``gpu[001-004]``) when that is shorter, else comma-separated."""
    names = [n for n in names if n]
    if len(names) == 1 and _PLAIN_NAME.fullmatch(names[0]):
        return names[0]  # one plain name folds to itself: ClusterShell is not imported for it
    try:
        from ClusterShell.NodeSet import NodeSet

        folded = str(NodeSet.fromlist(names))
        return folded if len(folded) < len(",".join(names)) else ",".join(names)
    except Exception:
        return ",".join(names)


def grouped(found: Iterable[Dict[str, Any]], floor: str = "warn") -> List[Tuple[Dict[str, Any], List[str]]]:
    """Findings at ``floor`` or worse, worst first (then by check), identical ones across hosts merged."""
    groups: "OrderedDict[tuple, Tuple[Dict[str, Any], List[str]]]" = OrderedDict()
    least = RANK.get(floor, 0)
    for f in found:
        st = str(f.get("status"))
        if RANK.get(st, 0) < least:
            continue
        key = (st, f.get("check"), f.get("message"), f.get("fix"))
        if key in groups:
            if f.get("host") and f["host"] not in groups[key][1]:
                groups[key][1].append(f["host"])
        else:
            groups[key] = (f, [f["host"]] if f.get("host") else [])
    return sorted(groups.values(), key=lambda g: (-RANK.get(str(g[0].get("status")), 0), str(g[0].get("check"))))


def render(con: Console, found: Iterable[Dict[str, Any]], verbose: bool = False, floor: str = "warn") -> None:
    """Print the findings at ``floor`` or worse (``-v``: every finding, with every evidence line), a blank line
    before them."""
    items = grouped(found, "skip" if verbose else floor)
    if items:
        con.print()
    for f, hosts in items:
        st = str(f.get("status"))
        where = [" ", (fold(hosts), "cyan")] if hosts else []
        con.print(Text.assemble((f" {st.upper():5} ", st), " ", (str(f.get("check")), "bold"), *where, "  ",
                                str(f.get("message") or "")))
        if st in ("ok", "skip"):
            continue
        evidence = [str(e) for e in f.get("evidence") or []]
        for line in evidence if verbose else evidence[:EVIDENCE]:
            con.print(Text(f"        | {line}", style="muted"))
        if len(evidence) > EVIDENCE and not verbose:
            con.print(Text(f"        | ... {len(evidence) - EVIDENCE} more (-v)", style="muted"))
        if f.get("fix"):
            con.print(Text(f"        fix: {f['fix']}"))
