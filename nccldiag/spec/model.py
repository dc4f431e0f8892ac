"""A site spec, read and validated: the values each node should have, and the site's policy.

Every mistake in the file is a :class:`~nccldiag.model.errors.UsageError`
naming ``file:line`` (exit 2): TOML syntax, an unknown table or key, a
value of the wrong type, an impossible value, a check id nccldiag does not
have.
"""
from __future__ import annotations

import difflib
import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from nccldiag.model.errors import UsageError
from nccldiag.spec import causes
from nccldiag.spec import fields as F
from nccldiag.spec import tomlfile

SCHEMA = "nccldiag.spec/1"
ENV = "NCCLDIAG_SPEC"
LEVELS = ("fail", "warn", "info", "ignore")
TOP = ("schema",) + F.SECTIONS + ("bandwidth", "severity", "thresholds", "drain", "cause")
BANDWIDTH_KEYS = ("inter_node_gbps", "intra_node_gbps")
DRAIN_KEYS = ("only", "never")


@dataclass
class Expect:
    field: F.Field
    value: Any  # as written (sizes as bytes)
    line: int
    model: Optional[str] = None  # the HCA model of a [nic.MODEL] key

    @property
    def key(self) -> str:
        return self.field.where(self.model)


@dataclass
class Severity:
    check: str  # an id, or a pattern with * (firmware.spec_*)
    level: str
    line: int

    def matches(self, check: str) -> bool:
        return fnmatch.fnmatchcase(check, self.check) if "*" in self.check else check == self.check


@dataclass
class Spec:
    path: str  # as the admin gave it: findings name it
    expects: List[Expect] = field(default_factory=list)
    severity: List[Severity] = field(default_factory=list)
    nic_models: Dict[str, int] = field(default_factory=dict)  # model -> the line of its table
    drain_only: List[Severity] = field(default_factory=list)  # [drain] only: failures of these alone drain
    drain_never: List[Severity] = field(default_factory=list)  # [drain] never: failures of these never drain
    thresholds: Dict[str, Tuple[Any, str]] = field(default_factory=dict)  # key -> (limit, "site.toml:40")
    # [bandwidth]: "inter_node_gbps", "intra_node_gbps" and "setting.<name>" -> (busbw GB/s, "site.toml:30")
    bandwidth: Dict[str, Tuple[float, str]] = field(default_factory=dict)
    # [[cause]]: failure lines the site teaches nccldiag (nccldiag.spec.causes), each row with its "site.toml:12"
    causes: Tuple[Dict[str, Any], ...] = ()

    def drains(self, check: str) -> bool:
        """Whether a failure of ``check`` drains its node in Slurm (``--drain``): every failure does, but those
        ``[drain] never`` names and, where ``[drain] only`` is given, those it does not name."""
        if any(r.matches(check) for r in self.drain_never):
            return False
        return not self.drain_only or any(r.matches(check) for r in self.drain_only)

    def ref(self, line: int) -> str:
        return f"{self.path}:{line}"

    def severity_for(self, check: str) -> Optional[Severity]:
        """The rule for a check id: an exact id wins over a pattern, a later pattern over an earlier one."""
        exact = [s for s in self.severity if s.check == check]
        if exact:
            return exact[-1]
        found = [s for s in self.severity if s.matches(check)]
        return found[-1] if found else None


def path_from(option: Optional[str]) -> Optional[str]:
    """The spec to use: ``--spec``, else ``$NCCLDIAG_SPEC``, else none (there is no default location)."""
    return option or os.environ.get(ENV) or None


def load_given(option: Optional[str], causes_file: Optional[str] = None) -> Optional[Spec]:
    """The spec of ``--spec`` or ``$NCCLDIAG_SPEC`` with the causes of ``--causes FILE`` added, read and validated
    before any work; without a spec, ``--causes FILE`` alone is read as one (a spec of causes only); None with
    neither."""
    path = path_from(option)
    spec = load(path) if path else None
    if causes_file is None:
        return spec
    rows = causes.load(causes_file)
    if spec is None:
        return Spec(path=causes_file, causes=tuple(rows))
    spec.causes = causes.merged(spec.causes, rows)
    return spec


def load(path: str) -> Spec:
    """The site spec at ``path``, read (:func:`nccldiag.spec.causes.read`) and validated."""
    return loads(causes.read(path, "--spec"), path)


def loads(text: str, path: str = "spec.toml") -> Spec:
    data, lines = tomlfile.loads(text, path)
    spec = Spec(path=path)

    def err(at: Tuple[str, ...], message: str) -> UsageError:
        return UsageError(f"{path}:{tomlfile.line_of(lines, at)}: {message}")

    for top, body in data.items():
        if top not in TOP:
            raise err((top,), f"unknown table or key '{top}'{_near(top, TOP)} (known: {', '.join(TOP)})")
        if top == "schema":
            if body != SCHEMA:
                raise err((top,), f"schema = {body!r}: this nccldiag reads {SCHEMA!r}")
            continue
        if top == "cause":
            spec.causes = tuple(causes.rows_of(text, path, data))
            continue
        if not isinstance(body, dict):
            raise err((top,), f"'{top}' should be a table ([{top}]), not a {_type(body)}")
        if top == "severity":
            spec.severity = _severity(body, lines, err)
        elif top == "thresholds":
            for k, v in body.items():
                spec.thresholds[k] = (_threshold(k, v, err), spec.ref(tomlfile.line_of(lines, (top, k))))
        elif top == "bandwidth":
            _bandwidth(spec, body, lines, err)
        elif top == "drain":
            for k, v in body.items():
                if k not in DRAIN_KEYS:
                    raise err((top, k), f"unknown key 'drain.{k}'{_near(k, DRAIN_KEYS)} (known: {', '.join(DRAIN_KEYS)})")
                if not isinstance(v, list) or not all(isinstance(c, str) for c in v):
                    raise err((top, k), f"drain.{k} should be an array of check ids, e.g. [\"gpu.*\", \"xid.critical\"]")
                rules = [Severity(c, "drain", tomlfile.line_of(lines, (top, k))) for c in v]
                for r in rules:
                    _check_id(r.check, (top, k), err)
                setattr(spec, f"drain_{k}", rules)
        elif top == "nic":
            for model, keys in body.items():
                if not isinstance(keys, dict):
                    raise err((top, model), f"'nic.{model}' should be a table ([nic.{tomlfile.key(model)}]) of one "
                                            "HCA model's keys, not a value")
                spec.nic_models[model] = tomlfile.line_of(lines, (top, model))
                for k, v in keys.items():
                    spec.expects.append(_expect((top, model, k), v, lines, err, model))
        else:
            for k, v in body.items():
                spec.expects.append(_expect((top, k), v, lines, err))
    return spec


def _expect(at, v, lines, err, model=None) -> Expect:
    f = F.field_for(at)
    if f is None:
        known = sorted({p.path[-1] for p in F.FIELDS if p.path[0] == at[0]})
        raise err(at, f"unknown key '{'.'.join(at)}'{_near(at[-1], known)} (known in [{at[0]}"
                      f"{'.MODEL' if model else ''}]: {', '.join(known)})")
    if isinstance(v, dict):
        raise err(at, f"'{'.'.join(at)}' should be a value, not a table")
    where = ".".join(at)
    if f.kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise err(at, f"{where} should be a whole number, not {_type(v)} {v!r}")
    elif f.kind == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise err(at, f"{where} should be a number, not {_type(v)} {v!r}")
        v = float(v)
    elif f.kind == "size":
        size = F.parse_size(v)
        if size is None:
            raise err(at, f"{where} should be a size (\"unlimited\", \"64 GiB\", \"512 MiB\" or a number of bytes), "
                          f"not {v!r}")
        v = size
    elif not isinstance(v, str) or not v.strip():
        raise err(at, f"{where} should be a non-empty string, not {_type(v)} {v!r}")
    if f.kind in ("int", "float"):
        if (f.lo is not None and v < f.lo) or (f.hi is not None and v > f.hi):
            rng = f"from {f.lo:g}" + (f" to {f.hi:g}" if f.hi is not None else " up")
            raise err(at, f"{where} = {v!r} is impossible (a value {rng})")
    if f.choices and v not in f.choices:
        raise err(at, f"{where} = {v!r}: one of {', '.join(f.choices)}")
    return Expect(f, v, tomlfile.line_of(lines, at), model)


def _threshold(k: str, v: Any, err) -> Any:
    from nccldiag.spec import thresholds

    t = thresholds.KEYS.get(k)
    at = ("thresholds", k)
    if t is None:
        raise err(at, f"unknown key 'thresholds.{k}'{_near(k, thresholds.KEYS)} (known: {', '.join(thresholds.KEYS)})")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (t.kind == "int" and not isinstance(v, int)):
        raise err(at, f"thresholds.{k} should be a {'whole number' if t.kind == 'int' else 'number'}, not "
                      f"{_type(v)} {v!r}")
    if v < t.lo or (t.hi is not None and v > t.hi):
        rng = f"from {t.lo:g}" + (f" to {t.hi:g}" if t.hi is not None else " up")
        raise err(at, f"thresholds.{k} = {v!r} is impossible (a value {rng})")
    return v


def _gbps(where: str, v: Any, at, err) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise err(at, f"{where} should be a number of GB/s, not {_type(v)} {v!r}")
    if v <= 0:
        raise err(at, f"{where} = {v!r} is impossible (a busbw above 0 GB/s)")
    return float(v)


def _bandwidth(spec: Spec, body: Dict[str, Any], lines, err) -> None:
    """``[bandwidth]``: the busbw the probe should reach, across nodes and on one, and per setting."""
    known = BANDWIDTH_KEYS + ("setting",)
    for k, v in body.items():
        at = ("bandwidth", k)
        if k not in known:
            raise err(at, f"unknown key 'bandwidth.{k}'{_near(k, known)} (known: {', '.join(known)})")
        if k == "setting":
            if not isinstance(v, dict):
                raise err(at, "bandwidth.setting should be a table ([bandwidth.setting]) of probe setting names "
                              "and GB/s, e.g. ring = 370")
            for name, gbps in v.items():
                where = f"bandwidth.setting.{tomlfile.key(name)}"
                spec.bandwidth[f"setting.{name}"] = (_gbps(where, gbps, at + (name,), err),
                                                     spec.ref(tomlfile.line_of(lines, at + (name,))))
        else:
            spec.bandwidth[k] = (_gbps(f"bandwidth.{k}", v, at, err), spec.ref(tomlfile.line_of(lines, at)))


def expected_busbw(spec: Optional[Spec], setting: str, multi: bool) -> Optional[Tuple[float, str, str]]:
    """``(GB/s, key, "site.toml:30")`` the spec expects of a probe setting (its own figure, else the scope's)."""
    if spec is None:
        return None
    for key in (f"setting.{setting}", "inter_node_gbps" if multi else "intra_node_gbps"):
        if key in spec.bandwidth:
            gbps, ref = spec.bandwidth[key]
            return gbps, key, ref
    return None


def threshold(spec: Optional[Spec], key: str) -> Optional[Tuple[Any, str]]:
    """``(value, "site.toml:40")`` of a ``[thresholds]`` key the spec gives, else None."""
    return None if spec is None else spec.thresholds.get(key)


def _flatten(body: Dict[str, Any], prefix: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], Any]]:
    out = []
    for k, v in body.items():
        if isinstance(v, dict):
            out.extend(_flatten(v, prefix + (k,)))
        else:
            out.append((prefix + (k,), v))
    return out


def _severity(body, lines, err) -> List[Severity]:
    out = []
    # a bare dotted key (gpu.spec_driver = "warn") is a nested table to TOML: its parts are the check id
    for sub, level in _flatten(body):
        at = ("severity",) + sub
        check = ".".join(sub)
        if not isinstance(level, str) or level not in LEVELS:
            raise err(at, f"severity of {check} = {level!r}: one of {', '.join(LEVELS)}")
        _check_id(check, at, err)
        out.append(Severity(check, level, tomlfile.line_of(lines, at)))
    return out


def _check_id(check: str, at, err) -> None:
    """A check id (or a pattern of them) that nccldiag can report, else an error naming the line."""
    known = known_checks()
    areas = sorted({c.split(".", 1)[0] for c in known})
    area = check.split(".", 1)[0]
    if area not in areas or "." not in check:
        raise err(at, f"unknown check id '{check}': it should start with an area "
                      f"({', '.join(areas)}), e.g. firmware.spec_hca_fw")
    if "*" in check:
        if not any(fnmatch.fnmatchcase(c, check) for c in known) and area not in _DYNAMIC:
            raise err(at, f"'{check}' matches no check id of nccldiag")
    elif check not in known and area not in _DYNAMIC:
        raise err(at, f"unknown check id '{check}'{_near(check, sorted(known))} (docs/checks.md and "
                      "docs/spec.md list them)")


# Areas whose check ids are made at run time: consistency.<area>.<key>, ssh.<failure kind>.
_DYNAMIC = ("consistency", "ssh")
_ID = None


def known_checks() -> set:
    """Every check id nccldiag can report: those written in the areas' modules, the spec's own, and the
    errors every area has."""
    global _ID
    if _ID is None:
        import inspect

        from nccldiag import areas

        ids = {f.check for f in F.FIELDS}
        for a in areas.all_areas():
            try:
                src = inspect.getsource(a)
            except (OSError, TypeError):
                src = ""
            ids.update(re.findall(r'"(%s\.[a-z_]+)"' % re.escape(a.NAME), src))
            ids.update(f"{a.NAME}.{k}" for k in ("parse", "judge", "not_checked", "collected"))
        ids.update(_run_checks())
        _ID = ids
    return _ID


# The modules whose findings the probe, isolate and log commands report (their AREA, and the ids they write).
_RUN_MODULES = ("nccldiag.probe.analysis", "nccldiag.probe.results", "nccldiag.isolate.run",
                "nccldiag.nccl.checks", "nccldiag.nccl.ras_checks")


def _run_checks() -> set:
    import importlib
    import inspect

    from nccldiag.node import collectives

    ids = {"probe.spec_not_checked", "isolate.spec_not_checked", "isolate.spec_threshold", "probe.setup"}
    ids.update(f"probe.{c}" for c in collectives.NAMES)  # one finding per collective of a setting
    for name in _RUN_MODULES:
        mod = importlib.import_module(name)
        area = getattr(mod, "AREA", None)
        try:
            src = inspect.getsource(mod)
        except (OSError, TypeError):
            continue
        if area:
            ids.update(re.findall(r'"(%s\.[a-z_]+)"' % re.escape(area), src))
            ids.update(f"{area}.{k}" for k in re.findall(r'f"\{AREA\}\.([a-z_]+)"', src))
    return ids


def _near(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _type(v: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)
