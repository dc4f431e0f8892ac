"""The collection script: one POSIX sh program that runs on each node.

It runs every selected source in turn, each bounded by ``timeout`` when the
node has it, and prints its standard output between two marker lines::

    @@nccldiag:<mark>:begin <source>@@
    ...raw output...
    @@nccldiag:<mark>:end <source> rc=<exit status>@@

``<mark>`` is a random value nccldiag makes for each run, written into the
script itself (which goes to the node on standard input): it is in no command
line and in no environment, so no program a source runs can learn it and end
its section early or open another one. A script printed for use by hand
(``nccldiag collect --script``) takes it from ``$NCCLDIAG_MARK``, if set, and
unsets it before any source runs; without one the markers are
``@@nccldiag:begin <source>@@``. Only the script's own source names, in the
script's order, are read back (:func:`source_names`,
:func:`nccldiag.collect.sections.split_sections`).

The script only reads: files under ``$R`` (empty on a live node) and the output
of status commands. ``nccldiag collect --script`` prints exactly this text.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Sequence

from nccldiag import __version__, rx
from nccldiag.areas.base import Source


_PRELUDE = r"""#!/bin/sh
# nccldiag {version} collection script (read-only). Areas: {areas}
# Each source prints between '@@nccldiag[:MARK]:begin NAME@@' and '@@nccldiag[:MARK]:end NAME rc=N@@'.
R="${{NCCLDIAG_ROOT:-}}"
# The run's mark goes into every marker, so that no text a source prints can
# pass for a marker; it stays a variable of this shell, never exported.
{mark_line}
unset NCCLDIAG_MARK
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


_MARK = rx.compile(r"^[0-9a-f]{8,64}$")
_RUN_LINE = rx.compile(r"^_run ([A-Za-z0-9_]{1,64}) \d+ ", re.M)


def build_script(sources: Sequence[Source], areas: Iterable[str] = (), mark: str = "") -> str:
    """The whole script for ``sources`` (deduplicated by name, in order), its markers carrying ``mark``."""
    if mark and not _MARK.match(mark):
        raise ValueError(f"not a section mark: {mark!r}")
    mark_line = f"_M=':{mark}'" if mark else '_M="${NCCLDIAG_MARK:+:$NCCLDIAG_MARK}"'
    lines: List[str] = [_PRELUDE.format(version=__version__, areas=",".join(areas) or "-", mark_line=mark_line)]
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


MESH_SECTION = "ssh_mesh"
HEARTBEAT = 10  # seconds between the blank lines a node sends while it waits for its node-to-node test

# Started before the first source: the node-to-node test in the background, its lines into a file of its own,
# bounded (when the node has ``timeout``).
_MESH_START = """_mf=$(mktemp 2>/dev/null) || _mf=
_mp=
if [ -n "$_mf" ]; then
  ( if [ -n "$_T" ]; then $_T -k 2 {bound} sh -c {command}; else sh -c {command}; fi ) </dev/null >"$_mf" 2>/dev/null &
  _mp=$!
fi
export _mf
"""

# After the last source: the test waited for, a blank line every few seconds meanwhile (between sections,
# where no section reads it), so that a long test is never a silent node; then its lines as the last section.
# Nothing left behind holds the output open: the heartbeat's sleep writes nowhere.
_MESH_WAIT = """if [ -n "$_mp" ]; then
  ( while :; do sleep {beat} </dev/null >/dev/null 2>&1; echo; done ) </dev/null 2>/dev/null &
  _hb=$!
  wait "$_mp"
  kill "$_hb" 2>/dev/null
fi
"""
# The section itself: the file's lines, or, where no file could be made, the test run here and now.
_MESH_SECTION = 'if [ -n "$_mf" ] && [ -f "$_mf" ]; then cat "$_mf"; rm -f "$_mf"; else sh -c {command}; fi'


def with_mesh(script: str, command: str, bound: int, beat: int = HEARTBEAT) -> str:
    """``script`` that also runs the node-to-node test ``command`` (:func:`nccldiag.areas.mesh.build_command`),
    within the same login: started in the background before the first source, bounded at ``bound`` seconds,
    its output the script's last section (:data:`MESH_SECTION`). After its last source the script waits for
    the test, sending a blank line every ``beat`` seconds meanwhile (the head stops a node that is silent
    for --command-timeout).

    One login per node, where a channel of its own for the test was a second login on the node that runs it:
    on a shared home whose shell start-up queues on a lock (pyenv's, conda's), every login counts."""
    first = _RUN_LINE.search(script)
    if first is None:
        raise ValueError("not a collection script: no source in it")
    quoted = _sh_single_quote(command)
    start = _MESH_START.format(bound=int(bound), command=quoted)
    wait = _MESH_WAIT.format(beat=int(beat))
    # the section's own bound: the test's, when it runs here (no file could be made)
    tail = f"_run {MESH_SECTION} {int(bound)} {_sh_single_quote(_MESH_SECTION.format(command=quoted))}\n"
    return script[:first.start()] + start + script[first.start():].rstrip("\n") + "\n" + wait + tail


def source_names(script: str) -> List[str]:
    """The names of the sources ``script`` runs, in its order (pure): the only sections read back from it."""
    return _RUN_LINE.findall(script)
