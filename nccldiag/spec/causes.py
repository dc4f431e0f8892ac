"""Causes a site adds: ``[[cause]]`` rows of its spec, or of ``--causes FILE``, read and validated (pure but
:func:`load`).

A row names a failure line nccldiag does not know and the cause it means::

    [[cause]]
    id = "site.gpfs_waiters"
    category = "io_hang"
    pattern = 'mmfs.*waiting (for|on) .* seconds'
    fix = "Drain the node and page the storage team"

The diagnosis rules judge it as they judge the rows of their own catalog
(:mod:`nccldiag.diagnosis.signature`), and its diagnosis names the line that
defined it (``defined_at``). Every mistake is a :class:`UsageError` naming
``file:line`` before any work: TOML syntax, an unknown or missing key, a
value of the wrong type, a pattern that does not compile (or is longer than
:data:`MAX_PATTERN`), a category outside the vocabulary
(``knowledge/categories.toml``), an id of nccldiag's own catalog or given twice.
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag import knowledge, rx
from nccldiag.model import registry
from nccldiag.model.errors import UsageError

KEY = "cause"
REQUIRED = ("id", "category", "pattern", "fix")
TEXTS = ("title", "summary", "why", "fix", "workaround", "confirm")  # non-empty strings
KEYS = REQUIRED + ("title", "summary", "why", "workaround", "confirm", "kinds", "unless", "findings",
                   "explained_by", "severity", "confidence", "rule")
# a cause judged by the site's own code: the dotted path of a module with ID, TITLE, FIX and diagnose(inputs), as
# the modules of nccldiag/diagnosis/rules/ have them
RULE_KEYS = ("id", "category", "rule", "explained_by")
# where a cause's words are searched (nccldiag.diagnosis.clues.KINDS, and the lines of the files given to 'log')
KINDS = ("warn", "last-error", "app", "error", "kernel", "finding", "failure", "line", "last")
SEVERITIES = ("fail", "warn", "info")
CONFIDENCES = ("high", "medium", "low")
RESERVED = ("unexplained", "advice")  # the verdicts of no known cause
MAX_PATTERN = 1000  # characters of a site's regex
# a repeated group (its body inside ( ), then + * or {n,}) and one atom of its body (an escape, a class, a character,
# each with its quantifier)
_GROUP = rx.compile(r"\((?!\?[>])((?:[^()\\]|\\.)*)\)(?:[+*]|\{\d*,\})(?!\+)")
_ATOM = rx.compile(r"(\\.|\[(?:\\.|[^\]\\])*\]|[^|])([+*?]|\{\d*(?:,\d*)?\})?[?+]?")
ID = rx.compile(r"^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*$")
_KEY_LINE = rx.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
_HEADER = rx.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"'-]+)\s*\]\]?")

Row = Dict[str, Any]


def builtin() -> Dict[str, str]:
    """The ids of nccldiag's own catalog, each with the line that defines it."""
    return {r["id"]: r["where"] for r in knowledge.rows("causes.toml", KEY)}


def categories() -> List[str]:
    return [r["name"] for r in knowledge.rows("categories.toml", "category")]


def _key_lines(text: str, rows: Sequence[Row]) -> List[Dict[str, int]]:
    """For each row, the line of each of its keys (from its ``[[cause]]`` header to the next table header)."""
    out: List[Dict[str, int]] = []
    lines = text.splitlines()
    for r in rows:
        where = r["where"]
        start = int(where.rsplit(":", 1)[1]) if where.rsplit(":", 1)[-1].isdigit() else None
        keys: Dict[str, int] = {}
        if start is not None:
            for n in range(start, len(lines)):
                if _HEADER.match(lines[n]):
                    break
                m = _KEY_LINE.match(lines[n])
                if m:
                    keys.setdefault(m.group(1), n + 1)
        out.append(keys)
    return out


def rows_of(text: str, where: str, data: Optional[Dict[str, Any]] = None) -> List[Row]:
    """The validated ``[[cause]]`` rows of a TOML text (a spec, or a causes file); ``where`` names the file.
    Each row's ``where`` is ``file:line`` of its header; ``site`` marks it a site's."""
    found, _ = knowledge.rows_of_text(text, KEY, where)
    if data is not None and KEY in data and not isinstance(data[KEY], list):
        raise UsageError(f"{where}:{_line_of_key(text, KEY)}: '{KEY}' should be rows ([[{KEY}]]), each a table of "
                         f"one cause (docs/spec.md)")
    lines = _key_lines(text, found)
    ours = builtin()
    cats = categories()
    seen: Dict[str, str] = {}
    for row, keys in zip(found, lines):
        _row(row, keys, ours, cats, seen)
        seen[row["id"]] = row["where"]
    for row, keys in zip(found, lines):
        for other in row.get("explained_by", []):
            if other not in ours and other not in seen:
                near = _near(other, list(ours) + list(seen))
                raise _err(row, keys, "explained_by", f"explained_by names '{other}', which is no cause of "
                                                      f"nccldiag's catalog nor of this file{near}")
    return [dict(r, site=True) for r in found]


def _line_of_key(text: str, key: str) -> str:
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*(?:\[\[\s*%s\s*\]\]|%s\s*=)" % (re.escape(key), re.escape(key)), line):
            return str(n)
    return "?"


def _err(row: Row, keys: Dict[str, int], key: Optional[str], message: str) -> UsageError:
    where = row["where"]
    if key is not None and key in keys:
        where = f"{where.rsplit(':', 1)[0]}:{keys[key]}"
    return UsageError(f"{where}: {message}")


def _row(row: Row, keys: Dict[str, int], ours: Dict[str, str], cats: List[str], seen: Dict[str, str]) -> None:
    if "value" in row and len(row) == 2:
        raise _err(row, keys, None, f"a [[{KEY}]] row should be a table of keys, not a value")
    for k in row:
        if k != "where" and k not in KEYS:
            raise _err(row, keys, k, f"unknown key '{KEY}.{k}'{_near(k, KEYS)} (known: {', '.join(KEYS)})")
    if "rule" in row:
        _rule(row, keys, ours, cats, seen)
        return
    for k in REQUIRED:
        if k not in row:
            has = ", ".join(sorted(set(row) - {"where"})) or "no key"
            raise _err(row, keys, None, f"a [[{KEY}]] row needs '{k}' (it has {has})")
    _id_and_category(row, keys, ours, cats, seen)
    for k in TEXTS:
        if k in row and (not isinstance(row[k], str) or not row[k].strip()):
            raise _err(row, keys, k, f"{KEY}.{k} should be a non-empty string, not {row[k]!r}")
    pats = row["pattern"] if isinstance(row["pattern"], list) else [row["pattern"]]
    if not pats:
        raise _err(row, keys, "pattern", "pattern should be a regular expression, or an array of them")
    for p in pats:
        _regex(row, keys, "pattern", p)
    if "unless" in row:
        _regex(row, keys, "unless", row["unless"])
    for k, vocabulary in (("kinds", KINDS), ("findings", None), ("explained_by", None)):
        if k in row:
            v = row[k]
            if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
                raise _err(row, keys, k, f"{KEY}.{k} should be an array of strings")
            bad = [x for x in v if vocabulary is not None and x not in vocabulary]
            if bad:
                raise _err(row, keys, k, f"{KEY}.{k}: unknown kind '{bad[0]}' (known: {', '.join(vocabulary)})")
    for k, allowed in (("severity", SEVERITIES), ("confidence", CONFIDENCES)):
        if k in row and row[k] not in allowed:
            raise _err(row, keys, k, f"{KEY}.{k} = {row[k]!r}: one of {', '.join(allowed)}")


def _id_and_category(row: Row, keys: Dict[str, int], ours: Dict[str, str], cats: List[str],
                     seen: Dict[str, str]) -> None:
    cid = row["id"]
    if not isinstance(cid, str) or not ID.match(cid):
        raise _err(row, keys, "id", f"id {cid!r} should be lower-case words joined by '.', '-' or '_', e.g. "
                                    "\"site.gpfs_waiters\"")
    if cid in ours or cid in RESERVED or cid.endswith(".internal"):
        at = f" ({ours[cid]})" if cid in ours else ""
        raise _err(row, keys, "id", f"id '{cid}' is nccldiag's own{at}: name the site's cause another way, e.g. "
                                    f"\"site.{cid.replace('-', '_')}\"")
    if cid in seen:
        raise _err(row, keys, "id", f"id '{cid}' is given twice (first at {seen[cid]})")
    cat = row["category"]
    if not isinstance(cat, str) or not (cat in cats or re.match(r"^other:[a-z0-9][a-z0-9-]*$", cat)):
        raise _err(row, keys, "category", f"unknown category {cat!r}{_near(str(cat), cats)}: one of "
                                          f"{', '.join(cats)}, or other:<slug> (docs/diagnoses.md)")


def _rule(row: Row, keys: Dict[str, int], ours: Dict[str, str], cats: List[str], seen: Dict[str, str]) -> None:
    """A cause judged by the site's code: the module at the dotted path ``rule``, imported now."""
    for k in row:
        if k != "where" and k not in RULE_KEYS:
            raise _err(row, keys, k, f"{KEY}.{k}: a cause judged by its rule module takes {', '.join(RULE_KEYS)} only")
    for k in ("id", "category"):
        if k not in row:
            raise _err(row, keys, None, f"a [[{KEY}]] row needs '{k}'")
    _id_and_category(row, keys, ours, cats, seen)
    given = row.get("explained_by", [])
    if not isinstance(given, list) or not all(isinstance(x, str) and x for x in given):
        raise _err(row, keys, "explained_by", f"{KEY}.explained_by should be an array of strings")
    path = row["rule"]
    if not isinstance(path, str) or not registry.dotted(path):
        raise _err(row, keys, "rule", f"{KEY}.rule should be the dotted path of a module (mysite.causes.gpfs), "
                                      f"not {path!r}")
    try:
        module = registry.load(path, "")
    except ImportError as exc:
        raise _err(row, keys, "rule", f"{KEY}.rule: {exc}") from None
    missing = [a for a in ("ID", "TITLE", "FIX", "diagnose") if not hasattr(module, a)]
    if missing or module.ID != row["id"]:
        raise _err(row, keys, "rule", f"{KEY}.rule {path}: a rule module has ID (here {row['id']!r}), TITLE, FIX "
                                      f"and diagnose(inputs); " + (f"it lacks {', '.join(missing)}" if missing else
                                                                   f"its ID is {module.ID!r}"))


def _regex(row: Row, keys: Dict[str, int], key: str, p: Any) -> None:
    """A site's regex: a string that compiles, not longer than :data:`MAX_PATTERN`."""
    if not isinstance(p, str) or not p:
        raise _err(row, keys, key, f"{KEY}.{key} should be a regular expression (a string), not {p!r}")
    if len(p) > MAX_PATTERN:
        raise _err(row, keys, key, f"{KEY}.{key} is {len(p)} characters long: at most {MAX_PATTERN}")
    try:
        re.compile(p)
    except re.error as exc:
        raise _err(row, keys, key, f"{KEY}.{key} {p!r} is not a regular expression Python reads: {exc}") from None
    nested = _nested(p)
    if nested:
        raise _err(row, keys, key, f"{KEY}.{key}: {nested!r} repeats a group that repeats inside, which can "
                                   "take ages on a line it does not match; write it without the nesting, or make "
                                   "the group atomic ((?>...)) or its quantifier possessive (++, *+)")


def _nested(p: str) -> Optional[str]:
    """A repeated group of ``p`` that can match the same text in many ways: a branch of its body made only of
    repeated atoms, one of them without bound ('(a+)+', '(\\w*\\s?)*'). On a long line it does not match, Python's
    engine tries every split of it. A branch with one atom that must match ('(\\d+\\.)+') is not one."""
    for m in _GROUP.finditer(p):
        body = re.sub(r"^\?(?::|[imsx]+:|P<\w+>)", "", m.group(1))
        for branch in body.split("|"):
            atoms = _ATOM.findall(branch)
            if atoms and all(q for _, q in atoms) and any(q in ("+", "*") or q.endswith(",}") for _, q in atoms):
                return m.group(0)
    return None


def load(path: str) -> List[Row]:
    """The rows of ``--causes FILE``: a TOML file of ``[[cause]]`` rows only."""
    text = read(path, "--causes")
    data = knowledge.loads(text, path)
    other = [k for k in data if k != KEY]
    if other:
        raise UsageError(f"{path}:{_line_of_key(text, other[0])}: a causes file holds [[{KEY}]] rows only, not "
                         f"'{other[0]}' (a site spec takes both: --spec)")
    return rows_of(text, path, data)


MAX_FILE = 1 << 20  # bytes of a site spec or a causes file: the largest real one is a few KiB


def read(path: str, option: str) -> str:
    """The text of a site spec or causes file ``path`` (given by ``option``), read as a file that tells nccldiag
    how to judge (:func:`nccldiag.atomic.read_regular_bytes` ``owned``): a regular file of at most
    :data:`MAX_FILE`, never a FIFO waited on, never another user's, nor through their links or directories.
    Anything else is a :class:`UsageError` naming it."""
    from nccldiag.atomic import NotRegular, TooLarge, Unsafe, read_regular_bytes

    try:
        raw = read_regular_bytes(path, MAX_FILE, owned=True)
    except (NotRegular, TooLarge, Unsafe) as exc:
        raise UsageError(f"{option} {exc}") from None
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UsageError(f"{path}:{line}: not UTF-8 text") from None


def patterns(rows: Sequence[Row]) -> List["re.Pattern[str]"]:
    """Every pattern of ``rows``, compiled once (what the lines of the files given to 'log' are searched for)."""
    out = []
    for r in rows:
        given = r.get("pattern", [])
        for p in given if isinstance(given, list) else [given]:
            out.append(re.compile(p))
    return out


def _near(word: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def merged(spec_rows: Sequence[Row], file_rows: Sequence[Row]) -> Tuple[Row, ...]:
    """The spec's rows and those of ``--causes FILE``; an id given in both is an error naming both lines."""
    seen = {r["id"]: r["where"] for r in spec_rows}
    for r in file_rows:
        if r["id"] in seen:
            raise UsageError(f"{r['where']}: id '{r['id']}' is given twice (first at {seen[r['id']]})")
    return tuple(spec_rows) + tuple(file_rows)
