"""What the programs that carry a node's output write before each of its lines (pure): the expressions every
reader of a line shares.

A job's output rarely reaches the admin as the processes wrote it. A launcher or a log collector labels each
line with the worker it came from, and a logging library writes the time, the level and the logger's name
before the message. The paste reader (:mod:`nccldiag.paste.lines`), the NCCL log reader
(:mod:`nccldiag.nccl.grammar`) and the failure lexicon (:mod:`nccldiag.knowledge.lexicon`) take the same ones
off, from these expressions:

- :data:`WORKER`: a worker's or a collector's label, each as the tool writes it:

  - Ray's ``(NAME pid=PID, ip=IP) `` (``print_worker_logs`` in python/ray/_private/worker.py: an actor's or a
    task's name, the pid, the address where the worker is on another node; ``(pid=PID) `` for a worker without
    a name), as vLLM's workers write it too (``(VllmWorkerProcess pid=1234) ``, and without the pid);
  - ``kubectl logs --prefix``'s ``[pod/NAME/CONTAINER] `` (``fmt.Sprintf("[pod/%s/%s] ", ...)`` in kubectl's
    pkg/cmd/logs/logs.go), which names the pod;
  - ``docker compose logs``' ``NAME  | `` (the container's name padded to one more than the longest one's, then
    `` | ``: ``setPrefix`` in cmd/formatter/logs.go of docker/compose); compose names a container ``SERVICE-N``
    (``PROJECT_SERVICE_N`` before v2), never as a device is named (``mlx5_0``);
  - Open MPI's ``[HOST:PID] `` (``"[%s:%05d] "``, the pid of at least five digits: the prefix of its verbose
    output stream, opal/util/output.c, and of its stack traces, opal/util/stacktrace.c), which names the host;

- :data:`LOGGER`: a logging library's label after its time (or without one), each format as its library
  documents it:

  - Python ``logging``'s ``BASIC_FORMAT`` ``%(levelname)s:%(name)s:%(message)s`` (``ERROR:root:``,
    ``ERROR:torch.distributed.elastic.multiprocessing.api:``), and the format of the logging HOWTO,
    ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``, whose time the readers take off as a time;
  - loguru's default ``{time} | {level: <8} | {name}:{function}:{line} - {message}`` (loguru/_defaults.py);
  - rich's ``RichHandler``: the level name padded to 8 after the time ``[%x %X]``.

  The paste reader and the NCCL log reader read the line after the label. The failure lexicon reads the label
  too: a level of ``ERROR`` or ``CRITICAL`` is the program's own word that something went wrong, whatever its
  message says; the relays that carry a child's lines through a logger give them ``INFO`` or ``WARNING``
  (Airflow's ``SubprocessHook``, Celery's redirected standard output).

Every expression is anchored at the front of the text it is matched on and its repeats are bounded: each runs in
time linear in the line.
"""
from __future__ import annotations


import html
import re

from nccldiag import rx

_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"  # logging's level names (getLevelName)
_LOGURU_LEVEL = r"(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)"

#: a worker's or a collector's label (see the module's docstring); ``host`` is the pod or the host it names
WORKER = (
    r"\((?:[A-Za-z_][\w.:-]{0,100} )?pid=\d{1,10}(?:, ip=[\w.:-]{1,64})?\)[ \t]|"
    r"\((?:VllmWorkerProcess|RayWorkerWrapper|EngineCore(?:_\d{1,4})?|Worker(?:_TP\d{1,4})?)\)[ \t]|"
    r"\[pod/(?P<host>[\w.-]{1,253})(?:/[\w.-]{1,253})?\][ \t]|"
    r"\[(?P<mpihost>[A-Za-z][\w.-]{0,252}):\d{5,10}\][ \t]|"
    r"(?:[A-Za-z][\w.-]{0,62}-|[A-Za-z][\w.-]{0,62}_[A-Za-z][\w.-]{0,62}_)\d{1,4}[ \t]{2,40}\|[ \t]")

#: a logging library's label in front of the line (Python logging's ``BASIC_FORMAT``)
LOGGER_FRONT = _LEVEL + r":[\w.<>-]{1,200}:"
#: a logging library's label after its time (see the module's docstring), Python logging's ``BASIC_FORMAT`` too
LOGGER = (
    LOGGER_FRONT + r"|"
    r"-[ \t][\w.<>-]{1,200}[ \t]-[ \t]" + _LEVEL + r"[ \t]-[ \t]|"
    r"\|[ \t]" + _LOGURU_LEVEL + r"[ \t]{0,8}\|[ \t][^\s:]{1,200}:[^\s:]{1,200}:\d{1,7}[ \t]-[ \t]|"
    r"(?:DEBUG   |INFO    |WARNING |ERROR   |CRITICAL)[ \t]")

#: a time of day in brackets as chat clients and rich write it: ``[10:32 AM]``, ``[01/01/24 12:00:00]``
CLOCK = (r"\d{1,2}:\d\d(?::\d\d)?[ \t]?[AaPp]\.?[Mm]\.?|"
         r"\d\d/\d\d/\d\d(?:\d\d)?[ \t]\d\d:\d\d:\d\d(?:[ \t]?[AaPp][Mm])?")

# a terminal's control sequence (colours, a cursor's moves, a line cleared), and the ESC of a sequence cut short
_ANSI = rx.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b[()][A-Z0-9]|\x1b")


def plain(line: str) -> str:
    """``line`` as a terminal shows it: without its colour codes (``rich``, loguru, Ray colour what they write),
    and, where a carriage return rewrote the line (a progress bar's frames), what was written after the last one."""
    if "\r" in line:
        line = line.rstrip("\r")
        line = line[line.rfind("\r") + 1:]
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    return line


#: the HTML escapes a web page writes for the characters a word of a reader may hold (a quote mark, an ampersand,
#: an angle bracket): a line holding one is handed to the readers, which read it decoded (:func:`unquoted`)
ESCAPES = ("&quot;", "&#", "&apos;", "&amp;", "&lt;", "&gt;")
_ENTITY = rx.compile(r"&(?:[a-zA-Z]{2,8}|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")
_BREAK_END = rx.compile(r"(?:<br[ \t]{0,4}/?>[ \t]{0,8}){1,4}$", re.I)
_QUOTE = rx.compile(r"[ \t]{0,12}(?:>[ \t]?){1,8}")


def unquoted(line: str) -> str:
    """``line`` as it was before a web page or a chat quoted it: its HTML escapes decoded (``&#x27;``, ``&quot;``,
    ``&gt;``), the ``<br>`` that ends a line copied from a page and the markdown quote marks (``> ``) before it
    taken off. The NCCL log reader's ``clean`` does the same (:mod:`nccldiag.nccl.grammar`)."""
    if "&" in line and ";" in line and _ENTITY.search(line):
        line = html.unescape(line).replace("\xa0", " ")
    if "<" in line and ">" in line:
        line = _BREAK_END.sub("", line.rstrip())
    if ">" in line[:16]:
        m = _QUOTE.match(line)
        if m:
            line = line[m.end():]
    return line
