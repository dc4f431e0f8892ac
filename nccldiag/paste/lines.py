"""Reading a pasted line through what surrounds it (pure): the clean line, what was taken off it, in order.

What people put around a node's output when they paste it, outermost first, each a :class:`Layer`:

- ``markup``: what chat and web pages leave (colour codes, HTML entities such as ``&gt;``, ``**`` bold, inline
  code, a fence line), and what a carriage return wrote over (a progress bar's frames before the line: a terminal
  shows what follows the last one); a ``<br>`` is a line break (:func:`split_breaks`);
- ``cell``: a markdown table's cell holding the whole line (``| CA 'mlx5_0' |``: both pipes go);
- ``quote``: a quote mark ``> `` (nested: ``> > ``);
- ``comment``: ``# `` before a command's output that the admin quoted as a comment (or a root prompt);
- ``prompt``: a shell prompt (``root@node1:~# cmd``, ``[user@node1 ~]$ cmd``, ``$ cmd``; fish's and SUSE's
  ``user@node1 ~> cmd``, a powerline prompt's segments ``user@node1 > ~/dir > cmd``, oh-my-zsh's
  ``➜  dir git:(main) cmd``, a mail archive's ``[root_at_node1 ~]# cmd``): the clean line is the command, and the prompt names the host where it has one;
- ``grep``: the file name ``grep`` puts before each line it found (``messages:Jun 17 ...``,
  ``/var/log/kern.log:12:...``): a path, a log file's name, or a name ending ``.log``/``.txt``/``.out``/``.err``;
- ``launcher``: a launcher's rank label (``[default3]:``, ``[rank0]:``, ``[1,0]<stdout>:``, srun ``--label``'s
  ``3: ``), or a worker's or a collector's label (:data:`nccldiag.fronts.WORKER`: Ray's and vLLM's
  ``(RayTrainWorker pid=1234, ip=10.0.0.5) ``, kubectl's ``[pod/name/container] `` and Open MPI's
  ``[node017:01234] ``, which name the pod and the host, docker compose's ``trainer-1  | ``);
- ``time``: a timestamp (ISO, ``[ 123.456]``, dmesg ``-H``'s ``[  +0.000004]``, ``-T``'s
  ``[Tue Apr 15 16:50:03 2025]``, a bracketed ISO time, a chat's ``[10:32 AM]``, rich's ``[01/01/24 12:00:00]``),
  ``dmesg --decode``'s ``kern  :warn  : ``, or a syslog or journal prefix (``Nov 29 00:12:15 host kernel: ``,
  ``Mar 03 12:00:01 host unit[123]: ``, which names the host);
- ``logger``: a logging library's label (:data:`nccldiag.fronts.LOGGER`: Python ``logging``'s ``ERROR:root:``, or
  after its time ``- name - ERROR - ``, loguru's ``| INFO     | module:function:12 - ``, rich's level): what
  follows it is the line the program logged, read as a line of its own;
- ``number``: a forum's or an editor's line number (``  10. ``, ``10 | ``; ``10: `` reads as a launcher's label,
  whose number then goes up by one a line);
- ``bullet``: a markdown list's marker (``- ``, ``* ``, ``+ ``) before every line;
- ``host``: pdsh's, clush's or a log shipper's ``host: `` (a name with a digit, a dot or a dash, an address, or an
  anonymised one: ``<node ip>``, ``xxxx``, ``***``), never a kernel device's name (``nvidia-nvswitch3: ``).

:func:`peel` takes them off one after the other, as many as there are (``> [rank0]: 2025-01-01T00:00:00Z ...``).
An anonymised field (``PCI:...``, ``xxxx``, ``<redacted>``, ``***``, ``...``) is left in the text, where the
parsers read through it; a host anonymised so names no host. Every expression here is anchored, its repeats
bounded: each runs in time linear in the line.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from nccldiag import fronts, rx

MAX_LAYERS = 8  # layers taken off one line at most
MAX_LINE = 4096  # the characters of a line read (the kernel's records and the tools' lines are under 1 KiB)


@dataclass(frozen=True)
class Layer:
    """One thing taken off the front of a line: its kind, the text as written, the host it names (or None)."""

    kind: str
    text: str
    host: Optional[str] = None


@dataclass(frozen=True)
class Peeled:
    """A line read through its layers: ``base`` is the line after its markup, ``layers`` what was taken off the
    front of it, outermost first; :meth:`stage` is the text after the first ``k`` of them."""

    line: str
    base: str
    layers: Tuple[Layer, ...]
    markup: bool = False  # whether markup was removed from inside the line

    def stage(self, k: int) -> str:
        text = self.base[sum(len(layer.text) for layer in self.layers[:k]):]
        if k and self.layers[0].kind == "cell":
            text = text.rstrip()[:-1].rstrip()  # the cell's closing pipe
        return text

    @property
    def text(self) -> str:
        """The clean line: every layer taken off."""
        return self.stage(len(self.layers))

    def host(self, k: Optional[int] = None) -> Optional[str]:
        """The innermost host named by the first ``k`` layers (all of them by default)."""
        for layer in reversed(self.layers[:len(self.layers) if k is None else k]):
            if layer.host:
                return layer.host
        return None

    def kinds(self, k: int) -> Tuple[str, ...]:
        return tuple(layer.kind for layer in self.layers[:k])

    def trailing(self) -> str:
        """The output a transcript writes after the command on its line (``uname -r # 5.15.0-94-generic``), ""
        where the line is no command with such a note."""
        text = self.text
        if " #" not in text or not COMMAND.match(text):
            return ""
        return text.partition(" #")[2].strip()

    def stripped(self) -> List[Tuple[str, str]]:
        """What was taken off, as ``(kind, text)`` pairs (the markup first, where there was some)."""
        return ([("markup", "")] if self.markup else []) + [(la.kind, la.text) for la in self.layers]


# ---- markup ---------------------------------------------------------------------------------------------------

_ANSI = rx.compile(r"\x1b\[[0-9;?]{0,20}[A-Za-z]")
_FENCE = rx.compile(r"[ \t]{0,12}(?:```|~~~)")
_BREAK = rx.compile(r"<br[ \t]{0,4}/?>", re.I)
_BREAK_END = rx.compile(r"(?:<br[ \t]{0,4}/?>[ \t]{0,8}){1,4}$", re.I)


def split_breaks(line: str) -> List[str]:
    """The lines an HTML ``<br>`` joined into one (the line itself when it has none)."""
    if "<" not in line or not _BREAK.search(line):
        return [line]
    return _BREAK.split(line)


def unmark(line: str) -> Tuple[str, bool]:
    """The line without the markup chat and web pages leave, and whether there was some."""
    out = line.rstrip("\r\n")
    if out[:1] == "\ufeff":  # the byte order mark a Windows editor writes at the start of a text
        out = out[1:]
    if "\r" in out:  # a carriage return inside the line: a terminal shows what was written after the last one
        out = out[out.rfind("\r") + 1:]
    if "\x1b" in out:
        out = _ANSI.sub("", out)
    if "&" in out and ";" in out:
        out = html.unescape(out).replace("\xa0", " ")
    if "<" in out and _BREAK_END.search(out):  # the break that ends a line copied from a web page
        out = _BREAK_END.sub("", out)
    if out[:1] in " \t`~" and _FENCE.match(out):
        return "", True
    if "**" in out:
        out = out.replace("**", "")
    if "`" in out:
        out = out.replace("`", "")
    return out, out != line.rstrip("\r\n")


# ---- the layers -----------------------------------------------------------------------------------------------

_MONTHS = r"(?:[A-Z][a-z]{2}|[a-z]{3}\.?)"
_NUMBER = rx.compile(r"[ \t]{0,8}\d{1,6}(?:\.[ \t]|[ \t]{0,2}\|(?:[ \t]|$))")
_BULLET = rx.compile(r"[ \t]{0,12}[-*+\u2022][ \t]")
_CELL = rx.compile(r"[ \t]{0,12}\|[ \t]?")
_QUOTE = rx.compile(r"[ \t]{0,12}>(?:[ \t]|$)")
_COMMENT = rx.compile(r"[ \t]{0,12}#(?:[ \t]|$)")
PROMPT = rx.compile(
    r"(?:\([\w.-]{1,40}\)[ \t])?"  # a virtual environment's name
    # a powerline prompt's segments, each ended by its arrow as a page renders it: 'alex@exi > ~/Downloads > cmd'
    r"(?:[\w.-]{1,64}@(?P<segments>[\w.-]{1,253})(?: > [^>\n]{1,200}?){0,6} >"
    r"|\[?[\w.-]{1,64}@(?P<host>[\w.-]{1,253})(?:[ :][^\s#$>\]]{0,200})?\]?[ \t]?[#$%>]|\$"
    # a mail archive's copy, its '@' written '_at_' (mail-archive.com): '[root_at_node1 ~]#'
    r"|\[[\w.-]{1,64}_at_(?P<archived>[\w.-]{1,253})[ :][^\s#$>\]]{0,200}\][#$%>]"
    # oh-my-zsh's default theme (robbyrussell): an arrow, the directory's name, the git branch: '➜  dir git:(main) ✗'
    r"|\u279c {1,2}[^\s]{1,200}(?: git:\([^\s)]{1,200}\)(?: \u2717)?)?)(?:[ \t]|$)")
_GREP = rx.compile(r"(?:(?:[\w.~:-]{0,200}/){1,40}[\w.~-]{1,200}|[\w-]{1,100}\.(?:log|txt|out|err)(?:\.\d)?|"
                   r"messages|syslog|kern\.log|dmesg|daemon\.log)(?::\d{1,9})?[:-](?=\S)")
_GREP_FILE = rx.compile(r"[^:]{0,400}")
_LAUNCHER = rx.compile(r"[ \t]{0,8}(?:\[(?:default|rank|local_rank)?\d{1,6}\]:|\[\d{1,6},\d{1,6}\]<std(?:out|err)>:)|"
                       r"[ \t]{0,8}\d{1,6}:[ \t]|" + fronts.WORKER)
_LOGGER = rx.compile(fronts.LOGGER)
_LOGGER_FRONT = rx.compile(fronts.LOGGER_FRONT)
_DECODE = rx.compile(r"(?:kern|user|daemon|syslog)[ \t]{0,4}:[ \t]{0,4}[a-z]{3,7}[ \t]{0,4}:[ \t]?")
_BRACKET = rx.compile(
    r"\[[ \t]{0,12}(?:\+?\d{1,10}[.,]\d{1,9}|[A-Z][a-z]{2} [A-Z][a-z]{2}[ \t]{1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}|"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?|"
    r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})?|" + fronts.CLOCK + r")\](?::[ \t]?|[ \t]{0,2})")
_ISO = rx.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?:[ \t]|:[ \t]|$)")
# syslog and the journal: 'Nov 29 00:12:15 host proc[pid]: ' (single spaces), '-o short-iso''s ISO time before the
# host, whose process is the kernel or has its pid
_SYSLOG = rx.compile(
    r"(?:" + _MONTHS + r" {1,2}\d{1,2} \d\d:\d\d:\d\d(?:[.,]\d{1,9})? (?P<host>[^\s:\[\]]{1,253}) "
    r"(?P<proc>[^\s:\[\]]{1,100}(?:\[\d{1,10}\])?)|"
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)? (?P<ihost>[^\s:\[\]]{1,253}) "
    r"(?:kernel|[^\s:\[\]]{1,100}\[\d{1,10}\])):[ \t]?")
_HOST = rx.compile(r"(?P<host>[A-Za-z0-9][\w.-]{0,252}|<[a-z _-]{1,40}>|\*{3,8}|[xX]{3,8}):[ \t]")
# the names the kernel puts at the front of its messages, which are no hosts
_DEVICE = rx.compile(r"(?:nvidia|nvswitch|nv_|mlx\d|mlx5|ib\d|ibp|eth\d|en[opsx]|wl|bond|nvme|sd[a-z]|hfi|i40|ice|"
                     r"irdma|bnxt|qed|usb|ata\d|scsi|pci|acpi|xhci|virtio|vfio|dm-|md\d|loop|tty|cpu|mpt|megasas|"
                     r"ahci|i2c|drm|snd|hid|input|rtc|tpm|ipmi|kvm|efi|nfs|docker|veth|br-|vxlan|lo\b)", re.I)
# lspci's register fields with a number (LnkCtl2:, DevCap2:, LnkSta2:), the start of a line of lspci -vvv's, no hosts
_REGISTER = rx.compile(r"(?:Lnk|Dev|Slt|Rt)(?:Cap|Ctl|Sta)\d")
# the commands whose line names what follows it (a transcript without prompts)
COMMAND = rx.compile(r"[ \t]{0,4}(?:sudo[ \t]{1,4})?(?:ibstat|ibstatus|ibv_devinfo|ibdev2netdev|show_gids|rdma|"
                     r"nvidia-smi|dmesg|journalctl|systemctl|cat|grep|lspci|modinfo|lsmod|dkms|ulimit|df|dcgmi|"
                     r"mlnx_qos|sysctl|ethtool|mlxup|mlxfwmanager|flint|mstflint|tail|head|less|uname|ls)\b")
_ANONYMOUS = rx.compile(r"<[a-z _-]{1,40}>|\*{3,8}|[xX]{3,8}|\.\.\.")


def _named(host: str) -> Optional[str]:
    """The host a layer names, None where it was anonymised."""
    return None if _ANONYMOUS.fullmatch(host) else host


def _host_like(name: str) -> bool:
    if _ANONYMOUS.fullmatch(name):
        return True
    if _DEVICE.match(name) or _REGISTER.fullmatch(name):
        return False
    return any(c.isdigit() or c in ".-" for c in name)


def _time(text: str, first: str) -> Optional[Layer]:
    """A time at the front of ``text`` (indented, too: a quoted or reformatted dmesg), None when there is none."""
    if first in " \t":
        indent = len(text) - len(text.lstrip(" \t"))
        if indent > 40 or indent == len(text):
            return None
        inner = _time(text[indent:], text[indent])
        return Layer("time", text[:indent] + inner.text, inner.host) if inner is not None else None
    if first in "kuds":
        m = _DECODE.match(text)
        if m:
            return Layer("time", m.group(0))
    if first == "[":
        m = _BRACKET.match(text)
        if m:
            return Layer("time", m.group(0))
    if first.isdigit() or first.isalpha():
        m = _SYSLOG.match(text)
        if m:
            return Layer("time", m.group(0), _named(m.group("host") or m.group("ihost")))
    if first.isdigit():
        m = _ISO.match(text)
        if m:
            return Layer("time", m.group(0))
    return None


def _launcher(m: "re.Match[str]") -> Layer:
    return Layer("launcher", m.group(0), m.group("host") or m.group("mpihost"))


def _layer(text: str, before: Sequence[str] = ()) -> Optional[Layer]:
    """The outermost layer at the front of ``text``, None when there is none. ``before``: the kinds already taken
    off: after a time only a time, a launcher's label, a quote mark or a shell's prompt (a transcript stamped line
    by line) comes (what follows a time is the message, whose first word may look like a host: ``AMD-Vi: ``), and
    a file name comes once."""
    first = text[:1]
    if not first:
        return None
    if "logger" in before:  # a logger's label holds the line as it was given: read it as a line of its own
        before = before[len(before) - list(reversed(before)).index("logger"):]
    if not before and "|" in first + text[:12] and text.count("|") == 2 and text.rstrip().endswith("|"):
        m = _CELL.match(text)
        if m and len(text.strip()) > 2:
            return Layer("cell", m.group(0))
    # a paste site's line numbers, outermost, or under what was put before them when the numbered text was pasted
    # again (a chat's time, a launcher's label: '[rank3]:   10. State: Down')
    if first in " \t0123456789" and "number" not in before and "bullet" not in before:
        m = _NUMBER.match(text)
        if m:
            return Layer("number", m.group(0))
    if first in "-|DIWECFTS" and "time" in before:  # a logger's label after its time ('- name - ERROR - ')
        m = _LOGGER.match(text)
        if m:
            return Layer("logger", m.group(0))
    if first in " \t-*+\u2022":  # outermost, nested, or behind a launcher's or a host's label
        m = _BULLET.match(text)
        if m:
            return Layer("bullet", m.group(0))
    if "time" in before:
        if first in " \t[(0123456789":
            m = _LAUNCHER.match(text)
            if m:
                return _launcher(m)
        return _quoted(text, first) or _time(text, first)
    if first in "[(":  # a launcher's label before a time: '[1,3]<stderr>:' is no '[1,3]' time
        m = _LAUNCHER.match(text)
        if m:
            return _launcher(m)
    time = _time(text, first)
    if time is not None:
        return time
    quoted = _quoted(text, first)
    if quoted is not None:
        return quoted
    if first in " \t0123456789":
        m = _LAUNCHER.match(text)
        if m:
            return _launcher(m)
    if first in "DIWECF":
        m = _LOGGER_FRONT.match(text)
        if m:
            return Layer("logger", m.group(0))
    if first.isalpha():  # a collector's label: docker compose's 'trainer-1  | '
        m = _LAUNCHER.match(text)
        if m:
            return _launcher(m)
    m = _GREP.match(text) if "grep" not in before else None
    if m:
        return Layer("grep", m.group(0))
    m = _HOST.match(text)
    if m and _host_like(m.group("host")):
        return Layer("host", m.group(0), _named(m.group("host")))
    return None


def _quoted(text: str, first: str) -> Optional[Layer]:
    """A quote mark (``> ``), a comment mark (``# ``) or a shell prompt at the start of ``text``."""
    if first in " \t>":
        m = _QUOTE.match(text)
        if m:
            return Layer("quote", m.group(0))
    if first in " \t#":
        m = _COMMENT.match(text)
        if m:
            return Layer("comment", m.group(0))
    if "@" in text[:400] or first in "$(\u279c[":
        m = PROMPT.match(text)
        if m:
            host = m.group("host") or m.group("segments") or m.group("archived")
            return Layer("prompt", m.group(0), _named(host) if host else None)
    return None


def peel(line: str) -> Peeled:
    """``line`` read through its markup and the layers at its front (see the module's docstring)."""
    base, marked = unmark(line[:MAX_LINE])
    layers: List[Layer] = []
    rest = base
    for _ in range(MAX_LAYERS):
        layer = _layer(rest, [la.kind for la in layers])
        if layer is None or not layer.text:
            break
        layers.append(layer)
        rest = rest[len(layer.text):]
        if layer.kind == "prompt":
            break  # what follows a prompt is the command as typed
    return Peeled(line, base, tuple(layers), marked)


_LABEL = rx.compile(r"[ \t]{0,8}(\d{1,6}):[ \t]")


def _counted(mine: str, want: str, step: Optional[int]) -> bool:
    """Whether two ``N: `` labels are line numbers ``step`` lines apart (an editor's ``10: ``), not two ranks'."""
    a, b = _LABEL.fullmatch(mine), _LABEL.fullmatch(want)
    return step is not None and a is not None and b is not None and int(a.group(1)) - int(b.group(1)) == step


def follow(p: Peeled, template: Sequence[Layer], step: Optional[int] = None) -> Optional[str]:
    """The text of ``p`` after the layers ``template`` names (a block's first line's), None when its front is not
    the same: each layer of the same kind, a quote, comment or list mark and a host the same as written; a time
    or a line number of any value (each line has its own); a launcher's label the same, or a number ``step``
    lines on from the template's (``p`` is ``step`` lines below the template's line: an editor's ``10: ``)."""
    if len(p.layers) < len(template):
        if not p.base.strip() and not template:
            return ""
        # a blank line of the block keeps only some of its layers ('>' alone, a time with nothing after it)
        rest = p.stage(len(p.layers))
        if rest.strip():
            return None
        kinds = [la.kind for la in p.layers]
        return "" if kinds == [la.kind for la in template[:len(kinds)]] else None
    for mine, want in zip(p.layers, template):
        if mine.kind != want.kind:
            return None
        if mine.kind in ("quote", "comment", "bullet") and mine.text.strip() != want.text.strip():
            return None
        if mine.kind == "launcher" and mine.text != want.text and not _counted(mine.text, want.text, step):
            return None
        if mine.kind == "host" and mine.text != want.text:
            return None
        if mine.kind == "grep" and _GREP_FILE.match(mine.text).group(0) != _GREP_FILE.match(want.text).group(0):
            return None  # the same file ('grep -n' numbers each line)
    return p.stage(len(template))
