"""Secrets quoted by what a node, a hostfile or a log says never reach the terminal or a report file.

The secrets below are written for these tests (CONSTRUCTED): the AWS pair is AWS's own documentation example
(docs.aws.amazon.com, "Understanding and getting your AWS credentials"), the tokens have the shapes gitleaks'
rules describe (config/gitleaks.toml), with made-up characters.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag.model.findings import clean_text
from nccldiag.model.secrets import MASK, redact
from tests import real

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
DOCKER_AUTH = "Ym9iOlMzY3JldFBhc3N3b3Jk"  # base64 of bob:S3cretPassword
URL_PASSWORD = "S3cretPw"
SECRETS = (AWS_KEY_ID, AWS_SECRET, GITHUB, HF, SLACK, DOCKER_AUTH, URL_PASSWORD, "hunter2pass")
LINE = (f"Evil {AWS_KEY_ID} {AWS_SECRET} {GITHUB} {HF} {SLACK} "
        f'{{"auths":{{"reg.io":{{"auth":"{DOCKER_AUTH}"}}}}}} https://bob:{URL_PASSWORD}@github.com/x.git '
        "password=hunter2pass")


def shown(text: str) -> list:
    return [s for s in SECRETS if s in text]


def test_every_kind_of_secret_is_masked_and_the_words_around_it_kept():
    out = redact(LINE)
    assert not shown(out), out
    assert out.startswith("Evil ") and "https://bob:" + MASK + "@github.com/x.git" in out
    assert '"auth":"' + MASK in out and "password=" + MASK in out
    # the excerpts the adversarial pass found: a docker config, a secret key alone, a URL
    assert DOCKER_AUTH[:12] not in redact('expected a host name first, found \'{"auths":{"reg.io":{"auth":"'
                                           + DOCKER_AUTH[:12] + "...'")
    assert redact(f"host name '{AWS_SECRET}' is not a valid host name") == f"host name '{MASK}' is not a valid host name"
    assert clean_text({"k": [LINE, ("\x1b[2J" + GITHUB,)]}) == {"k": [out, (MASK,)]}


def test_text_without_secrets_is_left_as_it_is():
    """Every real fixture (node outputs, NCCL logs, cases) comes through whole: no false mask."""
    seen = 0
    real.require()
    for root in (real.ROOT,):
        for d, _, files in os.walk(root):
            for f in files:
                text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
                assert redact(text) == text, os.path.join(d, f)
                seen += 1
    assert seen > 100
    for word in ("git 3f786850e387550fdab836ed7e6dc881de23001b", "GPU-5f1b7a2e-62c4-7b4c-8f1e-0123456789ab",
                 "mlx5_0 port 1 ==> ib0 (Up)", "the key: memlock", "NCCL_IB_HCA=mlx5_0"):
        assert redact(word) == word
    # a setting's switch after a secret's word is no secret: the DeepSpeed launcher's ssh check, as posted
    case = Path(__file__).resolve().parents[1] / "cases" / \
        "node-deepspeed4907-launcher-ssh-check-passwordauthentication-exit-255" / "posted-deepspeed-launch.txt"
    line = next(ln for ln in case.read_text(encoding="utf-8").splitlines() if "PasswordAuthentication=no" in ln)
    assert redact(line) == line
    for word in ("token: none", "api_key=false", "PASSWORD=yes", "secret: 0"):
        assert redact(word) == word, word
    assert redact("password=nothing-to-see") == "password=" + MASK



def test_a_short_text_seen_before_is_masked_the_same_and_the_memo_stays_bounded(monkeypatch):
    from nccldiag.model import secrets

    monkeypatch.setattr(secrets, "_memo", {})
    monkeypatch.setattr(secrets, "MEMO_MAX", 3)
    texts = [LINE[:secrets.MEMO_LEN], "token=abcdefgh1234", "host", "pid", "NET/IB", LINE + LINE]
    first = [redact(t) for t in texts]
    assert first == [secrets._redact(t) for t in texts] == [redact(t) for t in texts]
    assert first[1] == "token=" + MASK
    assert list(secrets._memo) == texts[:3]  # the first three, each short enough; no more than MEMO_MAX

def run(args, cwd, env=None):
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "250", "PYTHONPATH": REPO, **(env or {})}
    return subprocess.run([sys.executable, "-m", "nccldiag", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def every_file(tmp_path, stem):
    return ["--json", tmp_path / f"{stem}.json", "--junit", tmp_path / f"{stem}.xml", "--prom",
            tmp_path / f"{stem}.prom", "--html", tmp_path / f"{stem}.html"]


def written(tmp_path, stem):
    return {ext: (tmp_path / f"{stem}.{ext}").read_text() for ext in ("json", "xml", "prom", "html")}


def test_no_output_format_of_a_check_quotes_a_secret(tmp_path):
    """A node whose PRETTY_NAME quotes every kind of secret: the table, -v, and every report file name the
    node's words, never the secrets."""
    node = tmp_path / "b" / "n1"
    node.mkdir(parents=True)
    (node / "hostname.txt").write_text("n1\n")
    (node / "os_release.txt").write_text(f'PRETTY_NAME="{LINE}"\nID=ubuntu\nVERSION_ID="22.04"\n')
    r = run(["check", "--bundle", tmp_path / "b", "--only", "system", "-v", "--run-dir", tmp_path / "run",
             *every_file(tmp_path, "c")], tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert "Evil" in r.stdout and not shown(r.stdout + r.stderr), r.stdout
    files = written(tmp_path, "c")
    files["report.json"] = (tmp_path / "run" / "report.json").read_text()
    assert "Evil" in files["json"]
    for name, text in files.items():
        assert not shown(text), (name, shown(text))
    r = run(["report", tmp_path / "run", "-v"], tmp_path)
    assert "Evil" in r.stdout and not shown(r.stdout)


def test_no_output_format_of_a_log_quotes_a_secret(tmp_path):
    """NCCL WARN lines that quote secrets (a failed connection to a URL with its password, an environment
    dump): the excerpts nccldiag log shows and writes mask them."""
    log = tmp_path / "job.log"
    log.write_text(
        "gpu01:1234:1300 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        f"gpu01:1234:1300 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43215> "
        f"failed : Connection refused ({LINE})\n"
        "gpu01:1234:1300 [0] NCCL INFO transport/net_socket.cc:339 -> 6\n")
    r = run(["log", log, "-v", *every_file(tmp_path, "l")], tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert "Evil" in r.stdout and not shown(r.stdout + r.stderr), r.stdout
    for name, text in written(tmp_path, "l").items():
        assert not shown(text), (name, shown(text))


@pytest.mark.parametrize("content", [
    '{"auths":{"reg.io":{"auth":"' + DOCKER_AUTH + '"}}}\n',
    AWS_SECRET + "\n",
    f"https://bob:{URL_PASSWORD}@github.com\n",
    "user:hunter2pass\n",
])
def test_a_hostfile_error_never_quotes_a_secret(tmp_path, content):
    hf = tmp_path / "hosts"
    hf.write_text(content)
    r = run(["check", hf, "--only", "system", "--connect-timeout", "1"], tmp_path)
    assert r.returncode == 2 and "hosts" in r.stderr, r.stderr
    assert not shown(r.stdout + r.stderr), r.stderr
