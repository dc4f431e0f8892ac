"""The prefilter (nccldiag.nccl.scan) gives the facts of reading every line, on every real log and case.

Each comparison runs the whole ``nccldiag log`` pipeline on both paths: facts, findings, diagnoses, as JSON.
"""
import io
import json
from typing import List, Tuple

import pytest

from nccldiag import diagnosis
from nccldiag.knowledge import lexicon
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import facts, grammar, parser as nccllog, replay
from nccldiag.nccl import scan
from nccldiag.report import log_report
from tests import real, realcases


def _sets():
    if not real.AVAILABLE:
        return [pytest.param([], marks=pytest.mark.skip(reason=real.REASON))]
    out = [pytest.param([p], id=p.name) for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            out.append(pytest.param([c.path / f for f in c.meta["files"]], id=c.id))
    return out


def report(facts) -> str:
    findings = nccl_checks.judge(facts)
    d = log_report.to_json(facts, findings, diagnosis.conclude(logs=facts, log_findings=list(findings)), True)
    d.pop("generated_at", None)
    return json.dumps(d, sort_keys=True, default=str)


def plain(named) -> str:
    return report(nccllog.parse_streams([(n, io.BytesIO(b)) for n, b in named]))


def fast(named, **kw) -> str:
    return report(scan.parse_streams([(n, io.BytesIO(b)) for n, b in named], **kw))


@pytest.mark.parametrize("files", _sets())
@pytest.mark.parametrize("block", [64, 4096, scan.BLOCK])
def test_every_real_log_and_case_gives_the_same_report(files, block):
    named = [(str(p), p.read_bytes()) for p in files]
    assert fast(named, block=block) == plain(named)


def _all_real() -> bytes:
    real.require()
    parts = [p.read_bytes() for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            parts += [(c.path / f).read_bytes() for f in c.meta["files"]]
    return b"\n".join(parts)



@pytest.mark.parametrize("block", [4096, scan.BLOCK])
@pytest.mark.parametrize("max_line", [80, scan.MAX_LINE])
def test_a_line_handed_over_as_holding_no_word_is_of_no_lexicon_shape(block, max_line):
    # Every line of every real log and case, each followed by two progress lines (written for this test), handed
    # over (the parser waiting for every line), with lines cut at 80 bytes too: a whole line the prefilter found no word in is of no shape of the failure lexicon, so that
    # its reader is not handed it; and the lexicon's reader finds the same lines as reading every line.
    text = b"".join(line + b"\nstep %d loss 2.0\nstep %d loss 2.1\n" % (i, i)
                    for i, line in enumerate(_all_real().split(b"\n")))
    s = scan.Scan(io.BytesIO(text), lambda: True, block=block, max_line=max_line, bulk=True)
    shapes = lexicon.Reader("t.log")
    wordless = 0
    for _, item in s:
        if s.first_wordless:
            wordless += 1
            first = item if type(item) is bytes else item[0]
            assert shapes.shape(first) is None, first
    assert wordless > 1000
    tapped = lexicon.Reader("t.log")
    scan.feed(nccllog.Parser(), "t.log", io.BytesIO(text), block, max_line, lines=tapped)
    every = lexicon.Reader("t.log")
    for n, line in enumerate(text.split(b"\n")[:-1] if text.endswith(b"\n") else text.split(b"\n"), 1):
        every.take(n, line[:max_line])
    found = tapped.finish()
    assert len(found) > 10 and found == every.finish()

# Written for this test: a training loop's progress lines, which hold no word the parser reads.
FILLER = b"".join(b"epoch 3 step %d/500 loss 2.%04d lr 0.0003 grad_norm 1.%03d\n" % (i, i * 7, i % 997)
                  for i in range(300))


def test_real_lines_among_lines_it_skips():
    # The real logs and cases, each line separated by lines the prefilter skips, then as CRLF, then without a
    # last newline, then whole between skipped lines in small blocks.
    data = _all_real()
    gaps = FILLER.split(b"\n")
    # three skipped lines or more after each real line: past its context, and too few NCCL lines for a block to be
    # handed over whole; without the lines that start a benchmark output or RAS report (after those, every line is
    # read up to their bound: test_a_benchmark_table_is_read_whole_between_skipped_lines)
    kept = [line for line in data.split(b"\n") if not grammar._BENCH_START.search(line.decode("utf-8", "replace"))
            and not grammar._RAS_START.search(grammar.clean(line.decode("utf-8", "replace")))]
    spread = b"".join(line + b"\n" + b"\n".join(gaps[:3 + i % 3]) + b"\n" for i, line in enumerate(kept))
    for variant, kw in ((spread, {}), (spread.replace(b"\n", b"\r\n"), {}), (spread.rstrip(b"\n"), {}),
                        (FILLER + data + FILLER, {"block": 1000})):
        assert fast([("job.log", variant)], **kw) == plain([("job.log", variant)])
    s = scan.Scan(io.BytesIO(spread), lambda: False)
    read = sum(1 for _ in s)
    lines = len(spread.split(b"\n")) - spread.endswith(b"\n")
    assert s.skipped > 0 and read + s.skipped == s.total == lines == nccllog.parse_streams([("j", io.BytesIO(spread))]).lines


def test_the_line_after_a_candidate_is_handed_over_only_where_the_parser_may_need_it(monkeypatch):
    # Written for this test: an NCCL line, then lines holding no word. In bulk, a candidate goes over with the
    # candidates right after it, and the line after them only where the parser then needs it: the reader holds a
    # record the line may continue (an NCCL line that leaves a parenthesis open, and the line that continued it),
    # or the parser waits for every line.
    nccl = b"node-a:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    plain_after = nccl + b"step 1 loss 2.0\n" + b"step 2 loss 2.1\n" + b"step 3 loss 2.2\n"
    closing = nccl + b"step 1 loss 2.0)\n" + b"step 2 loss 2.1\n" + b"step 3 loss 2.2\n"
    wrapped = (b"node-a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB (port\n" + b"1 of 2)\n" +
               b"step 2 loss 2.1\n" + b"step 3 loss 2.2\n")
    two = nccl + nccl.replace(b"Channel 00", b"Channel 01") + b"step 2 loss 2.1\n" + b"step 3 loss 2.2\n" + \
        b"step 4 loss 2.3\n"

    def handed(text: bytes, needs_all: bool = False) -> List[int]:
        s = scan.Scan(io.BytesIO(text), lambda: needs_all, bulk=True)
        out: List[int] = []
        for n, item in s:
            out += [n] if type(item) is bytes else list(range(n + 1, n + 1 + len(item)))
        assert s.total == text.count(b"\n")
        return out

    class Taken:  # the lexicon's reader, as the prefilter hands it lines
        def __init__(self) -> None:
            self.lines: List[int] = []
            self.memo: dict = {}

        def take(self, n: int, item) -> None:
            self.lines += [n] if type(item) is bytes else list(range(n + 1, n + 1 + len(item)))

    def fed(text: bytes) -> Tuple[List[int], List[int]]:
        """The lines the parser is handed, and those the lexicon's reader is."""
        taken, got = Taken(), []
        block = replay.Replay._block

        def spied(self, n: int, lines) -> None:
            got.extend(range(n + 1, n + 1 + len(lines)))
            block(self, n, lines)

        monkeypatch.setattr(replay.Replay, "_block", spied)
        scan.feed(nccllog.Parser(), "t.log", io.BytesIO(text), lines=taken)
        monkeypatch.undo()
        return got, taken.lines

    assert handed(plain_after) == handed(closing) == handed(wrapped) == [1]
    assert handed(two) == [1, 2]
    assert handed(plain_after, needs_all=True) == [1, 2, 3, 4]
    # the first time a line is read, its record waits for the next line, which goes over; the second time, what
    # it does is known: a record no line can continue is read at once. The lexicon's reader is handed only the
    # lines holding a word: a line handed over for what the line before asks holds none of its words.
    before = nccl + b"step 0 loss 1.9\n" * 3
    assert fed(before + plain_after) == fed(before + closing) == ([1, 2, 5], [1, 5])
    assert fed(before + wrapped) == ([1, 2, 5, 6, 7], [1, 5])
    for text in (plain_after, closing, wrapped, two):
        assert fast([("t.log", FILLER + text + FILLER)]) == plain([("t.log", FILLER + text + FILLER)])


def test_overlong_lines_are_cut_as_when_read_line_by_line():
    data = _all_real()
    long = data.replace(b"\n", b" " * 300 + b"\n", 50)  # written for this test: lines past the cut
    named = [("long.log", FILLER + long + b"x" * 5000)]
    p = nccllog.Parser()
    p.feed_lines(nccllog.read_lines(io.BytesIO(named[0][1]), max_line=200), "long.log")
    f = scan.parse_streams([("long.log", io.BytesIO(named[0][1]))], block=256, max_line=200)
    assert report(f) == report(p.finish())


def test_a_line_waiting_for_the_next_one_gets_it_across_blank_and_skipped_lines():
    # Written for this test, in the words of PyTorch's 'Last error:' block and nccl-tests' CUDA failure: the
    # message is on a later line that holds no word of its own the prefilter looks for.
    text = (FILLER + b"Last error:\n\n\n" + b"peer 3 went away during setup\n" + FILLER +
            b"node-a: Test CUDA failure common.cu:891\n" + b"the device went away\n" + FILLER)
    assert fast([("t.log", text)]) == plain([("t.log", text)])
    f = scan.parse_streams([("t.log", io.BytesIO(text))])
    assert any("peer 3 went away" in w.message for w in f.warns)
    assert any("device went away" in a.message for a in f.app_errors)


def test_a_benchmark_table_is_read_whole_between_skipped_lines():
    real.require()
    tests_log = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_bytes()
    text = FILLER + tests_log + FILLER + tests_log
    assert fast([("t.log", text)], block=512) == plain([("t.log", text)])


def test_every_real_line_that_says_something_on_its_own_is_a_candidate():
    # The prefilter's words are the parser's: a line the parser takes a fact or an error from is never skipped.
    for line in _all_real().split(b"\n"):
        f = nccllog.parse(line.decode("utf-8", "replace"))
        said = f.nccl_lines or f.errors or f.kernel or f.nccl_tests or f.nccl_tests_no_result or f.perftests or f.ras
        if said:
            assert scan.candidate(line), line


# --------------------------------------------------------------------------- files read in parallel


def _all_real_paths():
    real.require()
    paths = [str(p) for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            paths += [str(c.path / f) for f in c.meta["files"]]
    return paths


@pytest.mark.parametrize("keep", [1, 5, facts.KEEP])
def test_files_read_in_parallel_merge_into_the_facts_of_reading_them_in_turn(keep):
    # Every real log and case as the files of one job; a small bound makes each list overflow across files.
    paths = _all_real_paths()
    merged = scan.parse_paths(paths, keep=keep, workers=2)
    in_turn = nccllog.parse_streams([(p, open(p, "rb")) for p in paths], keep=keep)
    assert report(merged) == report(in_turn)
    assert merged.sources == paths


def test_a_path_given_twice_is_read_in_turn():
    paths = _all_real_paths()[:3]
    twice = paths + paths[:1]
    assert report(scan.parse_paths(twice, workers=2)) == \
        report(nccllog.parse_streams([(p, open(p, "rb")) for p in twice]))


def test_a_file_that_cannot_be_read_is_named(tmp_path):
    paths = _all_real_paths()[:2] + [str(tmp_path / "gone.log")]
    with pytest.raises(scan.ReadError) as e:
        scan.parse_paths(paths, workers=2)
    assert "gone.log" in str(e.value)


# --------------------------------------------------------------------------- lines read before, only counted


def _repeated_sets():
    if not real.AVAILABLE:
        return [pytest.param([], marks=pytest.mark.skip(reason=real.REASON))]
    out = [pytest.param([p], id=p.name) for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            out.append(pytest.param([c.path / f for f in c.meta["files"]], id=c.id))
    return out


@pytest.mark.parametrize("files", _repeated_sets())
@pytest.mark.parametrize("keep", [1, 3, 40])
def test_lines_read_again_past_the_bounds_give_the_same_report(files, keep):
    # Each real log and case repeated in its files (as a job that initialises many communicators logs the same
    # lines again), with bounds small enough that its lists fill up: the lines read before are then counted, not
    # read again, and the report is that of reading every line.
    named = [(str(p), p.read_bytes().rstrip(b"\n") + b"\n") for p in files]
    for times, block in ((4, 4096), (3, 64), (5, scan.BLOCK)):
        rep = [(n, b * times) for n, b in named]
        assert fast(rep, keep=keep, block=block) == report(
            nccllog.parse_streams([(n, io.BytesIO(b)) for n, b in rep], keep=keep)), (times, block)


@pytest.mark.parametrize("keep", [1, 7, facts.KEEP])
def test_all_real_lines_repeated_as_lf_crlf_and_among_skipped_lines(keep):
    # Every real log and case, one after the other, repeated: as written (block after block handed over whole),
    # with CRLF ends, cut into blocks that split lines, without its last newline, and with skipped lines between
    # (handed over one by one).
    data = _all_real()
    gaps = FILLER.split(b"\n")
    spread = b"".join(line + b"\n" + b"\n".join(gaps[:3 + i % 3]) + b"\n" for i, line in enumerate(data.split(b"\n")))
    for variant, block in ((data * 6, scan.BLOCK), (data.replace(b"\n", b"\r\n") * 4, 1000),
                           ((data * 3).rstrip(b"\n"), 777), (spread * 3, 4096)):
        named = [("job.log", variant)]
        assert fast(named, keep=keep, block=block) == report(
            nccllog.parse_streams([("job.log", io.BytesIO(variant))], keep=keep))


def test_lines_read_again_are_counted_in_every_tally():
    # The counts of a log repeated are those of reading it every time (not those of its first reading).
    real.require()
    one = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_bytes()
    f1 = scan.parse_streams([("a.log", io.BytesIO(one))], keep=1)
    f9 = scan.parse_streams([("a.log", io.BytesIO(one * 9))], keep=1)
    assert f1.channel_stats and f9.lines == 9 * f1.lines and f9.nccl_lines == 9 * f1.nccl_lines
    for cat, st in f1.channel_stats.items():
        assert f9.channel_stats[cat].lines == 9 * st.lines
    assert sum(p.lines for p in f9.pair_list) == 9 * sum(p.lines for p in f1.pair_list)
    assert f9.counts["channels"] == 9 * f1.counts["channels"] and f9.warns == f1.warns[:1]


def _both(text: bytes, keep: int):
    fast_f = scan.parse_streams([("t.log", io.BytesIO(text))], keep=keep)
    plain_f = nccllog.parse_streams([("t.log", io.BytesIO(text))], keep=keep)
    assert report(fast_f) == report(plain_f)
    return fast_f


# Written for these tests, in NCCL's words: one thread's channel, call-chain, communicator and version lines.
_CH = b"node-a:100:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
_CHAIN_STEP = b"node-a:100:101 [0] NCCL INFO transport/net.cc:592 -> 2\n"
_COMM0 = b"node-a:100:101 [0] NCCL INFO comm 0x5555 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
_VERSION = b"node-a:100:101 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
_WARN = b"node-a:100:101 [0] NCCL WARN Connect to 10.0.0.2<43000> failed : Connection refused\n"


def test_a_line_read_again_still_resumes_a_failed_call_chain_of_its_thread():
    # The channel line is only counted once its lists are full, but after an error chain of its thread it shows
    # that the thread went on: the chain kept is benign.
    f = _both(_CH * 6 + _CHAIN_STEP + _CH + _CH, keep=1)
    assert f.orphan_chains[0].benign and f.orphan_chains[0].resumed
    assert f.channel_stats["P2P"].lines == 8


def test_a_line_read_again_still_marks_a_version_line_kept_after_it_as_rank_0s():
    f = _both(_COMM0 * 3 + _VERSION + _COMM0, keep=1)
    assert f.versions[0].rank0 and f.versions[0].world == 2 and f.counts["comms"] == 4
    bare = _VERSION.split(b"INFO ")[1]  # the version line without its prefix (pasted)
    f = _both(_COMM0 * 3 + bare + _COMM0, keep=1)
    assert f.versions[0].rank0 and f.versions[0].world == 2


def test_a_line_read_again_closes_the_warn_its_thread_left_open():
    # WARN, its chain, then the thread moves on (a channel line): each WARN past the bound is classified and
    # counted as a failure when it is closed; a chain step after the channel line starts a chain of its own.
    f = _both(_CH * 6 + (_WARN + _CHAIN_STEP + _CH) * 5 + (_WARN + _CH + _CHAIN_STEP) * 3, keep=1)
    assert f.dropped_failures == 7 and f.counts["warns"] == 8 and f.counts["orphan_chains"] == 3


def test_a_call_chain_kept_takes_its_first_steps_and_counts_the_rest():
    # A thread that logs the same step again and again, with and without its WARN: the chain kept holds the first
    # MAX_STEPS steps, with their own line numbers, and every line is counted.
    f = _both(_CHAIN_STEP * (facts.MAX_STEPS + 30), keep=1)
    steps = f.orphan_chains[0].steps
    assert len(steps) == facts.MAX_STEPS and [s.at.lineno for s in steps] == list(range(1, facts.MAX_STEPS + 1))
    f = _both(_WARN + _CHAIN_STEP * (facts.MAX_STEPS + 30) + _CH * 6, keep=1)
    assert len(f.warns[0].chain) == facts.MAX_STEPS and f.nccl_lines == facts.MAX_STEPS + 37


def test_a_fact_row_that_is_not_only_counted_again_is_read_every_time(monkeypatch):
    import dataclasses

    reads = []
    monkeypatch.setattr(grammar, "FACTS", tuple(dataclasses.replace(r, again=False) if r.name == "channel" else r
                                                for r in grammar.FACTS))
    real_handler = nccllog.Parser.fact_channel
    monkeypatch.setattr(nccllog.Parser, "fact_channel", lambda self, *a: (reads.append(1), real_handler(self, *a)))
    f = _both(_CH * 20, keep=1)
    assert len(reads) == 40 and f.channel_stats["P2P"].lines == 20  # both paths read all 20 lines
    reads.clear()
    monkeypatch.undo()
    monkeypatch.setattr(nccllog.Parser, "fact_channel", lambda self, *a: (reads.append(1), real_handler(self, *a)))
    f = _both(_CH * 20, keep=1)
    assert len(reads) < 40 and f.channel_stats["P2P"].lines == 20  # the bulk path counted lines read before


def test_a_version_line_read_again_past_the_bound_still_ends_the_one_before():
    # A bare version line past the bound on those kept is the file's last version line all the same: the rank-0
    # line after it does not make the kept version line before it rank 0's world.
    bare = _VERSION.split(b"INFO ")[1]
    f = _both(bare * 3 + _VERSION + bare + _COMM0, keep=1)
    kept = [v for v in f.versions if v.at.host == "node-a"]
    assert kept and kept[0].world is None


# Written for these tests: a GPU Direct RDMA line wrapped over two lines by whoever copied the log (as in the real
# excerpts), its continuation, and a line that does not continue it.
_WRAP_1 = b"node-a:100:101 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 0 / HCA mlx4_0 (not supported b\n"
_WRAP_2 = b"y GPU)\n"
_WRAP_OTHER = b"y the driver)\n"


def test_a_wrapped_line_read_again_is_counted_with_its_continuation_and_read_where_they_differ():
    # The pair read before (the line and the rest of it) is counted as the one record it makes; the same first
    # line with another rest, with a line that does not continue it, or last in a block, is read in full.
    pair = _WRAP_1 + _WRAP_2
    for text in (pair * 9 + _CH, (pair + _CH) * 9, pair * 4 + _WRAP_1 + _WRAP_OTHER + pair * 4,
                 pair * 4 + _WRAP_1 + _CH + pair * 3 + _WRAP_1, _WARN + pair * 5 + _CHAIN_STEP + pair * 3):
        for block in (len(pair) * 3 - 5, 4096):
            fast_f = scan.parse_streams([("t.log", io.BytesIO(text))], keep=1, block=block)
            plain_f = nccllog.parse_streams([("t.log", io.BytesIO(text))], keep=1)
            assert report(fast_f) == report(plain_f), (text, block)
    f = _both(pair * 9 + _CH, keep=1)
    assert f.nccl_lines == 10 and f.lines == 19 and f.counts["gdr"] == 9
    assert f.gdr[0].text.endswith("(not supported by GPU)")
    reads = []
    line = grammar.Reader.line
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(grammar.Reader, "line", lambda self, n, raw, *a: (reads.append(raw), line(self, n, raw, *a))[1])
        scan.parse_streams([("t.log", io.BytesIO(pair * 50))], keep=1)
    assert len(reads) < 20  # the pairs after the first few are counted, not read


def _counting_replays(monkeypatch) -> List[bool]:
    done: List[bool] = []
    real_replay = replay.Replay._replay
    monkeypatch.setattr(replay.Replay, "_replay", lambda self, *a: done.append(real_replay(self, *a)) or done[-1])
    return done


@pytest.mark.parametrize("run_min", [1, 4, 9, replay.RUN_MIN])
@pytest.mark.parametrize("keep", [1, 3, 40])
def test_runs_of_lines_counted_again_as_a_whole_give_the_same_report(monkeypatch, run_min, keep):
    # Every real log and case, one after the other, repeated: runs of lines only counted (from a point where
    # their threads have nothing open) are recorded and counted again as a whole where they come again. Short
    # runs and no limit on the lines recorded make runs start and end at every kind of line: WARNs left open,
    # call chains, wrapped lines, benchmark output being kept, version and rank-0 lines.
    monkeypatch.setattr(replay, "RUN_MIN", run_min)
    monkeypatch.setattr(replay, "RUN_SHARE", 1)
    done = _counting_replays(monkeypatch)
    data = _all_real()
    for variant, block in ((data * 5, scan.BLOCK), (data * 4, 4096), (data.replace(b"\n", b"\r\n") * 3, 1000)):
        named = [("job.log", variant)]
        assert fast(named, keep=keep, block=block) == report(
            nccllog.parse_streams([("job.log", io.BytesIO(variant))], keep=keep))
    assert any(done)  # runs were counted again


@pytest.mark.parametrize("files", _repeated_sets())
def test_runs_counted_again_in_each_real_log_give_the_same_report(monkeypatch, files):
    monkeypatch.setattr(replay, "RUN_MIN", 2)
    monkeypatch.setattr(replay, "RUN_SHARE", 1)
    named = [(str(p), p.read_bytes().rstrip(b"\n") + b"\n") for p in files]
    for times, block in ((6, 4096), (4, scan.BLOCK)):
        rep = [(n, b * times) for n, b in named]
        assert fast(rep, keep=2, block=block) == report(
            nccllog.parse_streams([(n, io.BytesIO(b)) for n, b in rep], keep=2)), (times, block)


# Written for these tests, in the words of NCCL, nccl-tests, NCCL's RAS and a training script: lines of two
# processes (node-a, node-b) and lines without a prefix, from which random logs that repeat themselves are made.
_ALPHABET = [
    _CH, _CHAIN_STEP, _COMM0, _VERSION, _WARN,
    b"node-b:200:201 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/IPC/read\n",
    b"node-b:200:201 [1] NCCL INFO transport/p2p.cc:275 -> 3\n",
    b"node-b:200:202 [1] NCCL WARN Cuda failure 'out of memory'\n",
    b"node-b:200:201 [1] NCCL INFO comm 0x6666 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n",
    b"node-b:200:201 [1] NCCL INFO Init COMPLETE\n",
    b"NCCL version 2.18.3+cuda12.2\n",
    b"NCCL version 2.19.3+cuda12.3 compiled with CUDA 12.3\n",
    b"Job summary\n", b"===========\n", b"  Nodes  Processes  GPUs  Processes\n",
    b"#  nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n",
    b"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n",
    b"           8             2     float     sum      -1    10.11    0.00    0.00      0    10.02    0.00    0.00      0\n",
    b"epoch 1 step 17 loss 2.31\n", b"\n",
    _WRAP_1 + _WRAP_2,
]


def test_random_logs_that_repeat_themselves_give_the_same_report(monkeypatch):
    import random

    rnd = random.Random(20261126)
    monkeypatch.setattr(replay, "RUN_SHARE", 1)
    done = _counting_replays(monkeypatch)
    for case in range(60):
        monkeypatch.setattr(replay, "RUN_MIN", rnd.choice([1, 2, 5, 12]))
        monkeypatch.setattr(replay, "RUN_SHORT", rnd.choice([1, 3, 8]))
        pattern = [rnd.choice(_ALPHABET) for _ in range(rnd.randint(8, 40))]
        parts = []
        for _ in range(rnd.randint(3, 9)):
            parts += [rnd.choice(_ALPHABET) if rnd.random() < 0.05 else p for p in pattern]
        text = b"".join(parts)
        keep = rnd.choice([1, 2])
        for block in (rnd.choice([64, 300, 4096]), scan.BLOCK):
            assert fast([("r.log", text)], keep=keep, block=block) == report(
                nccllog.parse_streams([("r.log", io.BytesIO(text))], keep=keep)), (case, block)
    assert sum(done) > 100


def test_old_nccl_tests_failure_lines_read_again_are_read_as_their_first_reading():
    # Written for this test, in the words of nccl-tests' first releases (no 'Test ' before the failure), with and
    # without a host, among NCCL lines, repeated past the bounds.
    old = (b"node-a: NCCL failure all_reduce.cu:95 'unhandled system error'\n"
           b"Cuda failure common.cu:891 'out of memory'\n"
           b"node-a:100:101 [0] NCCL WARN Cuda failure 'out of memory'\n")
    for keep in (1, 2, 40):
        f = _both((_CH + old) * 12, keep=keep)
        assert f.app_errors and f.app_errors[0].where == "all_reduce.cu:95"
    # a WARN quoted without its prefix, whose words are those of a failure line, is still read as the WARN
    quoted = b"NCCL WARN Cuda failure 'out of memory'\n"
    for keep in (1, 3):
        _both((_CH + quoted + old) * 9, keep=keep)


@pytest.mark.parametrize("bounds", [None, (3000, 2000)])
def test_lines_wanted_only_to_be_kept_go_over_as_one_item_and_give_the_same_report(monkeypatch, bounds):
    # After every line of every real log and case (their benchmark outputs and RAS reports among them), lines
    # the prefilter skips, plain, behind a launcher's tag, blank, and one past the line bound: while a benchmark
    # output or RAS report is kept, those up to the next candidate go over as one replay.Plain item.
    if bounds is not None:  # bounds small enough that each is reached inside a run of such lines
        monkeypatch.setattr(nccllog, "MAX_BENCH_BYTES", bounds[0])
        monkeypatch.setattr(nccllog, "MAX_RAS_BYTES", bounds[1])
    data = _all_real()
    gaps = FILLER.split(b"\n")
    extra = [b"", b"3: " + gaps[5], b"[1,0]<stdout>: " + gaps[6], b"x" * (facts.MAX_LINE + 10), b"  \t "]
    spread = b"".join(line + b"\n" + b"\n".join(gaps[i % 7:i % 7 + 2 + i % 5] + [extra[i % len(extra)]]) + b"\n"
                      for i, line in enumerate(data.split(b"\n")))
    plain_items: List[int] = []
    real_plain = replay.Replay._plain

    def counted(self, n, lines):
        plain_items.append(len(lines))
        return real_plain(self, n, lines)

    monkeypatch.setattr(replay.Replay, "_plain", counted)
    for variant, block in ((spread, 4096), (spread.replace(b"\n", b"\r\n"), scan.BLOCK), (spread * 2, 1 << 16)):
        plain_items.clear()
        named = [("job.log", variant)]
        assert fast(named, block=block) == plain(named)
        if bounds is None:  # one benchmark output and one RAS report kept per file: with small bounds, few lines
            assert len(plain_items) > 100 and sum(plain_items) > 1000
    assert plain_items or bounds is not None
