"""The real cases' texts pasted otherwise: the mutation harness of the case tests and ``scripts/bench_mutations``.

Each transformation here is a pure function of a text, written for the test: it transforms the real text of a
case (tests/realcases.py) as a user's paste damages or decorates it (a tail, a launcher's prefix, a redaction, a
terminal's wrap, a quote on a forum, a timestamp, a forum's line numbers or a markdown list, lines trimmed flush
left, a terminal's colours, a progress bar, a collector's or a logging library's label, a chat's or an issue's
wrapping, a web page's or a blog's typesetting, a page's paragraphs (lines run together), a container runtime's or the journal's JSON records), it never invents a line of output: each decoration is the tool's own format, cited where it is written. :func:`run` gives the transformed
files of a ``log`` case to the same reader ``nccldiag log`` uses, in this process (no subprocess per run), and
returns the fail/warn diagnoses; :func:`tests.realcases.score` scores them as it scores the case itself.

The invariants the tests hold: a failed run is never given no fail/warn diagnosis (``false all-clear``), a healthy
run never gets one (``false alarm``); and a failed run named right stays right where the evidence survives the
transformation (a tail that cut the failure off may honestly leave it unexplained).
"""
from __future__ import annotations

import html
import json
import re
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from tests import realcases

Transform = Callable[[str], str]


def _lines(text: str) -> List[str]:
    return text.splitlines()


def _join(lines: List[str]) -> str:
    return "\n".join(lines) + "\n"


def tail(n: int) -> Transform:
    """(a) the last ``n`` lines only: a user pastes the tail."""
    return lambda text: _join(_lines(text)[-n:])


_NCCL_INFO = re.compile(r"\bNCCL INFO\b")


def no_nccl_info(text: str) -> str:
    """(b) every NCCL INFO line dropped."""
    return _join([ln for ln in _lines(text) if not _NCCL_INFO.search(ln)])


def prefixed(prefix: str) -> Transform:
    """(c) a launcher's prefix on every line."""
    return lambda text: _join([prefix + ln for ln in _lines(text)])


_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_PCI = re.compile(r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
_HOME = re.compile(r"/home/[^/\s'\"]+")
_NCCL_HOST = re.compile(r"^(\s*)([A-Za-z][\w.-]*)(:\d+:\d+ \[)", re.M)  # host:pid:tid [dev] NCCL ...
_SYSLOG_HOST = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d )([^\s:]+)( [^\s:]+(?:\[\d+\])?:)", re.M)  # host, process


def anonymised(ip: str = "x.x.x.x", pci: str = "0000:xx:00.0", host: str = "node-xxx") -> Transform:
    """(d) host names, IPv4 addresses, PCI addresses and user paths redacted as users redact them."""
    def f(text: str) -> str:
        text = _NCCL_HOST.sub(lambda m: m.group(1) + host + m.group(3), text)
        text = _SYSLOG_HOST.sub(lambda m: m.group(1) + host + m.group(3), text)
        text = _PCI.sub(pci, text)
        text = _IPV4.sub(ip, text)
        return _HOME.sub("/home/<user>", text)
    return f


def wrapped(width: int = 80) -> Transform:
    """(e) lines wrapped at ``width`` columns as a terminal or a forum does (continuations without prefix)."""
    def f(text: str) -> str:
        out: List[str] = []
        for ln in _lines(text):
            out += [ln[i:i + width] for i in range(0, len(ln), width)] or [""]
        return _join(out)
    return f


def folded(width: int = 80) -> Transform:
    """(e2) lines broken at their blanks to fit ``width`` columns as GNU coreutils' ``fold -s -w WIDTH`` does
    (fold.c: with ``-s``, a line over the width is broken after the last blank within it, the blank left at the end
    of the piece; a piece with no blank is broken at the width), as a mail's ``format=flowed`` and an editor's hard
    wrap break a text."""
    def f(text: str) -> str:
        out: List[str] = []
        for ln in _lines(text):
            while len(ln) > width:
                cut = max(ln.rfind(" ", 0, width), ln.rfind("\t", 0, width))
                cut = cut + 1 if cut >= 0 else width
                out.append(ln[:cut])
                ln = ln[cut:]
            out.append(ln)
        return _join(out)
    return f


def crlf_bom(text: str) -> str:
    """(f) CRLF line ends and a UTF-8 byte order mark."""
    return "\ufeff" + "\r\n".join(_lines(text)) + "\r\n"


def quoted_html(text: str) -> str:
    """(g) a markdown quote on every line, and the text HTML-escaped with ``<br>`` line ends."""
    return _join(["> " + html.escape(ln, quote=True) + "<br>" for ln in _lines(text)])


def stamped(stamp: str) -> Transform:
    """(h) a timestamp before every line (ISO, syslog, ``dmesg -T``)."""
    return lambda text: _join([stamp + ln for ln in _lines(text)])


def numbered(form: str) -> Transform:
    """(j) a forum's or an editor's line number before every line, counted from 1 (``form`` a format of it:
    ``"{:>4}. "``, ``"{:>3} | "``, ``"{}: "``)."""
    return lambda text: _join([form.format(i) + ln for i, ln in enumerate(_lines(text), 1)])


def flush_left(text: str) -> str:
    """(k) every line's indentation taken off, as a chat or a form that trims lines pastes it."""
    return _join([ln.lstrip(" \t") for ln in _lines(text)])


def coloured(before: str, after: str = "\x1b[0m") -> Transform:
    """(l) every line in a tool's terminal colours: ``before`` (the codes and the prefix written with them) before
    it and a reset after it. The forms (each the tool's own output on a terminal):

    - Ray's worker prefix: ``print_worker_logs`` writes ``colorama.Style.DIM`` + ``Fore.CYAN`` +
      ``(ACTOR pid=PID, ip=IP)`` + ``Style.RESET_ALL`` + `` `` + the line (ray-project/ray,
      python/ray/_private/worker.py at daf610416eb7e506252a115f27edb64137a1415e);
    - loguru's default sink format ``<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> |
      <cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - <level>{message}</level>`` (Delgan/loguru,
      loguru/_defaults.py at 11e64fd1ff22645666f04a54264097e1325634d7, ``LOGURU_FORMAT``; INFO's colour is bold);
    - rich's ``RichHandler``: the time ``[%x %X]`` in ``log.time`` (dim cyan), then the level name padded to 8 in
      ``logging.level.<name>`` (INFO blue) (Textualize/rich, rich/logging.py, rich/_log_render.py and
      rich/default_styles.py)."""
    return lambda text: _join([before + ln + after for ln in _lines(text)])


_TQDM = "\r 20%|##        | 100/500 [00:02<00:08, 49.93it/s]"


def progress(every: int = 10) -> Transform:
    """(m) a tqdm progress bar sharing the stream with the log, as a captured file holds it: every ``every``-th line
    is written through ``tqdm.write``, which clears the bar (``\\r``, blanks as wide as the bar, ``\\r``), writes
    the line and draws the bar again (``\\r`` and the frame) at the start of the next, so that line starts with
    the frame, the clearing and then its text. The frame is tqdm's default ``{l_bar}{bar}{r_bar}`` with
    ``l_bar='{desc}: {percentage:3.0f}%|'`` and ``r_bar='| {n_fmt}/{total_fmt} [{elapsed}<{remaining},
    {rate_fmt}{postfix}]'``, its bar in ASCII (tqdm/tqdm, tqdm/std.py at 5dcab08071690868fd6289948d9e3451098478d3:
    ``tqdm.format_meter``, ``tqdm.write`` and ``tqdm.clear``)."""
    def f(text: str) -> str:
        clear = "\r" + " " * (len(_TQDM) - 1) + "\r"
        return _join([_TQDM + clear + ln if i % every == every - 1 else ln for i, ln in enumerate(_lines(text))])
    return f


def details(text: str) -> str:
    """(n) the text in a GitHub issue's collapsed section: ``<details>``, ``<summary>``, a blank line, the text in a
    fence, ``</details>`` (GitHub Docs, "Organizing information with collapsed sections", the markup a user writes)."""
    return "<details>\n<summary>Logs</summary>\n\n```\n" + _join(_lines(text)) + "```\n\n</details>\n"


def indented(indent: str) -> Transform:
    """(o) every line indented by ``indent`` (4 spaces or a tab): a markdown code block by indentation (CommonMark
    0.31.2, 4.4 "Indented code blocks": a chunk of lines each indented by 4 or more spaces, a tab counting as 4)."""
    return lambda text: _join([indent + ln if ln.strip() else ln for ln in _lines(text)])


def ray_pid(text: str) -> str:
    """(p) Ray's label of a worker with no actor's or task's name on the driver's node: ``(pid=PID) `` (``prefix_for``
    gives ``pid=``, no ``, ip=`` where the worker's address is the driver's; ray-project/ray,
    python/ray/_private/worker.py at daf610416eb7e506252a115f27edb64137a1415e, ``print_worker_logs``), colours off
    (as a captured file or ``RAY_COLOR_PREFIX=0`` has it)."""
    return prefixed("(pid=1234) ")(text)


def ray_actor(text: str) -> str:
    """(q) Ray's label of an actor's worker on another node: ``(ACTOR pid=PID, ip=IP) `` (``prefix_for`` puts the
    actor's name before ``pid=``; Ray Train's workers are ``RayTrainWorker`` actors; same source as :func:`ray_pid`)."""
    return prefixed("(RayTrainWorker pid=1234, ip=10.0.0.5) ")(text)


def kubectl_prefix(text: str) -> str:
    """(r) ``kubectl logs --prefix``: ``[pod/NAME/CONTAINER] `` before every line (``addPrefixIfNeeded``:
    ``fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName)``, kubernetes/kubectl pkg/cmd/logs/logs.go, as vendored
    in kubernetes/kubernetes staging/src/k8s.io/kubectl/pkg/cmd/logs/logs.go)."""
    return prefixed("[pod/trainer-worker-0/pytorch] ")(text)


def compose_prefix(text: str) -> str:
    """(s) ``docker compose logs``: the container's name padded to one more than the longest name, then `` | ``
    (``presenter.setPrefix``: ``fmt.Sprintf("%-"+strconv.Itoa(width)+"s | ", p.name)`` with ``width`` the longest
    name's length + 1; docker/compose, cmd/formatter/logs.go at 13d70b1c11342dafb534f3793078666437e6d00a), one
    container ``trainer-1``."""
    return prefixed("trainer-1  | ")(text)


def mpi_host(text: str) -> str:
    """(t) Open MPI's process label ``[HOST:PID] `` (``asprintf(&verbose.lds_prefix, "[%s:%05d] ", hostname,
    getpid())`` in opal/util/output.c, and ``HOSTFORMAT "[%s:%05d] "`` of opal/util/stacktrace.c: open-mpi/ompi)."""
    return prefixed("[node017:01234] ")(text)


def journal(text: str) -> str:
    """(u) ``journalctl -o short``'s prefix with a host and a unit's process: ``Mar 03 12:00:01 HOST IDENT[PID]: ``
    (journalctl(1), ``-o short``: "the default ... mostly identical to the formatting of classic syslog files,
    showing one line per journal entry"; systemd/systemd src/shared/logs-show.c, ``output_short``)."""
    return stamped("Mar 03 12:00:01 gpu-node-07 python3[12345]: ")(text)


def pylog_asctime(text: str) -> str:
    """(v) Python ``logging`` with the logging HOWTO's format ``'%(asctime)s - %(name)s - %(levelname)s -
    %(message)s'`` (asctime ``YYYY-MM-DD HH:MM:SS,mmm``: ``Formatter.default_time_format`` and
    ``default_msec_format``; python/cpython, Lib/logging/__init__.py at a49e078802348246d13585c64f8b0da2b445d249),
    a relay logging every line it carries at INFO, as Airflow's ``SubprocessHook`` logs each line of its child's
    output (``self.log.info("%s", line)``, airflow/hooks/subprocess.py)."""
    return stamped("2024-01-01 12:00:00,123 - trainer - INFO - ")(text)


def pylog_basic(text: str) -> str:
    """(w) Python ``logging.basicConfig()``'s ``BASIC_FORMAT = "%(levelname)s:%(name)s:%(message)s"`` (same source as
    :func:`pylog_asctime`), a relay logging every line at WARNING under its logger's name, as Celery redirects a
    worker's standard output and error (``redirect_stdouts(name='celery.redirected')``, ``redirect_level='WARNING'``:
    docs.celeryq.dev/en/4.0/reference/celery.app.log.html)."""
    return prefixed("WARNING:celery.redirected:")(text)


def stack_srun(text: str) -> str:
    """(x) stacked fronts: a forum's line number (``{:>3} | ``), ``srun --label``'s task label (``3: ``: srun(1),
    ``-l, --label``: "Prepend task number to lines of stdout/err") and an ISO time (``time-iso``'s)."""
    return numbered("{:>3} | 3: 2024-05-01T12:00:00.123Z ")(text)


def stack_lineno_rank(text: str) -> str:
    """(y) stacked fronts: a forum's line number, the same number as ``grep -n`` writes it (``N:``: grep(1),
    ``-n``: "Prefix each line of output with the 1-based line number"), and the ``[rankN]:`` label PyTorch's
    distributed processes put before their lines (as the real tests/cases/gpu-llamafactory7233-rank-prefixed-dev-
    shm-segment-barrier-4x3090 has it, and ``prefix-rank``)."""
    return numbered("{0:>3} | {0}: [rank3]: ")(text)


def chat_time(text: str) -> str:
    """(z) a chat client's time before every line of a copied message: ``[10:32 AM] ``, the 12-hour time Slack
    shows a message at (its ``{time}`` date token renders ``2:00 AM``: api.slack.com, "Formatting text in
    messages", date formatting), in the brackets a message copied from the client carries."""
    return stamped("[10:32 AM] ")(text)


def paragraphs(text: str) -> str:
    """(ah) the text pasted outside a code block and copied back from the rendered page: each paragraph (a run of
    lines that are not blank) one line, its lines' leading and trailing blanks taken off and the lines joined with
    a space (CommonMark 0.31.2, 4.8 "Paragraphs": "The paragraph's raw content is formed by concatenating the lines
    and removing initial and final spaces or tabs", and 6.13 "Soft line breaks": a line ending in a paragraph "is
    parsed as a softbreak", which "may be rendered in HTML either as a line ending or as a space. The result will be
    the same in browsers": a space in the text copied)."""
    out: List[str] = []
    para: List[str] = []
    for ln in _lines(text) + [""]:
        if ln.strip():
            para.append(ln.strip(" \t"))
        else:
            if para:
                out.append(" ".join(para))
                para = []
            out.append("")
    return _join(out[:-1])


def lexicon_only(text: str) -> str:
    """(i) every line but those the failure lexicon reads removed: only the failure lines."""
    from nccldiag.knowledge import lexicon

    return _join([ln for ln in _lines(text) if lexicon.shape_of(ln) is not None])


def no_break_spaces(text: str) -> str:
    """(aa) every space a no-break space (U+00A0), as a browser's copy of a page gives a text whose spaces were
    written ``&nbsp;`` (HTML's no-break space entity, HTML Living Standard, named character references): mail
    clients, wikis and chat clients write a pasted log's runs of spaces so."""
    return text.replace(" ", "\u00a0")


def smart_typography(text: str) -> str:
    """(ab) a blog's smart typography: straight quotes made curly, ``--`` an en dash and ``...`` an ellipsis, as
    WordPress's ``wptexturize()`` does to a post's text outside ``<code>`` and ``<pre>`` (wp-includes/formatting.php:
    ``'--'`` to ``&#8211;``, ``'...'`` to ``&#8230;``, quotes to ``&#8216;``/``&#8217;``/``&#8220;``/``&#8221;``),
    and as Obsidian's Smart Typography plugin does while one types."""
    text = re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", text)
    text = re.sub(r"'([^'\n]*)'", "\u2018\\1\u2019", text)
    return text.replace("...", "\u2026").replace("--", "\u2013")


def markdown_escaped(text: str) -> str:
    """(ac) a markdown editor's escapes: a backslash before each ``_``, ``*``, ``[``, ``]``, ``#``, ``<``, ``>``
    and ``~`` of the text, as a rich-text editor writes a pasted line into the markdown it stores (Reddit's editor
    stores ``NCCL_IB_HCA`` as ``NCCL\\_IB\\_HCA``; CommonMark 0.31, "Backslash escapes": "Any ASCII punctuation
    character may be backslash-escaped")."""
    return re.sub(r"([_*\[\]#<>~])", r"\\\1", text)


def zero_width(text: str) -> str:
    """(ad) zero-width spaces (U+200B) after each ``_``, ``.`` and ``/``: the break points a page puts in long
    identifiers and paths (HTML's ``<wbr>`` copied as U+200B), which the reader sees and a person does not."""
    return re.sub(r"([_./])", "\\1\u200b", text)


def full_width(text: str) -> str:
    """(ae) the full-width colons, commas and brackets of a Chinese or Japanese input method (U+FF1A, U+FF0C,
    U+FF08, U+FF09: Unicode's Halfwidth and Fullwidth Forms block), as a note written in one types them."""
    return text.translate({ord(":"): "\uff1a", ord(","): "\uff0c", ord("("): "\uff08", ord(")"): "\uff09"})


def docker_json(text: str) -> str:
    """(af) each line as Docker's ``json-file`` logging driver stores it: ``{"log":"LINE\\n","stream":"stderr",
    "time":"..."}`` (moby/moby daemon/logger/jsonfilelog, ``jsonlog.JSONLogs``: the line with its newline in
    ``log``), what an admin reads in /var/lib/docker/containers/ID/ID-json.log."""
    return "".join(json.dumps({"log": ln + "\n", "stream": "stderr", "time": "2024-05-01T12:00:00.123456789Z"},
                              separators=(",", ":")) + "\n" for ln in _lines(text))


def journal_json(text: str) -> str:
    """(ag) each line as ``journalctl -o json`` gives it: one JSON object an entry, the line in ``MESSAGE``
    (journalctl(1), ``-o json``: "formats entries as JSON objects, separated by newline characters";
    systemd.journal-fields(7), ``MESSAGE=``, ``_HOSTNAME=``, ``SYSLOG_IDENTIFIER=``, ``_PID=``)."""
    return "".join(json.dumps({"__REALTIME_TIMESTAMP": "1714564801123456", "_HOSTNAME": "gpu-node-07",
                               "SYSLOG_IDENTIFIER": "python3", "_PID": "12345", "MESSAGE": ln}) + "\n"
                   for ln in _lines(text))


TRANSFORMS: Dict[str, Transform] = {
    "tail-40": tail(40),
    "tail-15": tail(15),
    "no-nccl-info": no_nccl_info,
    "prefix-rank": prefixed("[rank3]: "),
    "prefix-torchrun": prefixed("[default0]:"),
    "prefix-srun": prefixed("3: "),
    "prefix-pdsh": prefixed("node017: "),
    "prefix-vllm": prefixed("(VllmWorkerProcess pid=1234) "),
    "prefix-mpirun": prefixed("[1,3]<stderr>:"),
    "anon-x": anonymised(),
    "anon-redacted": anonymised(ip="10.x.x.x", pci="...", host="<redacted>"),
    "anon-angle": anonymised(ip="<IP>", pci="<PCI>", host="<hostname>"),
    "wrap-80": wrapped(80),
    "fold-s-80": folded(80),
    "crlf-bom": crlf_bom,
    "quote-html": quoted_html,
    "time-iso": stamped("2024-05-01T12:00:00.123Z "),
    "time-syslog": stamped("May  1 12:00:00 host kernel: "),
    "time-dmesg-T": stamped("[Wed May  1 12:00:00 2024] "),
    "lineno-dot": numbered("{:>4}. "),
    "lineno-pipe": numbered("{:>3} | "),
    "lineno-colon": numbered("{}: "),
    "list-dash": prefixed("- "),
    "list-star": prefixed("* "),
    "flush-left": flush_left,
    "lexicon-only": lexicon_only,
    # colours and a progress bar
    "ansi-ray": coloured("\x1b[2m\x1b[36m(RayTrainWorker pid=1234, ip=10.0.0.5)\x1b[0m "),
    "ansi-loguru": coloured("\x1b[32m2024-01-01 12:00:00.123\x1b[0m | \x1b[1mINFO    \x1b[0m | "
                            "\x1b[36m__main__\x1b[0m:\x1b[36m<module>\x1b[0m:\x1b[36m12\x1b[0m - \x1b[1m"),
    "ansi-rich": coloured("\x1b[2;36m[01/01/24 12:00:00]\x1b[0m\x1b[2;36m \x1b[0m\x1b[34mINFO    \x1b[0m ", ""),
    "tqdm-cr": progress(10),
    # launchers and log collectors
    "prefix-ray-pid": ray_pid,
    "prefix-ray-actor": ray_actor,
    "prefix-kubectl": kubectl_prefix,
    "prefix-compose": compose_prefix,
    "prefix-mpi-host": mpi_host,
    "time-journal": journal,
    "pylog-asctime": pylog_asctime,
    "pylog-basic": pylog_basic,
    # stacked: a line number, a launcher's label, a time
    "stack-srun": stack_srun,
    "stack-lineno-rank": stack_lineno_rank,
    # chat and issue copy
    "chat-details": details,
    "chat-time": chat_time,
    "paragraphs": paragraphs,
    "indent-4": indented("    "),
    "indent-tab": indented("\t"),
    # typeset by a web page, a blog, a markdown editor, an input method
    "nbsp": no_break_spaces,
    "smart-quotes": smart_typography,
    "md-escape": markdown_escaped,
    "zero-width": zero_width,
    "full-width": full_width,
    # stored one JSON record a line by a container runtime, by the journal
    "docker-json": docker_json,
    "journal-json": journal_json,
}


def log_cases() -> List[realcases.Case]:
    """Every ``log`` case of both sets (bundles are node outputs collected by a tool, never pasted)."""
    out = list(realcases.cases(realcases.IN_REPO))
    if realcases.CASES.is_dir():
        out += realcases.cases(realcases.CASES)
    return [c for c in out if not c.bundle]


def texts(case: realcases.Case) -> List[Tuple[str, str]]:
    return [(name, (case.path / name).read_bytes().decode("utf-8", "replace")) for name in case.meta["files"]]


def alarms(files: List[Tuple[str, str]]) -> List[Dict]:
    """The fail/warn diagnoses ``nccldiag log`` gives the texts ``files`` (name, text), read in this process."""
    from nccldiag.report import log_report
    from nccldiag.report.jsonout import plain
    from nccldiag.sessions import log as session

    with tempfile.TemporaryDirectory(prefix="nccldiag-mut-") as tmp:
        paths = []
        for i, (name, text) in enumerate(files):
            p = Path(tmp) / f"{i}-{Path(name).name}"
            p.write_text(text, encoding="utf-8", newline="")
            paths.append(str(p))
        read = session.run(paths, workers=1)
        doc = plain(log_report.to_json(read.facts, read.findings, read.diagnoses, False, read.pastes))
    return [d for d in doc.get("diagnoses") or [] if d.get("severity") in ("fail", "warn")]


def outcome(case: realcases.Case, transform: Optional[str]) -> Tuple[str, List[Dict]]:
    """The case's outcome with its texts transformed by ``TRANSFORMS[transform]`` (``None``: as they are)."""
    f = TRANSFORMS[transform] if transform else (lambda t: t)
    got = alarms([(name, f(text)) for name, text in texts(case)])
    return realcases.score(case, got), got
