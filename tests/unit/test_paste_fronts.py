"""What the programs that carry a job's output write before each line (nccldiag/fronts.py), read through by the
paste reader, the NCCL log reader and the failure lexicon alike.

The texts are real (tests/cases, ../shared/fixtures); each decoration put around them is the one of
tests/mutations.py, written for the test from the tool's own output format (its docstring cites where).
"""
from pathlib import Path

import pytest

from nccldiag import fronts
from nccldiag.knowledge import lexicon
from nccldiag.nccl import grammar, parser, scan
from nccldiag.paste import lines as L
from tests import mutations

CASES = Path(__file__).resolve().parents[1] / "cases"
DESYNC = CASES / "net-fastllm-docs-desync-detected-barrier-train-begin-pythonhashseed" / "posted-error.txt"
RANKS = CASES / "gpu-llamafactory7233-rank-prefixed-dev-shm-segment-barrier-4x3090" / "posted-rank-traceback.txt"
PODS = CASES / "node-gpuoperator-docs-operand-pods-init-driver-daemonset-not-ready" / "posted-kubectl-get-pods.txt"
K8S = CASES / "gpu-tistory-blog-k8s-2x-rtxpro6000-ddp-allreduce-watchdog-p2p-disable-fixes" / "posted-log.txt"
HEALTHY = CASES / "gpu-xuesongtap-blog-8x-a100-nv12-topo-m-17-mlx5-nics-bond-healthy" / "posted-nvidia-smi-topo-m.txt"
LCP = (CASES / "node-lcp0578-notes-2x-rtx3090-nvidia-smi-cannot-communicate-utils-without-driver"
       / "posted-lspci-nvidia-smi-ubuntu-drivers.txt")

NEW = ("ansi-ray", "ansi-loguru", "ansi-rich", "tqdm-cr", "prefix-ray-pid", "prefix-ray-actor", "prefix-kubectl",
       "prefix-compose", "prefix-mpi-host", "time-journal", "pylog-asctime", "pylog-basic", "stack-srun",
       "stack-lineno-rank", "chat-time", "indent-4", "indent-tab")


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("transform", NEW)
@pytest.mark.parametrize("path", [K8S, RANKS, PODS], ids=lambda p: p.parent.name[:40])
def test_the_paste_reader_reads_each_line_as_it_was_written(transform, path):
    """Every line of a real text, decorated, reads as the same line undecorated: each decoration is taken off."""
    plain = text(path).rstrip("\n").split("\n")  # lines as the readers cut them: at a newline, never a lone CR
    decorated = mutations.TRANSFORMS[transform](text(path)).rstrip("\n").split("\n")
    assert len(plain) == len(decorated)
    for before, after in zip(plain, decorated):
        if not before.strip():
            continue
        want = L.peel(before).text.strip()
        got = L.peel(after).text.strip()
        # an indented code block's indentation is the text's own where the text was indented
        assert got == want or transform.startswith("indent") and got == want.lstrip(), (transform, after)


@pytest.mark.parametrize("transform", ["prefix-kubectl", "prefix-mpi-host", "time-journal"])
def test_a_collectors_label_names_the_pod_or_the_host(transform):
    line = mutations.TRANSFORMS[transform](text(K8S)).splitlines()[3]
    want = {"prefix-kubectl": "trainer-worker-0", "prefix-mpi-host": "node017", "time-journal": "gpu-node-07"}
    assert L.peel(line).host() == want[transform]


def test_a_relay_s_level_on_every_line_is_no_failure_but_the_message_still_is():
    # healthy: the INFO or WARNING a relay gives every line says nothing; failed: the message after it still does
    for ln in text(HEALTHY).splitlines():
        for front in ("WARNING:celery.redirected:", "2024-01-01 12:00:00,123 - trainer - INFO - "):
            assert lexicon.shape_of(front + ln) == lexicon.shape_of(ln), front + ln
    line = next(ln for ln in text(DESYNC).splitlines() if ln.startswith("RuntimeError"))
    assert lexicon.shape_of(line).id == "python-exception"
    assert lexicon.shape_of("ERROR:root:" + line).id == "python-exception"


@pytest.mark.parametrize("front", ["ERROR:root:", "CRITICAL:trainer:", "2024-01-01 12:00:00,123 - trainer - ERROR - ",
                                   "2024-01-01 12:00:00.123 | ERROR    | train:main:12 - ", "[01/01/24 12:00:00] ERROR    "])
def test_a_program_s_own_error_level_is_a_failure_whatever_its_message_says(front):
    # the real line of tests/cases/node-lcp0578-...: Python logging's BASIC_FORMAT at ERROR, a message with no
    # error word; the program logged it as an error, so it is never read as nothing
    line = "ERROR:root:aplay command not found"
    assert line in text(LCP)
    assert lexicon.shape_of(line).id == "error-word"
    assert lexicon.shape_of(front + "rank 3 stopped answering").id == "error-word"
    assert lexicon.shape_of("rank 3 stopped answering") is None


def test_a_carriage_return_keeps_what_a_terminal_shows():
    line = next(ln for ln in text(DESYNC).splitlines() if ln.startswith("RuntimeError"))
    drawn = mutations.TRANSFORMS["tqdm-cr"]("x\n" * 9 + line).rstrip("\n").split("\n")[-1]
    assert "\r" in drawn and "%|" in drawn
    assert fronts.plain(drawn) == line
    assert L.peel(drawn).text == line
    assert grammar.clean(drawn) == line
    assert fronts.plain("\x1b[2m\x1b[36m(pid=1234)\x1b[0m x\r") == "(pid=1234) x"


def test_a_traceback_s_exception_line_is_an_error_line_in_every_path():
    # the real last line 'RuntimeError: Desync detected for barrier train begin (...)' holds no error word
    line = next(ln for ln in text(DESYNC).splitlines() if ln.startswith("RuntimeError"))
    assert grammar.error_kind(line) == "error"
    assert line in [e.text for e in parser.parse(text(DESYNC)).errors]  # line by line
    assert line in [e.text for e in scan.parse_paths([str(DESYNC)]).errors]  # the prefilter, in bulk
    for name in ("prefix-rank", "pylog-basic", "ansi-ray", "stack-lineno-rank"):
        pasted = mutations.TRANSFORMS[name](text(DESYNC))
        assert line in [e.text for e in parser.parse(pasted).errors], name
    assert grammar.error_kind("    except ValueError:") is None  # a traceback's source line raises nothing


def test_stacked_line_numbers_leave_the_ranks_as_the_launcher_wrote_them():
    # the real '[rankN]:' lines numbered by a forum after 'grep -n' numbered them ('12 | 12: [rank1]: ...'):
    # the line numbers are no srun labels, the rank is torchrun's
    want = [(e.text, e.launcher_rank) for e in parser.parse(text(RANKS)).errors]
    assert want and {r for _, r in want} >= {1, 3}
    twice = mutations.numbered("{0:>3} | {0}: ")
    for name, f in (("twice", twice), ("stack-srun", mutations.TRANSFORMS["stack-srun"]),
                    ("lineno-pipe", mutations.TRANSFORMS["lineno-pipe"])):
        pasted = f(text(RANKS))
        got = [(e.text, e.launcher_rank) for e in parser.parse(pasted).errors]
        if name == "stack-srun":  # srun's label 3 before the rank: the outer label names the task
            assert [t for t, _ in got] == [t for t, _ in want] and {r for _, r in got} == {3}
        else:
            assert got == want, name


def test_the_expressions_stay_linear_on_long_lines():
    # the shapes each expression repeats, far past its bounds: a match or a miss, never a long search
    for line in ("(" + "a" * 5000 + " pid=1)", "[pod/" + "a" * 5000, "a-1" + " " * 5000 + "|",
                 "ERROR:" + "a" * 5000, "- " + "a" * 5000 + " - ERROR - ", "[" + "1" * 5000 + ":00 AM]",
                 "\r" * 5000 + "x", "\x1b[" + "1;" * 5000 + "m"):
        L.peel(line)
        grammar.read_line(line)
        lexicon.shape_of(line)
        fronts.plain(line)
