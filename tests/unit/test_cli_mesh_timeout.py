import pytest
from click.testing import CliRunner

from nccldiag.cli.check import check
from nccldiag.sessions import check as session_check


class _Seen(Exception):
    pass


def test_mesh_timeout_reaches_the_node_to_node_test(monkeypatch, tmp_path):
    """--mesh-timeout is each node-to-node connection's timeout: it reaches the collection's options (and so
    mesh.build_command and its bound); out of range it is a usage error naming the option."""
    seen = {}

    def live(self, target, opts, *args, **kw):
        seen["opts"] = opts
        raise _Seen()

    monkeypatch.setattr(session_check.CheckRun, "live", live)
    r = CliRunner().invoke(check, ["-w", "n1,n2", "--mesh-timeout", "9", "--run-dir", str(tmp_path / "run")])
    assert isinstance(r.exception, _Seen), r.output
    assert seen["opts"].mesh_timeout == 9 and seen["opts"].mesh == "first"
    r = CliRunner().invoke(check, ["-w", "n1,n2", "--run-dir", str(tmp_path / "run2")])
    assert seen["opts"].mesh_timeout == 5
    r = CliRunner().invoke(check, ["-w", "n1,n2", "--mesh-timeout", "0"])
    assert r.exit_code == 2 and "--mesh-timeout" in r.output
