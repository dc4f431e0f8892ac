"""The packages of nccldiag stand on floors: each imports only from the floors below it (docs/architecture.md).

An AST scan of every ``nccldiag/**/*.py``, top-level and function-level
imports alike (``if TYPE_CHECKING`` ones too), as the node-package test scans
``nccldiag/node``. Each import is mapped to the package it reaches, and the
packages are checked against :data:`FLOORS`.
"""
import ast
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set, Tuple

PKG = Path(__file__).resolve().parents[2] / "nccldiag"

# Bottom to top: a package imports only from packages on lower floors, never one above it nor one beside it.
# A name is a package (nccldiag/<name>/) or a module (nccldiag/<name>.py). ``nccldiag`` is the top __init__.py
# (``__version__``), which every import of nccldiag loads: any floor may read it. ``spec.thresholds`` (the limits
# the areas judge with, the keys of a spec's [thresholds]) imports nothing and stands on the ground floor, below
# the areas that read it; the rest of spec/ reads the areas' facts and stands above them.
FLOORS: Tuple[Tuple[str, ...], ...] = (
    ("nccldiag", "model", "node", "spec.thresholds"),  # shared values, node programs
    ("atomic", "hscache"),  # file writing, the JSON text of reports; Hyperscan databases kept between runs
    ("rx",),  # the package's regular expressions, their programs kept between runs
    ("fronts", "pods"),  # what launchers, collectors and loggers write before a line, for every reader of a line;
    # which host names are Kubernetes pods
    ("inventory", "transport", "benchmarks", "knowledge"),  # hosts; how bytes reach a node; hand-run benchmarks'
    # outputs; what nccldiag knows, as data rows
    ("slurm", "nccl", "bundle"),  # Slurm's commands, run through a transport; NCCL logs and RAS reports; nodes'
    # raw outputs on disk
    ("areas", "rundir"),  # check areas (parse, judge); the run directory
    ("spec",),  # site specs, against the areas' facts
    ("check", "collect", "diagnosis"),  # the check engine, the collection, the diagnosis rules
    ("probe", "shards", "paste"),  # probe: plan, launchers, runner, results, analysis; the collection and judging
    # shared out over worker processes; node outputs pasted in a text, judged by the check engine
    ("isolate", "sessions"),  # isolate: its rounds of probe jobs; check's and log's runs end to end
    ("report",),  # renderers and report files
    ("cli",),  # the commands
    ("__main__",),
)
FLOOR: Dict[str, int] = {name: i for i, names in enumerate(FLOORS) for name in names}


def unit(dotted: str) -> str:
    """The floor entry a module belongs to: ``nccldiag.spec.model`` -> ``spec``, ``nccldiag.atomic`` -> ``atomic``."""
    parts = dotted.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOOR:
            return ".".join(parts[:n])
    return parts[0] if parts else "nccldiag"


def dotted(path: Path) -> str:
    """``nccldiag/spec/model.py`` -> ``nccldiag.spec.model``; a package's ``__init__.py`` -> the package."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _is_module(name: str) -> bool:
    p = PKG.parent.joinpath(*name.split("."))
    return p.is_dir() or p.with_suffix(".py").is_file()


def imports(path: Path) -> List[Tuple[int, str]]:
    """``(line, module)`` of every nccldiag import in ``path``; ``from a import b`` is ``a.b`` when b is a module."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    here = list(rel.parts[:-1])  # the package the file is in
    out = []
    for n in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name) for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                base = ".".join(here[:len(here) - n.level + 1] + ([n.module] if n.module else []))
            for a in n.names:
                out.append((n.lineno, f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base))
    return [(line, m) for line, m in out if m == "nccldiag" or m.startswith("nccldiag.")]


def arrows() -> Dict[Tuple[str, str], List[str]]:
    """``(from, to)`` -> the ``file:line`` that make it, between different floor entries."""
    out: Dict[Tuple[str, str], List[str]] = defaultdict(list)
    for path in sorted(PKG.rglob("*.py")):
        src = unit(dotted(path))
        for line, mod in imports(path):
            dst = unit(mod)
            if dst != src:
                out[(src, dst)].append(f"{path.relative_to(PKG)}:{line}")
    return out


def up_arrows(found: Dict[Tuple[str, str], List[str]]) -> Dict[Tuple[str, str], List[str]]:
    """The arrows that run up a floor or sideways on one."""
    return {(a, b): where for (a, b), where in found.items()
            if b != "nccldiag" and FLOOR.get(a, -1) <= FLOOR.get(b, -1)}


def cycles(edges) -> List[List[str]]:
    """The strongly connected groups of more than one package (Tarjan)."""
    graph: Dict[str, Set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(set(graph) | {b for bs in graph.values() for b in bs}):
        if v not in index:
            visit(v)
    return out


def test_every_package_stands_on_a_floor():
    units = {unit(dotted(p)) for p in PKG.rglob("*.py")}
    assert sorted(u for u in units if u not in FLOOR) == [], "a new package: give it its floor in FLOORS"
    assert sorted(u for u in FLOOR if u not in units | {"nccldiag"}) == []


def test_no_import_runs_up_a_floor():
    up = {f"{a} -> {b}": where for (a, b), where in up_arrows(arrows()).items()}
    assert up == {}, "an import runs up a floor, or sideways: move the piece to its owner (docs/architecture.md)"


def test_no_package_cycle():
    assert cycles(arrows()) == []


def module_imports():
    """``(module, file:line, module imported)`` for every nccldiag import in nccldiag/."""
    for path in sorted(PKG.rglob("*.py")):
        src = dotted(path).partition(".")[2]
        for line, mod in imports(path):
            yield src, f"{path.relative_to(PKG)}:{line}", mod.split(".", 1)[1] if "." in mod else ""


def module_edges() -> Set[Tuple[str, str]]:
    """``(module, module it imports)`` between two modules of nccldiag/ (``probe.runner``, ``rundir``)."""
    return {(src, dst) for src, _where, dst in module_imports() if dst and dst != src}


def test_no_module_cycle():
    """No two modules import each other, directly or round a circle, inside a package as between packages: an
    import inside a function counts, as it does for the floors (the piece both need belongs to one of them)."""
    assert cycles(module_edges()) == []
    # the scan sees a function-level import (analysis reads the launchers' words for a dead rank in a function)
    assert ("probe.analysis", "probe.launchers") in module_edges()


# isolate runs its jobs with the probe's modules, never the reverse (the floors keep that), and a report reads
# an isolate run from the pure judge, not from the module that runs it.
def test_a_report_reads_isolate_from_its_judge_not_from_its_run():
    bad = [f"{where} {dst}" for src, where, dst in module_imports()
           if src.startswith("report.") and dst.startswith("isolate") and dst != "isolate.judge"]
    assert bad == []
    assert any(src.startswith("report.") and dst == "isolate.judge" for src, _w, dst in module_imports())


def test_the_scan_sees_function_level_and_aliased_imports():
    """The scan finds what the floors are judged on: a function-level import and ``from nccldiag import x``."""
    found = arrows()
    assert any(w.startswith("cli/__init__.py:") for w in found[("cli", "nccldiag")])  # import __version__
    assert any(w.startswith("cli/options.py:") for w in found[("cli", "areas")])  # in a function: import areas
    assert found[("areas", "spec.thresholds")] and ("areas", "spec") not in found
    assert found[("spec", "areas")]  # spec/fields.py reads the areas' facts
    assert set(up_arrows({("model", "cli"): ["x"], ("check", "collect"): ["y"], ("cli", "model"): ["z"],
                          ("node", "nccldiag"): ["w"]})) == {("model", "cli"), ("check", "collect")}
    assert cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]


# The probe's and isolate's runs are read function by function: none longer than a screen. The functions still
# over the bound, each to be split (and its entry removed) rather than ever added to.
LONGEST = 60
STILL_LONG: set = set()


def test_no_function_of_the_probe_or_isolate_is_over_a_screen():
    long = {}
    for path in sorted((PKG / "probe").rglob("*.py")) + sorted((PKG / "isolate").rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > LONGEST:
                long[f"{path.relative_to(PKG)}:{n.name}"] = n.end_lineno - n.lineno + 1
    assert set(long) - STILL_LONG == set(), long
    assert STILL_LONG - set(long) == set(), "split: remove it from STILL_LONG"
