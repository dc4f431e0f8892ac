"""The collection script: one POSIX sh program that runs on each node.

It runs every selected source in turn, each bounded by ``timeout`` when the
node has it, and prints its standard output between two marker lines::

    @@nccldiag:<mark>:begin <source>@@
    ...raw output...
    @@nccldiag:<mark>:end <source> rc=<exit status>@@

``<mark>`` is ``$NCCLDIAG_MARK``, a random value nccldiag makes for each run
(without it, ``@@nccldiag:begin <source>@@``), so that nothing a source prints
can end its section early or open another one.

The script only reads: files under ``$R`` (empty on a live node) and the output
of status commands. ``nccldiag collect --script`` prints exactly this text.
"""
from __future__ import annotations

from typing import Iterable, List, Sequence

from nccldiag import __version__
from nccldiag.areas.base import Source


_PRELUDE = r"""#!/bin/sh
# nccldiag {version} collection script (read-only). Areas: {areas}
# Each source prints between '@@nccldiag[:MARK]:begin NAME@@' and '@@nccldiag[:MARK]:end NAME rc=N@@'.
R="${{NCCLDIAG_ROOT:-}}"
# NCCLDIAG_MARK (set per run by nccldiag) goes into every marker, so that no
# text a source prints can pass for a marker.
_M="${{NCCLDIAG_MARK:+:$NCCLDIAG_MARK}}"
export R LC_ALL=C PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin"
if command -v timeout >/dev/null 2>&1; then _T=timeout; else _T=; fi
_run() {{
  _n=$1; _s=$2; shift 2
  printf '@@nccldiag%s:begin %s@@\n' "$_M" "$_n"
  if [ -n "$_T" ]; then $_T -k 2 "$_s" sh -c "$1" </dev/null 2>/dev/null; else sh -c "$1" </dev/null 2>/dev/null; fi
  _rc=$?
  printf '\n@@nccldiag%s:end %s rc=%s@@\n' "$_M" "$_n" "$_rc"
}}
"""


def _sh_single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


# ``_dump`` is a shell function; ``sh -c`` children do not inherit functions in
# POSIX sh, so its definition is prepended to the snippets that use it.
_DUMP_DEF = (
    "_dump() { for _f in \"$@\"; do [ -f \"$_f\" ] && [ -r \"$_f\" ] || continue; "
    "printf '==> %s <==\\n' \"${_f#\"$R\"}\"; cat \"$_f\" 2>/dev/null; echo; done; }; "
)


def build_script(sources: Sequence[Source], areas: Iterable[str] = ()) -> str:
    """The whole script for ``sources`` (deduplicated by name, in order)."""
    lines: List[str] = [_PRELUDE.format(version=__version__, areas=",".join(areas) or "-")]
    seen = set()
    for src in sources:
        if src.name in seen:
            continue
        seen.add(src.name)
        cmd = src.command.strip()
        if "_dump" in cmd:
            cmd = _DUMP_DEF + cmd
        lines.append(f"_run {src.name} {int(src.timeout)} {_sh_single_quote(cmd)}")
    return "\n".join(lines) + "\n"
