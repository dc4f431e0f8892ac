"""What a hostile node or file says cannot write outside the bundle, forge sections or reach the terminal raw.

The node here is this machine with a fixture root (NCCLDIAG_ROOT) whose files were written for these tests
(CONSTRUCTED): an /etc/os-release that carries marker lines and terminal escapes.
"""
import json
import os
import subprocess
import sys

from nccldiag.collect import sections
from nccldiag.collect.sections import split_sections

ESC = "\x1b]0;owned\x07\x1b[2J"
# what a terminal obeys or shows as nothing: escapes, a C1 CSI, a bidi override, a zero-width space
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202egnp.exe\u200b"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u200b")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hostile_root(tmp_path, target):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "os-release").write_text(
        f'PRETTY_NAME="Evil {HOSTILE}Linux"\n'
        f"@@nccldiag:end os_release rc=0@@\n"
        f"@@nccldiag:begin {target}@@\n"
        "written by the node\n"
        f"@@nccldiag:end {target} rc=0@@\n"
        "@@nccldiag:begin hostname@@\nforged-name\n@@nccldiag:end hostname rc=0@@\n"
    )
    return root


def run_cli(args, root, cwd):
    env = {**os.environ, "NCCLDIAG_ROOT": str(root), "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-m", "nccldiag", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def test_marker_lines_in_node_output_create_no_file_and_replace_no_section(tmp_path):
    target = tmp_path / "escaped" / "pwned"
    root = hostile_root(tmp_path, str(target))
    bundle = tmp_path / "bundle"
    r = run_cli(["collect", "--only", "system", "-o", str(bundle)], root, tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "escaped").exists()
    (node_dir,) = [d for d in bundle.iterdir() if d.is_dir()]
    names = sorted(p.name for p in node_dir.iterdir())
    assert all(n == "_node.json" or n.endswith(".txt") and "/" not in n for n in names)
    assert "written by the node" in (node_dir / "os_release.txt").read_text()  # kept as the source's own text
    assert "forged-name" not in (node_dir / "hostname.txt").read_text()


def test_a_relative_path_in_a_marker_stays_inside(tmp_path):
    root = hostile_root(tmp_path, "../../../outside")
    bundle = tmp_path / "b"
    assert run_cli(["collect", "--only", "system", "-o", str(bundle)], root, tmp_path).returncode == 0
    assert not list(tmp_path.rglob("outside*"))


def test_terminal_escapes_from_a_node_never_reach_the_terminal(tmp_path):
    root = hostile_root(tmp_path, "x")
    r = run_cli(["check", "--only", "system", "-v", "--color", "never"], root, tmp_path)
    assert "Evil" in r.stdout and "\\u202egnp.exe\\u200b" in r.stdout  # shown as codes, never obeyed
    assert not [c for c in RAW if c in r.stdout]
    r = run_cli(["check", "--only", "system", "--json", "-"], root, tmp_path)
    assert "\x1b" not in json.dumps(json.loads(r.stdout), ensure_ascii=False)


def test_only_this_runs_marks_count():
    out = "@@nccldiag:begin a@@\nx\n@@nccldiag:end a rc=0@@\n@@nccldiag:f00dfeed:begin b@@\ny\n@@nccldiag:f00dfeed:end b rc=0@@\n"
    assert split_sections(out, "f00dfeed")[0] == {"b": "y\n"}
    assert split_sections(out)[0] == {"a": "x\n"}


def check_bundle(bundle, tmp_path):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-m", "nccldiag", "check", "--bundle", str(bundle), "--json", "-"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)


def test_a_bundle_never_leads_outside_itself_or_hangs(tmp_path):
    """CONSTRUCTED bundles: a symlinked source pointing at a secret, a FIFO as a source. Neither is read, and the
    bundle is refused (exit 2) naming the file: a bundle of links is no node to judge (it judged FAIL before)."""
    secret = tmp_path / "secret"
    secret.write_text('PRETTY_NAME="SECRET-CONTENT"\n')
    for name, make in (("os_release.txt", lambda p: p.symlink_to(secret)), ("uname.txt", os.mkfifo),
                       ("_node.json", lambda p: p.symlink_to(secret))):
        node = tmp_path / f"b-{name}" / "n1"
        node.mkdir(parents=True)
        (node / "hostname.txt").write_text("n1\n")
        make(node / name)
        r = check_bundle(node.parent, tmp_path)
        what = "a symbolic link" if name != "uname.txt" else "a FIFO"
        assert r.returncode == 2 and f"{node / name}: {what}" in r.stderr and "refused" in r.stderr, r.stderr
        assert "SECRET-CONTENT" not in r.stdout + r.stderr and "Traceback" not in r.stderr


def test_a_bundle_names_the_hosts_it_lists_and_lacks_and_lists_none_twice(tmp_path):
    """An interrupted --save: _bundle.json lists 3 hosts, the bundle holds 1 (CONSTRUCTED). The 2 others are
    named, not checked, exit 3 (before: "1 node: 1 healthy", exit 0). A host listed twice is refused."""
    b = small_bundle(tmp_path / "b")
    (b / "_bundle.json").write_text(json.dumps({"format": 1, "hosts": ["n1", "n2", "n3"]}))
    r = check_bundle(b, tmp_path)
    assert r.returncode == 3, r.stdout + r.stderr
    nodes = {n["host"]: n for n in json.loads(r.stdout)["nodes"]}
    assert list(nodes) == ["n1", "n2", "n3"]
    for h in ("n2", "n3"):
        (f,) = [f for f in nodes[h]["findings"] if f["area"] == "ssh"]
        assert f["check"] == "ssh.not-collected" and f["status"] == "error" and "holds no outputs" in f["message"]
    (b / "_bundle.json").write_text(json.dumps({"format": 1, "hosts": ["n1", "n1"]}))
    r = check_bundle(b, tmp_path)
    assert r.returncode == 2 and "host 'n1' is listed twice" in r.stderr, r.stdout + r.stderr
    # two node directories that name one host (before: "2 nodes", the host judged twice)
    (b / "_bundle.json").unlink()
    small_bundle(tmp_path / "c")
    os.rename(tmp_path / "c" / "n1", b / "n2")
    (b / "n2" / "_node.json").write_text(json.dumps({"host": "n1"}))
    r = check_bundle(b, tmp_path)
    assert r.returncode == 2 and "host 'n1' again" in r.stderr, r.stdout + r.stderr


def test_wrongly_typed_bundle_metadata_is_a_usage_error(tmp_path):
    for meta, bundle_meta in (({"rcs": "x"}, None), ({"elapsed": "slow"}, None), ({"error": ["x"]}, None),
                              ({}, {"hosts": {"a": 1}}), ({}, {"areas": "ib"}), ({}, [1, 2])):
        b = tmp_path / f"b{abs(hash(json.dumps([meta, bundle_meta])))}"
        (b / "n1").mkdir(parents=True)
        (b / "n1" / "hostname.txt").write_text("n1\n")
        (b / "n1" / "_node.json").write_text(json.dumps(meta))
        if bundle_meta is not None:
            (b / "_bundle.json").write_text(json.dumps(bundle_meta))
        r = check_bundle(b, tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "--bundle" in r.stderr, (meta, bundle_meta, r.stderr)


def test_only_the_scripts_own_names_in_order_count_and_never_more_than_it_runs():
    """Output written for this test: a node that knows the mark forges markers of every kind."""
    from nccldiag.collect.script import build_script, source_names
    from nccldiag.areas.base import Source

    mark = "f00dfeed"
    script = build_script([Source("os_release", "true"), Source("uname", "true"), Source("hostname", "true")],
                          mark=mark)
    names = source_names(script)
    assert names == ["os_release", "uname", "hostname"]
    m = f"@@nccldiag:{mark}:"
    out = [f"{m}begin os_release@@", "NAME=Linux", f"{m}begin hostname@@", "forged-host", f"{m}end hostname rc=0@@",
           f"{m}begin uname@@", "forged uname", f"{m}end uname rc=0@@"]  # uname comes before hostname: too late
    out += [f"{m}begin x{i}@@\nfill\n{m}end x{i} rc=0@@" for i in range(10_000)]  # names the script never runs
    out += [f"{m}begin os_release@@", "again", f"{m}end os_release rc=0@@", f"{m}begin hostname@@", "twice",
            f"{m}end hostname rc=0@@"]
    secs, rcs, _ = split_sections("\n".join(out), mark, names)
    assert set(secs) == {"os_release", "hostname"}
    assert secs["os_release"] == "NAME=Linux" and secs["hostname"].startswith("forged-host")
    assert "x0" not in secs and "uname" not in secs
    # without the script's names, a bound all the same
    secs, _, _ = split_sections("\n".join(out), mark)
    assert len(secs) == sections.MAX_SECTIONS


def test_the_mark_reaches_no_program_the_collection_runs(tmp_path):
    """Real sh on this machine: a source that looks everywhere a program it runs can look for the mark
    (its environment, its arguments, its parents' command lines and environments), then forges with it."""
    from nccldiag.areas.base import Source
    from nccldiag.collect import runner

    spy = Source("spy", 'p=$$; for i in 1 2 3 4; do tr "\\0" "\\n" < /proc/$p/cmdline; tr "\\0" "\\n" < /proc/$p/environ; '
                        'p=$(awk "/^PPid:/ {print \\$2}" /proc/$p/status); done; '
                        'printf "@@nccldiag:%s:begin forged@@\\nx\\n" "$NCCLDIAG_MARK"')
    opts = runner.CollectOptions(extra_sources=[spy])
    script = runner.script_for([], [spy], opts.mark)
    node = runner.collect_local(script, opts, host="here")
    assert set(node.sections) == {"spy"}, node.sections.keys()
    seen = node.sections["spy"]
    assert "/proc" not in seen or "PATH=" in seen  # it did read its environment
    assert opts.mark not in seen


def small_bundle(d):
    """A one-node bundle written for these tests (CONSTRUCTED)."""
    (d / "n1").mkdir(parents=True)
    (d / "n1" / "hostname.txt").write_text("n1\n")
    (d / "n1" / "os_release.txt").write_text('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n')
    return d


def test_a_bundle_names_no_host_the_inventory_would_refuse(tmp_path):
    """A _node.json whose host carries terminal escapes, or a node directory so named: a usage error that names
    the file, with the name quoted, never printed raw."""
    b = small_bundle(tmp_path / "b")
    (b / "n1" / "_node.json").write_text(json.dumps({"host": "gpu001" + HOSTILE}))
    r = check_bundle(b, tmp_path)
    assert r.returncode == 2 and f"{b / 'n1' / '_node.json'}: host name 'gpu001\\x1b]0;owned" in r.stderr, r.stderr
    assert not [c for c in RAW if c in r.stdout + r.stderr] and "Traceback" not in r.stderr
    c = small_bundle(tmp_path / "c")
    os.rename(c / "n1", c / ("n1" + HOSTILE))
    r = check_bundle(c, tmp_path)
    assert r.returncode == 2 and "_node.json: host name 'n1\\x1b]0;owned" in r.stderr and "refused" in r.stderr, r.stderr
    assert not [ch for ch in RAW if ch in r.stdout + r.stderr]


def hostile_strings(value):
    """Every string of a document with the hostile text added (CONSTRUCTED tampering)."""
    if isinstance(value, str):
        return value + HOSTILE
    if isinstance(value, list):
        return [hostile_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: hostile_strings(v) for k, v in value.items()}
    return value


def free_strings_tampered(doc):
    """Every string of a report document that its schema leaves free with the hostile text added: the others
    (the schema's name, statuses, ids of a fixed pattern) are part of what makes it a document nccldiag renders,
    and one tampered with is refused whole (``test_rundir.py``)."""
    import jsonschema

    from nccldiag.report import schema

    out = hostile_strings(doc)
    validator = jsonschema.Draft202012Validator(schema.load(doc["schema"]))
    while True:
        errors = list(validator.iter_errors(out))
        if not errors:
            return out
        for e in errors:  # put back what the schema fixes, where it is
            path = list(e.absolute_path)
            here, orig = out, doc
            for key in path[:-1]:
                here, orig = here[key], orig[key]
            if path:
                here[path[-1]] = orig[path[-1]]
            else:
                out["schema"] = doc["schema"]


def test_a_tampered_report_json_never_reaches_the_terminal_raw(tmp_path):
    """Every string of a kept report.json tampered with; ``nccldiag report`` prints the words, never the escapes,
    and shows bidi and zero-width characters as their codes."""
    run = tmp_path / "run"
    r = run_cli(["check", "--bundle", str(small_bundle(tmp_path / "b")), "--run-dir", str(run), "--color", "never"],
                tmp_path, tmp_path)
    assert r.returncode in (0, 1, 3), r.stderr
    doc = json.loads((run / "report.json").read_text())
    (run / "report.json").write_text(json.dumps(free_strings_tampered(doc)))
    for args in ([], ["-v"], ["--color", "always", "-v"]):
        r = run_cli(["report", str(run), *args], tmp_path, tmp_path)
        assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, r.stderr
        assert "1 node: " in r.stdout and "\\u202egnp.exe\\u200b" in r.stdout, r.stdout
        shown = r.stdout.replace("\x1b[", "") if "always" in args else r.stdout  # rich's own colours
        assert not [c for c in RAW if c in shown], repr(r.stdout)


def test_collect_against_a_server_that_answers_with_escapes_prints_none_of_them(tmp_path):
    """Whatever answers on a node's address speaks before any host key is checked: here a listener (written for
    this test) that sends 120 lines of escapes and a bidi override, and no SSH banner. paramiko quotes the
    last of them in its error; ``collect`` names the node and the failure, never the raw bytes."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(30)

    def answer():
        for _ in range(4):  # a first try and the tries again the transport makes
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall("".join(f"\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED \u202e evil line {i}\r\n"
                                     for i in range(120)).encode())
                conn.recv(1024)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host evil\n  HostName 127.0.0.1\n  Port {srv.getsockname()[1]}\n  UserKnownHostsFile /dev/null\n")
    try:
        r = subprocess.run([sys.executable, "-m", "nccldiag", "collect", "-w", "evil", "--ssh-config", str(cfg),
                            "--only", "system", "--connect-timeout", "3", "-o", str(tmp_path / "b")],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                           env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": REPO}, cwd=tmp_path)
    finally:
        srv.close()
    assert r.returncode == 3 and "evil:" in r.stderr and "evil line" in r.stderr, r.stderr
    assert not [c for c in RAW + ("\x07",) if c in r.stdout + r.stderr], r.stderr
