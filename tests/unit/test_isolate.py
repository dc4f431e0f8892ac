"""Pairing and judging of ``nccldiag isolate`` (pure functions).

Jobs here are written for these tests: a job is what one small probe run
showed (status, causes, busbw), not a captured output.
"""
import itertools
import threading

import pytest

from nccldiag.isolate import judge as isolate, pairing
from nccldiag.probe import counters
from nccldiag.isolate.judge import Job


def nodes(n):
    return [f"n{i:02d}" for i in range(1, n + 1)]


# --------------------------------------------------------------------------- pairing


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 16, 17, 64, 1000])
def test_circle_rounds_are_disjoint_and_never_repeat_a_pair(n):
    names = nodes(n)
    rounds = pairing.circle_rounds(names, 3)
    assert len(rounds) == min(3, n - 1 if n % 2 == 0 else n)
    seen = set()
    for pairs in rounds:
        flat = [x for p in pairs for x in p]
        assert len(flat) == len(set(flat))  # disjoint: every node in at most one pair per round
        assert len(pairs) == n // 2  # all N/2 pairs at once; one node sits out when N is odd
        for a, b in pairs:
            key = frozenset((a, b))
            assert key not in seen
            seen.add(key)
    met = pairing.partners(rounds)
    if n >= 4:
        # three distinct partners each (two for the node that sits out a round)
        assert all(len(met[x]) >= (2 if n % 2 else 3) for x in names)
        assert sum(1 for x in names if len(met[x]) == 3) >= n - (3 if n % 2 else 0)


def test_circle_rounds_small_cases():
    assert pairing.circle_rounds(["a"], 3) == []
    assert pairing.circle_rounds(["a", "b"], 3) == [[("a", "b")]]
    three = pairing.circle_rounds(["a", "b", "c"], 3)
    assert sorted(tuple(sorted(p)) for r in three for p in r) == list(itertools.combinations("abc", 2))
    with pytest.raises(ValueError):
        pairing.circle_rounds(["a", "a"], 3)


def test_shuffle_is_recorded_by_its_seed():
    names = nodes(16)
    assert pairing.shuffled(names, 7) == pairing.shuffled(names, 7)
    assert pairing.shuffled(names, 7) != names
    assert pairing.shuffled(names, None) == names


def test_confirmation_pairs_use_distinct_good_partners_not_met_before():
    met = {"s1": {"g1"}, "s2": {"g2"}}
    rounds, left = pairing.confirmation_pairs(["s1", "s2"], ["g1", "g2", "g3"], met)
    assert left == [] and len(rounds) == 1
    (pairs,) = rounds
    partners = dict(pairs)
    assert partners["s1"] != "g1" and partners["s2"] != "g2"
    assert len(set(partners.values())) == 2
    # more suspects than good nodes: a second round, still disjoint within each
    rounds, _ = pairing.confirmation_pairs(["s1", "s2", "s3"], ["g1"], {})
    assert [len(r) for r in rounds] == [1, 1, 1]
    rounds, left = pairing.confirmation_pairs(["s1"], [], {})
    assert rounds == [] and left == ["s1"]


def test_halves():
    assert pairing.halves(list("abcde")) == (list("abc"), list("de"))
    assert pairing.halves(list("ab")) == (["a"], ["b"])


# --------------------------------------------------------------------------- rows, counters


def test_rows_per_interface_and_hca():
    assert [r.name for r in isolate.build_rows("gloo")] == ["default"]
    rows = isolate.build_rows("gloo", ["eth1", "10.1.0.0/16"])
    assert [(r.name, r.net, r.environ) for r in rows] == [("net eth1", "eth1", {}), ("net 10.1.0.0/16", "10.1.0.0/16", {})]
    rows = isolate.build_rows("nccl", ["eth1"], ["mlx5_0", "mlx5_1:1"])
    assert rows[0].environ == {"NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket"}
    assert rows[1].environ == {"NCCL_IB_HCA": "=mlx5_0", "NCCL_NET": "IB"}
    assert rows[2].name == "hca mlx5_1:1"
    for bad in (["eth0; rm -rf /"], ["10.1.0.0/40"], ["300.1.0.0/16"]):
        with pytest.raises(ValueError):
            isolate.build_rows("gloo", bad)
    with pytest.raises(ValueError, match="nccl"):
        isolate.build_rows("gloo", [], ["mlx5_0"])
    with pytest.raises(ValueError, match="twice"):
        isolate.build_rows("gloo", ["eth1", "eth1"])


def test_counter_snapshots_and_deltas():
    # written for this test in the format counters_command prints
    before = counters.parse_counters("tcp OutSegs 1000\ntcp RetransSegs 10\nif eth0 rx_errors 5\nif lo rx_dropped 0\n"
                                    "garbage line\nif eth0 tx_dropped x\n")
    after = counters.parse_counters("tcp OutSegs 3000\ntcp RetransSegs 210\nif eth0 rx_errors 9\nif lo rx_dropped 3\n")
    d = counters.counter_delta(before, after)
    assert d == {"eth0.rx_errors": 4, "lo.rx_dropped": 3, "tcp.OutSegs": 2000, "tcp.RetransSegs": 200}
    assert counters.error_counters(d) == {"eth0.rx_errors": 4}
    assert counters.retrans_ratio([d]) == pytest.approx(0.1)
    assert counters.retrans_ratio([{}]) is None
    assert counters.retrans_ratio([{"tcp.OutSegs": 40, "tcp.RetransSegs": 4}]) is None  # too few to judge
    # a counter that went back (reset) is not a delta
    assert counters.counter_delta({"a": 5}, {"a": 1}) == {}


def test_ib_port_error_counters_join_the_round_snapshots():
    """A real capture's port counters, printed as the source's grep prints them (``path:value``, written for
    this test from the capture's values): only the error counters are kept, and one that grows is attributed."""
    from nccldiag.areas import ibcounters
    from tests import real

    text = real.node_text("ib-counters", "procfs-ttar-hfi1-mlx4-mlx5-counters-hw-counters-roce-errors.txt")
    snap = ibcounters.parse({"ib_counters": text}).counters
    assert snap

    def printed(counters):
        return "\n".join(f"/sys/class/infiniband/{port.split('/')[0]}/ports/{port.split('/')[1]}/counters/{name}:{v}"
                         for port, cs in counters.items() for name, v in cs.items())

    before = counters.parse_counters("tcp OutSegs 1000\n" + printed(snap))
    errors = set(ibcounters.LINK_FATAL + ibcounters.LINK_WARN + ibcounters.TRANSPORT_WARN)
    assert before and all(k.split(".")[-1] in errors for k in before if k.startswith("ib."))
    assert any(k.startswith("ib.mlx5_0/1.") for k in before)
    grown = {port: dict(cs) for port, cs in snap.items()}
    grown["mlx4_0/1"]["symbol_error"] = grown["mlx4_0/1"].get("symbol_error", 0) + 12
    for port in grown:  # traffic grows in every healthy run: never an error
        for name in ("port_xmit_data", "port_rcv_data"):
            if name in grown[port]:
                grown[port][name] += 10 ** 9
    d = counters.counter_delta(before, counters.parse_counters("tcp OutSegs 1000\n" + printed(grown)))
    assert counters.error_counters(d) == {"ib.mlx4_0/1.symbol_error": 12}


# --------------------------------------------------------------------------- judging


def test_classify_each_failure_kind():
    thr = 1.0
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "ok", busbw=5.0), thr) == "ok"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "ok", busbw=0.1), thr, 0.0) == "slow"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "ok", busbw=0.1), thr, 0.05) == "lossy"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "error",
                                causes=("rendezvous_unreachable",)), thr) == "blocked"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "hang", init_failed=True), thr) == "network"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "error", causes=("interface",)), thr) == "network"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "wrong"), thr) == "wrong"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "hang"), thr) == "hang"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "error"), thr) == "error"
    # a collective that timed out while TCP retransmitted heavily: the link loses packets
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "error"), thr, 0.08) == "lossy"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "hang", init_failed=True), thr, 0.08) == "lossy"
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "hang", init_failed=True), thr, 0.001) == "network"
    # alone (one node) and larger groups are not judged on busbw
    assert isolate.classify(Job(0, "alone", "r", ("a",), "ok", busbw=0.0), thr) == "ok"


def test_threshold_is_the_larger_of_expected_and_fraction_of_median():
    thr, med = isolate.threshold([1.0, 2.0, 3.0, None, 0.0], 0.5)
    assert med == 2.0 and thr == 1.0
    thr, _ = isolate.threshold([1.0, 2.0, 3.0], 0.5, expected=1.5)
    assert thr == 1.5
    assert isolate.threshold([], 0.5) == (None, None)
    assert isolate.threshold([], 0.5, expected=2.0) == (2.0, None)
    d = isolate.distribution([1.0, 2.0, 3.0, 4.0, 5.0])
    assert d["n"] == 5 and d["min"] == 1.0 and d["median"] == 3.0 and d["max"] == 5.0


def schedule_jobs(names, bad_kind, row="r", fail_pairs=()):
    """Pair jobs of the circle schedule; pairs with a node in ``bad_kind`` fail with that kind."""
    jobs = []
    for k, pairs in enumerate(pairing.circle_rounds(names, 3), start=1):
        for a, b in pairs:
            j = Job(k, isolate.PAIRS, row, (a, b), "ok", busbw=1.0)
            kinds = [bad_kind[x] for x in (a, b) if x in bad_kind]
            if kinds:
                j.kind = kinds[0]
            elif frozenset((a, b)) in {frozenset(p) for p in fail_pairs}:
                j.kind = isolate.SLOW
            else:
                j.kind = isolate.OK
            jobs.append(j)
    return jobs


def confirm_jobs(row, names, good, bad_kind, round_=4):
    rounds, _ = pairing.confirmation_pairs(names, good)
    out = []
    for pairs in rounds:
        for s, g in pairs:
            j = Job(round_, isolate.CONFIRM, row, (s, g), "ok", busbw=1.0)
            j.kind = bad_kind.get(s, isolate.OK)
            out.append(j)
    return out


def test_bad_nodes_named_and_healthy_cleared_even_when_a_healthy_node_meets_two_bad_ones():
    names = nodes(16)
    rounds = pairing.circle_rounds(names, 3)
    # pick two bad nodes that share a partner, so that partner fails twice
    met = pairing.partners(rounds)
    victim = names[5]
    b1, b2 = sorted(met[victim])[:2]
    bad = {b1: isolate.SLOW, b2: isolate.LOSSY}
    jobs = schedule_jobs(names, bad)
    rj = isolate.judge_pairs("r", jobs, names)
    assert sorted(rj.bad) == sorted(bad) and victim not in rj.bad and rj.suspects == []
    assert victim in rj.cleared
    need = isolate.to_confirm(["r"], jobs, names)
    assert sorted(need["r"]) == sorted(bad)
    jobs += confirm_jobs("r", need["r"], isolate.proven_good("r", jobs, names), bad)
    nv, pv = isolate.verdicts(names, ["r"], jobs)
    by = {v.node: v for v in nv}
    assert by[b1].verdict == "bad" and by[b1].cls == "slow node"
    assert by[b2].verdict == "bad" and by[b2].cls == "lossy link"
    assert all(by[n].verdict == "ok" for n in names if n not in bad)
    assert pv == []


def test_single_failing_pair_is_a_suspect_path_when_both_ends_pass_with_good_nodes():
    names = nodes(8)
    a, b = pairing.circle_rounds(names, 3)[1][2]
    jobs = schedule_jobs(names, {}, fail_pairs=[(a, b)])
    rj = isolate.judge_pairs("r", jobs, names)
    assert rj.bad == [] and rj.suspects == [tuple(sorted((a, b)))]
    need = isolate.to_confirm(["r"], jobs, names)
    assert sorted(need["r"]) == sorted((a, b))
    jobs += confirm_jobs("r", need["r"], isolate.proven_good("r", jobs, names), {})
    nv, pv = isolate.verdicts(names, ["r"], jobs)
    assert [(p.nodes, p.verdict) for p in pv] == [(tuple(sorted((a, b))), "suspect path")]
    # neither end is a bad node; both stay flagged until the path is fixed
    assert {v.node: v.verdict for v in nv if v.verdict != "ok"} == {a: "suspect", b: "suspect"}


def test_single_failing_pair_resolved_to_the_end_that_fails_again():
    names = nodes(8)
    a, b = pairing.circle_rounds(names, 3)[0][1]
    jobs = schedule_jobs(names, {}, fail_pairs=[(a, b)])
    jobs += confirm_jobs("r", isolate.to_confirm(["r"], jobs, names)["r"],
                         isolate.proven_good("r", jobs, names), {b: isolate.SLOW})
    nv, pv = isolate.verdicts(names, ["r"], jobs)
    by = {v.node: v.verdict for v in nv}
    assert by[b] == "bad" and by[a] == "ok"
    assert pv[0].verdict == "bad node"


def test_bad_node_that_passes_with_a_good_partner_is_only_a_suspect():
    names = nodes(8)
    bad = {"n03": isolate.SLOW}
    jobs = schedule_jobs(names, bad)
    jobs += confirm_jobs("r", ["n03"], isolate.proven_good("r", jobs, names), {})
    nv, _ = isolate.verdicts(names, ["r"], jobs)
    assert {v.node: v.verdict for v in nv}["n03"] == "suspect"


def test_a_network_broken_on_one_row_is_named_with_that_row():
    names = nodes(8)
    jobs = schedule_jobs(names, {}, row="net1") + schedule_jobs(names, {"n05": isolate.NETWORK}, row="net2")
    jobs += confirm_jobs("net2", ["n05"], isolate.proven_good("net2", jobs, names), {"n05": isolate.NETWORK})
    nv, _ = isolate.verdicts(names, ["net1", "net2"], jobs)
    v = {x.node: x for x in nv}["n05"]
    assert v.verdict == "bad" and v.cls == "broken network" and v.rows == ["net2"]
    assert v.describe() == "broken network (net2)"
    # the same fault on every row is the node's
    jobs = schedule_jobs(names, {"n05": isolate.BLOCKED}, row="net1") + \
        schedule_jobs(names, {"n05": isolate.BLOCKED}, row="net2")
    for row in ("net1", "net2"):
        jobs += confirm_jobs(row, ["n05"], isolate.proven_good(row, jobs, names), {"n05": isolate.BLOCKED})
    nv, _ = isolate.verdicts(names, ["net1", "net2"], jobs)
    v = {x.node: x for x in nv}["n05"]
    assert v.cls == "blocked" and v.rows == []


def test_a_candidate_no_partner_confirmed_is_only_a_suspect():
    """Every node failed some job (a loaded machine): the node with the most failing partners is a candidate, and
    with no partner left to confirm it, it is a suspect, never bad; nobody is drained on the order of the names."""
    names = nodes(3)
    jobs = schedule_jobs(names, {}, fail_pairs=list(itertools.combinations(names, 2)))
    rj = isolate.judge_pairs("r", jobs, names)
    assert rj.bad == ["n01"]  # the first by order: the evidence does not tell the three apart
    assert isolate.proven_good("r", jobs, names) == [] and isolate.confirm_partners("r", jobs, names) == []
    nv, pv = isolate.verdicts(names, ["r"], jobs)
    assert [v.verdict for v in nv] == ["suspect"] * 3
    assert any("not confirmed" in e for e in nv[0].evidence)
    assert [p.verdict for p in pv] == ["suspect pair (not confirmed)"]


def test_two_bad_nodes_that_met_every_other_node_are_confirmed_against_the_cleared_ones():
    """4 nodes, 2 bad: each healthy node met both bad ones, so no node passed every job; the healthy ones, whose
    every failure was with a bad candidate and who passed with each other, are the confirmation's partners."""
    names = nodes(4)
    bad = {"n01": isolate.SLOW, "n02": isolate.SLOW}
    jobs = schedule_jobs(names, bad)
    assert isolate.proven_good("r", jobs, names) == []
    partners = isolate.confirm_partners("r", jobs, names)
    assert sorted(partners) == ["n03", "n04"]
    need = isolate.to_confirm(["r"], jobs, names)["r"]
    assert sorted(need) == ["n01", "n02"]
    # the bad ones fail again: bad
    again = jobs + confirm_jobs("r", need, partners, bad)
    by = {v.node: v for v in isolate.verdicts(names, ["r"], again)[0]}
    assert [by[n].verdict for n in names] == ["bad", "bad", "ok", "ok"] and by["n01"].cls == "slow node"
    # they pass the second time (the load, not the nodes): suspects, nobody bad
    passed = jobs + confirm_jobs("r", need, partners, {})
    by = {v.node: v.verdict for v in isolate.verdicts(names, ["r"], passed)[0]}
    assert by == {"n01": "suspect", "n02": "suspect", "n03": "ok", "n04": "ok"}


def test_node_that_failed_alone_is_excluded_and_named():
    names = nodes(4)
    alone = Job(0, isolate.ALONE, "r", ("n02",), "error", kind=isolate.ERROR, evidence=["torch missing"])
    nv, _ = isolate.verdicts(names, ["r"], [alone], excluded={"n02": "failed alone in round 0"})
    v = {x.node: x for x in nv}["n02"]
    assert v.verdict == "bad" and v.cls.startswith("fails alone")


def test_n2_one_failing_pair_cannot_tell_which_node():
    names = nodes(2)
    jobs = schedule_jobs(names, {}, fail_pairs=[tuple(names)])
    need = isolate.to_confirm(["r"], jobs, names)
    assert isolate.proven_good("r", jobs, names) == []
    nv, pv = isolate.verdicts(names, ["r"], jobs)
    assert pv[0].verdict == "suspect pair (not confirmed)"
    assert sorted(need["r"]) == names
    assert all(v.verdict == "suspect" for v in nv)


def test_main_kind_prefers_the_more_telling_kind_on_ties():
    assert isolate.main_kind(["slow", "blocked"]) == "blocked"
    assert isolate.main_kind(["slow", "slow", "blocked"]) == "slow"
    assert isolate.main_kind([]) == ""


# --------------------------------------------------------------------------- command line


def cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "nccldiag", "isolate", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args, says", [
    (["-w", "node01"], "at least 2 hosts"),
    (["-w", "node[01-02]", "--backend", "gloo", "--hca", "mlx5_0"], "--hca needs the nccl backend"),
    (["-w", "node[01-02]", "--backend", "gloo", "--net", "eth0;reboot"], "expected an interface name"),
    (["-w", "node[01-02]", "--partition", "gpu"], "use them with --launcher srun"),
    (["--launcher", "srun", "-w", "node[01-02]"], "--launcher srun runs inside an allocation"),
])
def test_usage_errors_are_one_line_and_exit_2(args, says):
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr


def test_report_renders_node_output_as_text_not_markup():
    """A gloo error quotes a source path in brackets; rich must not read it as a closing tag."""
    import io

    from rich.console import Console

    from nccldiag.isolate.judge import IsolateReport, Round
    from nccldiag.report import isolate_report

    msg = "init failed: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out"
    j = Job(1, isolate.PAIRS, "default", ("a", "b"), "hang", init_failed=True, kind=isolate.NETWORK, evidence=[msg])
    rep = IsolateReport(hosts=["a", "b"], backend="gloo", rows=[isolate.Row("default")], rounds=[Round(1, "pairs", [j])])
    rep.nodes, rep.pairs = isolate.verdicts(["a", "b"], ["default"], [j])
    rep.nodes[0].evidence = [msg]
    buf = io.StringIO()
    isolate_report.render(isolate_report.document(rep), Console(file=buf, width=200))
    assert "pair.cc:152" in buf.getvalue()
    data = isolate_report.to_json(rep)
    assert data["schema"] == "nccldiag.isolate/1" and data["rounds"][0]["jobs"][0]["kind"] == "network"


def test_bisection_narrows_to_the_group_whose_halves_pass():
    names = nodes(8)
    plan, located = isolate.bisect_plan({"r": [names]})
    assert plan == [("r", names[:4]), ("r", names[4:])] and located == []

    def ran(groups, failing_sets):
        out = []
        for row, g in groups:
            j = Job(5, isolate.BISECT, row, tuple(g), "ok")
            j.kind = isolate.ERROR if any(set(f) <= set(g) for f in failing_sets) else isolate.OK
            out.append(j)
        return out

    # a fault between n02 and n03 (only a group holding both fails): the first half fails, then both
    # of its halves pass: located there, in log2 steps
    fault = [("n02", "n03")]
    nxt, located = isolate.bisect_next({"r": [names]}, ran(plan, fault))
    assert nxt == {"r": [names[:4]]} and located == []
    plan2, _ = isolate.bisect_plan(nxt)
    assert plan2 == [("r", names[:2]), ("r", names[2:4])]
    nxt2, located2 = isolate.bisect_next(nxt, ran(plan2, fault))
    assert nxt2 == {} and located2[0]["nodes"] == names[:4] and "between the halves" in located2[0]["why"]
    # a group of 2 is reported as it is
    plan3, located3 = isolate.bisect_plan({"r": [["n01", "n02"]]})
    assert plan3 == [] and located3[0]["nodes"] == ["n01", "n02"]


def test_an_unresolved_failing_pair_fails_the_run():
    """N = 2 and the pair fails: no node is named, but the exit code says something failed."""
    from nccldiag.isolate.judge import IsolateReport
    from nccldiag.isolate.run import _findings

    names = nodes(2)
    jobs = schedule_jobs(names, {}, fail_pairs=[tuple(names)])
    rep = IsolateReport(hosts=names, backend="gloo", rows=[isolate.Row("r")])
    rep.nodes, rep.pairs = isolate.verdicts(names, ["r"], jobs)
    _findings(rep)
    assert "isolate.pair" in {f.check for f in rep.findings}
    rep.rounds = [object()]
    assert rep.exit_code == 1


def test_a_round_slower_as_a_whole_is_judged_against_its_own_median():
    jobs = []
    for rnd, scale in ((1, 1.0), (2, 0.2), (3, 1.0)):  # round 2 ran 5x slower for everyone
        for k in range(8):
            bw = scale * (1.0 + 0.1 * k)
            if rnd == 3 and k == 0:
                bw = 0.05  # one genuinely slow pair
            jobs.append(Job(rnd, isolate.PAIRS, "r", (f"a{rnd}{k}", f"b{rnd}{k}"), "ok", busbw=bw))
    per_round, row_thr, med = isolate.job_thresholds("r", jobs, 0.5)
    assert per_round[2] < 0.2 < per_round[1]
    slow = [j for j in jobs if isolate.classify(j, per_round[j.round]) == isolate.SLOW]
    assert [(j.round, j.busbw) for j in slow] == [(3, 0.05)]
    assert row_thr == pytest.approx(0.5 * med)


def test_a_single_failing_pair_with_a_node_bad_on_another_row_is_explained():
    names = nodes(8)
    bad = "n03"
    partner = sorted(pairing.partners(pairing.circle_rounds(names, 3))[bad])[0]
    jobs = schedule_jobs(names, {bad: isolate.LOSSY}, row="net1")
    jobs += schedule_jobs(names, {}, row="net2", fail_pairs=[(bad, partner)])
    jobs += confirm_jobs("net1", [bad], isolate.proven_good("net1", jobs, names), {bad: isolate.LOSSY})
    nv, _ = isolate.verdicts(names, ["net1", "net2"], jobs)
    by = {v.node: v for v in nv}
    assert by[bad].verdict == "bad" and by[partner].verdict == "ok"


def test_srun_task0_is_on_the_first_node_in_slurms_order_not_the_jobs():
    from nccldiag.inventory import Host
    from nccldiag.probe.launchers.srun import LAUNCHER, SlurmNode

    order = {"gpu01": 0, "gpu02": 1, "gpu10": 2, "gpu03": 3}  # slurm.conf's order, not sorted by name

    def task0_node(names, slurm_names, order):  # as the launcher's nodes() makes the nodes
        return LAUNCHER.rank0([SlurmNode(Host(n), slurm_names[n], "", "1", order.get(slurm_names[n], len(order)))
                               for n in names]).name

    same = {n: n for n in order}
    assert task0_node(["gpu02", "gpu01"], same, order) == "gpu01"  # a confirmation job: suspect first
    assert task0_node(["gpu03", "gpu10"], same, order) == "gpu10"
    # hosts given by address: the Slurm name decides; a node Slurm does not list comes last
    names = {"10.0.0.3": "gpu03", "10.0.0.9": "gpu09", "10.0.0.2": "gpu02"}
    assert task0_node(["10.0.0.3", "10.0.0.2"], names, order) == "10.0.0.2"
    assert task0_node(["10.0.0.9", "10.0.0.3"], names, order) == "10.0.0.3"


def test_srun_step_of_a_pair_job_names_itself_and_runs_beside_the_others():
    import shlex

    from nccldiag.probe import launch
    from nccldiag.probe.launchers import srun as srun_launcher

    spec = launch.LaunchSpec(run_id="nccldiag-x-7", rundir="/tmp/nccldiag-x", nproc_per_node=2,
                             rdzv_host="10.0.0.1", rdzv_port=29403, env={"GLOO_SOCKET_IFNAME": "eth1"},
                             worker_args=["--backend", "gloo", "--go-file", "/tmp/nccldiag-x/go-3"])
    words = shlex.split(srun_launcher.command(spec, ["gpu02", "gpu01"], {"gpu02": "eth1", "gpu01": "eth1"}, "55", 90,
                                            name="nccldiag-x-7"))
    argv = words[words.index("srun"):]
    # one task per rank on exactly the pair's nodes, inside the allocation, sharing it with the round's other steps
    assert {"--job-name=nccldiag-x-7", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--nodelist=gpu02,gpu01",
            "--jobid=55", "--overlap", "--kill-on-bad-exit=1", "--time=2"} <= set(argv)
    env = dict(w.split("=", 1) for w in words[2:words.index("srun")])
    assert env["NCCLDIAG_RUN"] == "nccldiag-x-7" and env["MASTER_PORT"] == "29403"
    assert env["GLOO_SOCKET_IFNAME"] == "eth1"
    assert argv[-4:] == ["--backend", "gloo", "--go-file", "/tmp/nccldiag-x/go-3"]


def test_unfinished_job_is_hang_only_without_progress():
    # no collective call completed before the deadline: nothing moved
    assert isolate.unfinished_kind([], end=90.0, timeout=90.0) == isolate.HANG
    # calls completing until the end, however late they started (a loaded machine stretches the start)
    assert isolate.unfinished_kind([80.0, 81.2, 82.5, 84.0, 85.1, 86.3, 88.9], end=90.0, timeout=90.0) == isolate.SLOW
    # one call done just before the deadline: still moving
    assert isolate.unfinished_kind([88.0], end=90.0, timeout=90.0) == isolate.SLOW
    # calls every second, then nothing for the last 40 s: progress seen, then stopped
    assert isolate.unfinished_kind([10.0, 11.0, 12.0, 13.0], end=53.0, timeout=90.0) == isolate.STALLED


def test_a_stop_is_measured_against_the_gaps_the_job_showed_and_its_timeout():
    # a link so slow that each call takes 15 s: a 25 s wait at the end is its pace, not a stop
    assert isolate.unfinished_kind([15.0, 30.0, 45.0, 60.0], end=85.0, timeout=90.0) == isolate.SLOW
    # past 3 gaps of 15 s it is a stop
    assert isolate.unfinished_kind([15.0, 30.0], end=30.0 + 46.0, timeout=90.0) == isolate.STALLED
    # with a 600 s timeout, a fifth of it (120 s) is the least quiet that counts as a stop
    assert isolate.unfinished_kind([10.0, 11.0], end=11.0 + 100.0, timeout=600.0) == isolate.SLOW
    assert isolate.unfinished_kind([10.0, 11.0], end=11.0 + 130.0, timeout=600.0) == isolate.STALLED


def test_classify_a_job_cut_by_its_deadline_by_its_progress():
    hang = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=91.0)
    assert isolate.classify(hang, 1.0, None, 90.0) == isolate.HANG
    moving = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=91.0, progress=[70.0, 75.0, 80.0, 86.0, 90.5],
                 partial_busbw=0.1)
    assert isolate.classify(moving, 1.0, None, 90.0) == isolate.SLOW
    stopped = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=91.0, progress=[5.0, 6.0, 7.0])
    assert isolate.classify(stopped, 1.0, None, 90.0) == isolate.STALLED
    # what the other evidence says first still wins: heavy retransmission, ranks stuck in init, a blocked port
    assert isolate.classify(moving, 1.0, 0.05, 90.0) == isolate.LOSSY
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "hang", init_failed=True, elapsed=91.0),
                            1.0, None, 90.0) == isolate.NETWORK
    # an error is an error, whatever moved before it
    assert isolate.classify(Job(1, "pairs", "r", ("a", "b"), "error", progress=[1.0]), 1.0, None, 90.0) == "error"
    # the class the probe's analysis gave from when the deadline stopped the job, not from when its reap ended
    # (a busy machine stretches the reap): still moving at the stop, though its reap took 60 s more
    reaped_late = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=150.0, progress=[70.0, 75.0, 80.0, 86.0, 89.5],
                      unfinished=isolate.SLOW, partial_busbw=0.1)
    assert isolate.classify(reaped_late, 1.0, None, 90.0) == isolate.SLOW
    reaped_late.unfinished, reaped_late.partial_busbw = "", 2.0  # judged from the reap's end: a stall
    assert isolate.classify(reaped_late, 1.0, None, 90.0) == isolate.STALLED



def test_a_job_that_moved_below_its_rounds_rate_then_paused_is_slow_not_stalled():
    """A slow link pauses: TCP backs off when the link's queue overflows, and a pair cut by the deadline can show
    20 s and more with no call done. The rate it moved at tells a slow link's pause from a stall after a healthy
    rate, whatever the load did to the pause's length."""
    paused = [5.0 + 0.7 * i for i in range(30)]  # 20 s of calls, then 25 s with none before the cut at 45 s
    slow = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=45.2, progress=paused, partial_busbw=0.0002,
               unfinished=isolate.STALLED)
    assert isolate.classify(slow, 0.002, None, 45.0) == isolate.SLOW
    slow.kind, slow.threshold = isolate.SLOW, 0.002
    line = isolate.job_line(slow)
    assert "moving below its round's rate, then paused" in line and "busbw so far 0.0002 GB/s < 0.002" in line, line
    healthy_then_stopped = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=45.2, progress=paused,
                               partial_busbw=0.02, unfinished=isolate.STALLED)
    assert isolate.classify(healthy_then_stopped, 0.002, None, 45.0) == isolate.STALLED
    # too short a span to measure a rate, or no threshold: the pause stays a stall
    brief = Job(1, "pairs", "r", ("a", "b"), "hang", elapsed=45.2, progress=[5.0, 6.0], partial_busbw=0.0002,
                unfinished=isolate.STALLED)
    assert isolate.classify(brief, 0.002, None, 45.0) == isolate.STALLED
    assert isolate.classify(slow, None, None, 45.0) == isolate.STALLED


# A pair's records in the shape the worker wrote them in a run of the four-fault test of
# tests/integration/test_isolate.py (its run directory's records.jsonl, gloo, --size 256K, 5 iterations after 1 of
# warm-up): the check's progress and result, then the sweep's progress records, each with the calls done so far and
# their busbw. The rates are that run's: its healthy pairs completed at 0.011 to 0.33 GB/s (median about 0.02, so
# 0.002 at --fraction 0.1), the 2 Mbit/s node's pairs moved at 0.000235 GB/s.
def _check(rank):
    return [{"type": "progress", "rank": rank, "collective": "all_reduce", "phase": "check", "size": 262144,
             "count": 65536},
            {"type": "result", "rank": rank, "collective": "all_reduce", "phase": "check", "status": "ok", "wrong": 0,
             "wrong_total": 0, "ranks_wrong": [], "verified": True, "size": 262144, "count": 65536,
             "dtype": "float32", "redop": "sum", "root": -1, "time_us": 1005407.874}]


def _moving(rank, done, busbw):
    return {"type": "progress", "rank": rank, "collective": "all_reduce", "phase": "sweep", "size": 262144,
            "count": 65536, "done": done, "iters": 5, "warmup": 1, "rank_time_us": round(262144 / busbw / 1e3, 3),
            "busbw": busbw}


def cut_pair(first, every, busbw, end=90.2, nodes=("a", "b")):
    """A pair job the deadline (90 s) cut while its data still moved: its check done ``first`` seconds after the
    launch, then a progress record per rank every ``every`` seconds until the cut, read as isolate reads them."""
    job = Job(1, isolate.PAIRS, "r", nodes, "hang", elapsed=end, unfinished=isolate.SLOW)
    moving = {}
    timed = [(first, rec) for rank in (0, 1) for rec in _check(rank)]
    t, done = first + every, 1
    while t < end - 0.1:
        done += 1
        timed += [(t, _moving(rank, done, busbw)) for rank in (0, 1)]
        t += every
    for at, rec in sorted(timed, key=lambda x: x[0]):
        isolate.note_progress(job, rec, at, moving)
    job.partial_busbw = isolate.partial_busbw(moving)
    return job


def test_a_job_cut_while_still_moving_is_slow_only_by_the_rate_it_moved_at():
    """Cut at the deadline while its data still moved: slow when the busbw of the calls it did, over the time they
    ran, is below the threshold its round's completed pairs are held to; not slow when it started late and then
    moved at a healthy rate; and no evidence either way when it moved too few seconds to measure a rate."""
    thr = 0.002
    # the 2 Mbit/s node's pair, moving from 20 s on at its rate: slow, whatever delayed its start
    slow = cut_pair(20.0, 1.1, 0.000235)
    slow.kind = isolate.classify(slow, thr, None, 90.0)
    assert slow.partial_busbw == 0.000235 and slow.kind == isolate.SLOW and slow.failed
    # the same rate, its first progress 84 s into its 90 s (the loaded machine of the failed run): a few records in
    # its last seconds, too little to measure: neither slow nor a pass
    late = cut_pair(84.0, 1.1, 0.000235)
    assert isolate.rate_span(late) < 18.0
    late.kind = isolate.classify(late, thr, None, 90.0)
    assert late.kind == isolate.UNMEASURED and not late.failed and not late.judged
    late.threshold = thr
    assert "too little to measure its rate" in isolate.job_line(late)
    # started late, then moved for 20 s at the healthy pairs' rate: not slow
    healthy = cut_pair(70.0, 1.0, 0.02)
    healthy.kind = isolate.classify(healthy, thr, None, 90.0)
    assert healthy.kind == isolate.OK and not healthy.failed and healthy.judged
    assert "healthy rate" in isolate.job_line(healthy)
    # no threshold (no pair of the row completed): no rate to hold it to
    assert isolate.classify(cut_pair(20.0, 1.1, 0.000235), None, None, 90.0) == isolate.UNMEASURED
    # moving but no rank had written a rate yet (only its check results came back)
    bare = cut_pair(60.0, 40.0, 0.02)
    assert bare.partial_busbw is None and isolate.classify(bare, thr, None, 90.0) == isolate.UNMEASURED
    # its collective completed (a busbw over all its calls) and the deadline cut its ranks while they finished, as a
    # healthy pair of the four-fault run on a loaded machine did (0.017 GB/s, its last progress 17 s before the cut)
    done = cut_pair(73.2, 40.0, 0.02)
    done.busbw = 0.0169608
    assert done.partial_busbw is None and isolate.classify(done, thr, None, 90.0) == isolate.OK
    done.busbw = 0.000226
    assert isolate.classify(done, thr, None, 90.0) == isolate.SLOW
    # heavy retransmission still comes first
    assert isolate.classify(cut_pair(84.0, 1.1, 0.000235), thr, 0.05, 90.0) == isolate.LOSSY
    # the span it needs grows with the deadline: a fifth of it, and never under 5 s
    assert isolate.classify(cut_pair(34.0, 1.1, 0.000235, end=45.2), thr, None, 45.0) == isolate.SLOW
    assert isolate.classify(cut_pair(41.0, 1.1, 0.000235, end=45.2), thr, None, 45.0) == isolate.UNMEASURED


def test_healthy_pairs_that_started_late_name_no_node_slow_or_suspect():
    """The failed run on a loaded machine: healthy pairs whose first progress came 80 to 89 s into their 90 s were
    cut still moving. They count against no node; a node whose pairs on a row were all so is untested there; the
    really slow node, whose pairs moved at its rate for long enough to measure it, is still a slow node."""
    from nccldiag.isolate.judge import IsolateReport
    from nccldiag.isolate.run import _findings

    names = nodes(16)
    thr = 0.002
    jobs = []
    for k, pairs in enumerate(pairing.circle_rounds(names, 3), start=1):
        for i, (a, b) in enumerate(pairs):
            if "n03" in (a, b):
                j = cut_pair(30.0, 1.1, 0.000235, nodes=(a, b))
            elif "n09" in (a, b) or i % 3 == k % 3:
                j = cut_pair(80.0 + i, 1.1, 0.000235, nodes=(a, b))  # late: first progress 80 to 89 s in
            else:
                j = Job(k, isolate.PAIRS, "r", (a, b), "ok", busbw=0.02, elapsed=75.0)
            j.round = k
            j.kind = isolate.classify(j, thr, None, 90.0)
            jobs.append(j)
    assert {j.kind for j in jobs if "n03" in j.nodes} == {isolate.SLOW}
    assert {j.kind for j in jobs if "n09" in j.nodes and "n03" not in j.nodes} == {isolate.UNMEASURED}
    good = isolate.proven_good("r", jobs, names)
    assert good and "n09" not in good
    again = cut_pair(30.0, 1.1, 0.000235, nodes=("n03", good[0]))  # the confirmation: slow again
    again.round, again.stage = 4, isolate.CONFIRM
    again.kind = isolate.classify(again, thr, None, 90.0)
    jobs.append(again)
    nv, pairs = isolate.verdicts(names, ["r"], jobs)
    v = {x.node: x for x in nv}
    assert v["n03"].verdict == "bad" and v["n03"].cls == "slow node"
    assert v["n09"].verdict == "untested" and v["n09"].evidence
    assert all(v[n].verdict in ("ok", "untested") for n in names if n != "n03"), {n: v[n].verdict for n in names}
    assert pairs == []
    assert "n09" not in isolate.proven_good("r", jobs, names)
    rep = IsolateReport(hosts=names, backend="gloo", rows=[isolate.Row("r")])
    rep.nodes, rep.pairs = nv, pairs
    _findings(rep)
    untested = [f for f in rep.findings if f.check == "isolate.not_started" and f.host == "n09"]
    assert untested and "measure their rate" in untested[0].message


def test_records_that_show_data_moved():
    assert isolate.shows_progress({"type": "result", "collective": "all_reduce", "phase": "check", "status": "ok"})
    assert isolate.shows_progress({"type": "result", "collective": "all_reduce", "phase": "sweep", "status": "ok"})
    assert isolate.shows_progress({"type": "progress", "collective": "all_reduce", "phase": "sweep", "done": 2})
    assert not isolate.shows_progress({"type": "progress", "collective": "all_reduce", "phase": "sweep"})
    assert not isolate.shows_progress({"type": "progress", "collective": "all_reduce", "phase": "sweep", "done": 0})
    assert not isolate.shows_progress({"type": "progress", "collective": "all_reduce", "phase": "sweep", "done": True})
    assert not isolate.shows_progress({"type": "progress", "collective": None, "phase": "ready"})
    assert not isolate.shows_progress({"type": "result", "collective": "all_reduce", "status": "error"})


def test_records_that_say_a_rank_had_entered_the_collective():
    """The progress record the worker writes just before a collective's first call, and every record of it after;
    not the records of a rank still starting (start, init, ready)."""
    assert isolate.entered_collective({"type": "progress", "collective": "all_reduce", "phase": "check"})
    assert isolate.entered_collective({"type": "result", "collective": "all_reduce", "status": "error"})
    assert not isolate.entered_collective({"type": "start", "collectives": ["all_reduce"]})
    assert not isolate.entered_collective({"type": "progress", "collective": None, "phase": "init"})
    assert not isolate.entered_collective({"type": "progress", "collective": None, "phase": "ready"})
    assert not isolate.entered_collective({"type": "error", "phase": "init", "message": "timed out"})


def test_unfinished_slow_and_stalled_nodes_get_their_class_and_say_why():
    names = nodes(8)
    slow = {"n03": isolate.SLOW}
    jobs = schedule_jobs(names, slow, row="net1") + schedule_jobs(names, slow, row="net2")
    for row in ("net1", "net2"):
        jobs += confirm_jobs(row, ["n03"], isolate.proven_good(row, jobs, names), slow)
    for j in jobs:
        if "n03" in j.nodes:  # cut by the deadline while still moving, as on a loaded machine
            j.status, j.busbw, j.elapsed, j.progress, j.partial_busbw = "hang", None, 91.0, [60.0, 75.0, 89.0], 0.02
            j.threshold = 0.1
    nv, _ = isolate.verdicts(names, ["net1", "net2"], jobs)
    v = {x.node: x for x in nv}["n03"]
    assert v.verdict == "bad" and v.cls == "slow node"
    assert any("still moving" in e and "busbw so far 0.02 GB/s < 0.1" in e for e in v.evidence), v.evidence
    stalled = {"n03": isolate.STALLED}
    jobs = schedule_jobs(names, stalled, row="net1") + schedule_jobs(names, {}, row="net2")
    jobs += confirm_jobs("net1", ["n03"], isolate.proven_good("net1", jobs, names), stalled)
    for j in jobs:
        if "n03" in j.nodes and j.row == "net1":
            j.status, j.busbw, j.elapsed, j.progress = "hang", None, 91.0, [5.0, 6.0]
    nv, _ = isolate.verdicts(names, ["net1", "net2"], jobs)
    v = {x.node: x for x in nv}["n03"]
    assert v.cls == "slow or stalled link" and v.rows == ["net1"]
    assert any("progress seen, then stopped" in e for e in v.evidence), v.evidence


def test_jobs_whose_ranks_were_still_starting_at_the_deadline_clear_no_node_and_fail_none():
    """A loaded machine can stretch a job's start past its deadline: no rank entered the collective, none failed.
    Such a job is no failure of its nodes (no 'hang'), and no pass either: a node all of whose jobs on a row were
    so is untested, not cleared, and the run says so (exit 3); it never becomes a proven-good partner."""
    from nccldiag.isolate.judge import IsolateReport
    from nccldiag.isolate.run import _findings

    names = nodes(6)
    jobs = schedule_jobs(names, {})
    for j in jobs:
        if "n04" in j.nodes:
            j.status, j.busbw, j.elapsed, j.unfinished = "hang", None, 46.0, isolate.NOT_STARTED
            j.kind = isolate.classify(j, 0.5, None, 45.0)
    assert {j.kind for j in jobs if "n04" in j.nodes} == {isolate.NOT_STARTED}
    assert not any(j.failed for j in jobs)
    assert "n04" not in isolate.proven_good("r", jobs, names)
    assert set(isolate.proven_good("r", jobs, names)) == set(names) - {"n04"}
    nv, pairs = isolate.verdicts(names, ["r"], jobs)
    v = {x.node: x for x in nv}
    assert pairs == [] and v["n04"].verdict == "untested"
    assert all("still starting" in e for e in v["n04"].evidence) and v["n04"].evidence
    # its partners passed other jobs: they are cleared
    assert all(v[n].verdict == "ok" for n in names if n != "n04")
    rep = IsolateReport(hosts=names, backend="gloo", rows=[isolate.Row("r")])
    rep.nodes, rep.pairs = nv, pairs
    _findings(rep)
    found = [f for f in rep.findings if f.check == "isolate.not_started"]
    assert [f.host for f in found] == ["n04"] and "isolate.summary" not in {f.check for f in rep.findings}
    rep.rounds = [object()]
    assert rep.exit_code == 3
    # one job that started and hung is evidence, whatever the others did
    hung = next(j for j in jobs if "n04" in j.nodes)
    hung.unfinished, hung.progress = "", []
    hung.kind = isolate.classify(hung, 0.5, None, 45.0)
    assert hung.kind == isolate.HANG and hung.failed


def test_a_node_alone_that_never_started_while_its_peers_finished_is_a_hang_of_its_own():
    """Round 0: every node alone, all at once. One whose ranks had not entered the collective at the deadline, 1.5
    times the time its slowest peer took to finish, could not start its ranks under the load they ran under: a
    hang, failing alone. Where no node of the round finished, or the slowest took nearly the whole deadline, the
    load may have slowed them all: nothing is said of any."""
    names = nodes(4)

    def round0(not_started, took):
        jobs = [Job(0, isolate.ALONE, "r", (n,), "ok", kind=isolate.OK, elapsed=took) for n in names]
        for j in jobs:
            if j.nodes[0] in not_started:
                j.status, j.unfinished, j.elapsed = "hang", isolate.NOT_STARTED, 20.0
                j.kind = isolate.classify(j, None, timeout=20.0)
        return jobs

    jobs = round0({"n02"}, 6.2)
    assert [j.kind for j in jobs] == [isolate.OK, isolate.NOT_STARTED, isolate.OK, isolate.OK]
    isolate.started_alone(jobs)
    assert [j.kind for j in jobs] == [isolate.OK, isolate.HANG, isolate.OK, isolate.OK]
    assert jobs[1].failed and "at most 6 s" in jobs[1].evidence[-1]
    for not_started, took in ((set(names), 6.2), ({"n02"}, 17.5)):
        jobs = round0(not_started, took)
        isolate.started_alone(jobs)
        assert isolate.NOT_STARTED in {j.kind for j in jobs} and not any(j.failed for j in jobs)


def test_a_bisection_half_still_starting_at_the_deadline_names_no_pair_of_halves():
    names = nodes(8)
    halves = isolate.bisect_plan({"r": [names]})[0]
    parts = [Job(6, isolate.BISECT, "r", tuple(h), "ok", kind=isolate.OK) for _, h in halves]
    parts[1].status, parts[1].kind = "hang", isolate.NOT_STARTED
    nxt, located = isolate.bisect_next({"r": [names]}, parts)
    assert nxt == {} and "still starting" in located[0]["why"] and "between the halves" not in located[0]["why"]


def test_the_views_count_a_job_not_started_apart_from_the_failed_ones():
    import io

    from rich.console import Console

    from nccldiag.report import html, isolate_report

    doc = {"backend": "gloo", "hosts": ["a", "b"], "rows": [{"name": "r"}], "nproc_per_node": 1,
           "rounds": [{"index": 1, "stage": "pairs", "elapsed_s": 46.0,
                       "jobs": [{"row": "r", "nodes": ["a", "b"], "status": "hang", "kind": isolate.NOT_STARTED,
                                 "elapsed": 46.0}]}],
           "nodes": [], "findings": []}
    buf = io.StringIO()
    isolate_report.render(doc, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "0 failed, 1 not started before the deadline" in text, text
    page = html._isolate_rounds(doc)
    assert 'class="skip">not-started<' in page, page


def test_a_round_is_released_in_time_for_its_ready_jobs_to_measure_on_a_loaded_machine():
    """The round's go file waits for jobs not yet ready a quarter of --timeout after the first was ready, but never
    past 60% of it after the launch once one is ready: on a busy machine whose ranks were first ready 68 s into a
    90 s round (as one CI run showed), the release is then, not at 90.5 s when the deadline cuts every job. The
    time left after it is more than the share under which a job whose ranks just entered is not judged."""
    from nccldiag.isolate import run as isolate_run
    from nccldiag.probe import progress

    assert not isolate_run.release_due(80.0, None, 90.0)  # nobody ready: nothing to release
    assert not isolate_run.release_due(20.0, 5.0, 90.0)  # the quiet machine: waits for the others
    assert isolate_run.release_due(28.0, 5.0, 90.0)  # a quarter of the timeout after the first was ready
    assert isolate_run.release_due(68.2, 68.0, 90.0)  # the loaded one: at once, past 60% of the timeout
    assert not isolate_run.release_due(53.0, 40.0, 90.0) and isolate_run.release_due(54.5, 40.0, 90.0)
    assert 1 - isolate_run.RELEASE_BY > progress.ENTERED_LATE_SHARE


def test_a_round_runs_its_rows_one_after_another_each_with_its_own_go_file():
    """Every job of a row at once; the next row's jobs start only once the row before has ended, and each row's
    ranks wait for a go file of their own."""
    from types import SimpleNamespace

    from nccldiag.isolate import run as isolate_run

    cl = isolate_run._Cluster.__new__(isolate_run._Cluster)
    cl.rows = [isolate.Row("net a", (), "a"), isolate.Row("net b", (), "b")]
    cl.prep = SimpleNamespace(run_id="r", rundir="/tmp/nccldiag-r")
    cl.opts = SimpleNamespace(rdzv_port=29400, nproc_per_node=1)
    cl.timeout, cl.counter = 90.0, 0
    events = []
    went = {0: threading.Event(), 1: threading.Event()}

    def run_job(job, on_record=None):
        events.append(("start", job.row, job.nodes))
        for rank in range(len(job.nodes)):
            on_record({"type": "progress", "phase": "ready", "rank": rank})
        assert went[[r.name for r in cl.rows].index(job.row)].wait(10), "no go for the row"  # the ranks wait for it
        events.append(("end", job.row, job.nodes))
        return job

    def release(index, row, names, attempt=0):
        events.append(("go", cl.go_file(index, row, attempt), tuple(names)))
        went[row].set()

    cl.run_job, cl.release = run_job, release
    cl.on_record = lambda rec: None
    groups = [("net a", ["n1", "n2"]), ("net b", ["n1", "n2"]), ("net a", ["n3", "n4"]), ("net b", ["n3", "n4"])]
    rnd = cl.run_round(1, isolate.PAIRS, groups, None)
    assert [j.row for j in rnd.jobs] == ["net a", "net b", "net a", "net b"]
    rows = [e[1] for e in events if e[0] != "go"]
    assert rows == ["net a"] * 4 + ["net b"] * 4, events  # no job of the second row before the first row ended
    gos = [e for e in events if e[0] == "go"]
    assert [g[1] for g in gos] == ["/tmp/nccldiag-r/go-1-0", "/tmp/nccldiag-r/go-1-1"]
    assert all(g[2] == ("n1", "n2", "n3", "n4") for g in gos)
    # each row's ranks are told their own row's go file
    cl.backend, cl.bounds = "gloo", SimpleNamespace(pg=45)
    cl.opts = SimpleNamespace(collective="all_reduce", size=1024, iters=None)
    assert cl.worker_args(1, 1)[cl.worker_args(1, 1).index("--go-file") + 1] == "/tmp/nccldiag-r/go-1-1"


def test_a_pair_whose_first_run_said_nothing_of_its_nodes_is_run_once_more_and_takes_that_outcome():
    """A loaded machine stretched one pair's start into its deadline (its ranks still starting), and another's so
    that its data moved for 3 s of its 45 (too little to measure a rate): each is run once more, with a go file, run
    id and rendezvous port of its own, and takes the second run's outcome; the first run is said in its evidence.
    A pair that failed, or that was measured, runs once; no job runs a third time."""
    from types import SimpleNamespace

    from nccldiag.isolate import run as isolate_run

    cl = isolate_run._Cluster.__new__(isolate_run._Cluster)
    cl.rows = [isolate.Row("net a", (), "a")]
    cl.prep = SimpleNamespace(run_id="r", rundir="/tmp/nccldiag-r")
    cl.opts = SimpleNamespace(rdzv_port=29400, nproc_per_node=1)
    cl.timeout, cl.counter = 45.0, 0
    runs, gos = [], []
    went = {0: threading.Event(), 1: threading.Event()}

    def run_job(job, on_record=None):
        runs.append((job.nodes, job.run_id, job.port, job.attempt))
        for rank in range(len(job.nodes)):
            on_record({"type": "progress", "phase": "ready", "rank": rank})
        assert went[job.attempt].wait(10), "no go for the row"  # the ranks wait for their go file
        first = job.attempt == 0
        if job.nodes == ("n1", "n2"):  # still starting when cut, then measured
            job.status, job.elapsed = ("hang", 45.2) if first else ("ok", 20.0)
            job.unfinished = isolate.NOT_STARTED if first else ""
        elif job.nodes == ("n3", "n4"):  # moving for 3 s only, then the same twice: stays unmeasured
            job.status, job.elapsed, job.unfinished = "hang", 45.2, isolate.SLOW
            job.progress, job.partial_busbw = [41.0, 42.0, 44.0], 0.0002
        elif job.nodes == ("n5", "n6"):  # a real hang: no data moved
            job.status, job.elapsed, job.unfinished = "hang", 45.2, isolate.HANG
        else:  # measured slow: moved for 30 s
            job.status, job.elapsed, job.unfinished = "hang", 45.2, isolate.SLOW
            job.progress, job.partial_busbw = [14.0, 30.0, 44.0], 0.0002
        return job

    def release(index, row, names, attempt=0):
        gos.append(cl.go_file(index, row, attempt))
        went[attempt].set()

    cl.run_job, cl.release = run_job, release
    cl.on_record = lambda rec: None
    groups = [("net a", ["n1", "n2"]), ("net a", ["n3", "n4"]), ("net a", ["n5", "n6"]), ("net a", ["n7", "n8"])]
    rnd = cl.run_round(2, isolate.PAIRS, groups, None)
    by = {j.nodes: j for j in rnd.jobs}
    assert len(rnd.jobs) == 4 and sorted(n for n, *_ in runs).count(("n1", "n2")) == 2
    assert [n for n, *_ in runs].count(("n3", "n4")) == 2  # once more, never a third time
    assert [n for n, *_ in runs].count(("n5", "n6")) == 1 and [n for n, *_ in runs].count(("n7", "n8")) == 1
    assert gos == ["/tmp/nccldiag-r/go-2-0", "/tmp/nccldiag-r/go-2-0-1"]
    again = [(rid, port) for n, rid, port, attempt in runs if attempt == 1]
    assert len({rid for rid, _ in again}) == 2 and all(p == 29400 + (2 + 50) % 100 for _, p in again)
    ok = by[("n1", "n2")]
    assert ok.status == "ok" and ok.attempt == 1 and ok.run_id in {rid for rid, _ in again}
    assert ok.evidence[-1].startswith("run again: its first run (r-1, 45 s) said nothing of its nodes: its ranks "
                                     "were still starting"), ok.evidence
    brief = by[("n3", "n4")]
    assert brief.attempt == 1 and "too little to measure its rate" in brief.evidence[-1]
    assert isolate.classify(brief, 0.002, None, 45.0) == isolate.UNMEASURED
    assert by[("n5", "n6")].attempt == 0 and by[("n7", "n8")].attempt == 0
    assert isolate.classify(by[("n7", "n8")], 0.002, None, 45.0) == isolate.SLOW

