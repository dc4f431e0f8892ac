"""Secrets taken out of any text nccldiag shows or writes: tokens, keys and passwords quoted from what a node,
a hostfile or a log said.

:func:`redact` is called by :func:`nccldiag.model.findings.clean_text`, through which every finding, every
diagnosis, every error message and every report document passes before it reaches the terminal or a file
(``report/finish.py``). The patterns follow gitleaks' rules (``config/gitleaks.toml``: aws-access-token,
github-pat and its kin, gitlab-pat, slack tokens, hugging face tokens, openai keys, google api keys,
private keys, jwt, basic and bearer authorization) and detect-secrets' keyword and URL plugins (a value
after ``password``, ``secret``, ``token``... and the password of ``scheme://user:password@host``). Each
begins with a literal word or is bounded in length, so that a search costs time linear in the text; the
value is replaced by :data:`MASK`, the words around it kept (the reader still sees what kind of secret was
there).
"""
from __future__ import annotations

import re

MASK = "[REDACTED]"

_TOKENS = re.compile("|".join((
    r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",  # AWS access key id
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,255}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{22,255}",
    r"\bglpat-[A-Za-z0-9_-]{20,255}",  # GitLab
    r"\bxox[abposr]-[A-Za-z0-9-]{10,255}",  # Slack
    r"\bhf_[A-Za-z0-9]{30,255}",  # Hugging Face
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,255}",  # OpenAI and the like
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
    r"\bnpm_[A-Za-z0-9]{36}",
    r"\beyJ[A-Za-z0-9_-]{8,1024}\.eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,1024}",  # JWT
    r"-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----",
)))
_TOKEN_WORDS = ("A3T", "AKIA", "ASIA", "ABIA", "ACCA", "_", "xox", "sk-", "AIza", "eyJ", "-----BEGIN")
# a word that names a secret, then its value: the word kept, the value masked
_KEYWORD = re.compile(r"(?i)(\b[a-z0-9_]{0,40}(?:password|passwd|passphrase|secret|token|api_?key|access_?key|"
                      r"private_?key|credentials?)[a-z0-9_]{0,40}\b[\"']?\s{0,5}[:=]\s{0,5}[\"']?)([^\s\"',;]{1,512})")
_KEY_WORDS = ("pass", "secret", "token", "key", "cred")
# docker's "auth": "base64", and HTTP basic and bearer authorization
_AUTH = re.compile(r"(?i)(\"auth\"\s{0,5}:\s{0,5}\"|\b(?:basic|bearer)\s{1,5})([A-Za-z0-9+/=._~-]{1,4096})")
_AUTH_WORDS = ('"auth"', "basic", "bearer")
# the password of scheme://user:password@host
_URL = re.compile(r"(://[^\s/:@'\"]{1,256}:)([^\s/@'\"]{1,256})(?=@)")
# an AWS secret access key alone: 40 characters of base64 with upper and lower case and a digit or / or +
_B64 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _b64(m: "re.Match[str]") -> str:
    s = m.group(0)
    mixed = any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() or c in "/+" for c in s)
    return MASK if mixed else s


# values that are no secret whatever word they follow: a setting's switch (sshd's 'PasswordAuthentication=no',
# 'token: none'), as detect-secrets' keyword plugin skips them
_NOT_SECRETS = frozenset(("yes", "no", "true", "false", "on", "off", "none", "null", "nil", "0", "1"))


def _kept(m: "re.Match[str]") -> str:
    if m.group(2).lower() in _NOT_SECRETS:
        return m.group(0)
    return m.group(1) + MASK


# Texts of up to MEMO_LEN characters already redacted, and what they became: a report repeats the same short texts
# (its keys, hosts, file names) hundreds of thousands of times. At most MEMO_MAX of them are kept.
MEMO_LEN = 256
MEMO_MAX = 16384
_memo: dict = {}


def redact(text: str) -> str:
    """``text`` with every secret it quotes replaced by :data:`MASK`; ``text`` itself when it quotes none.
    Each kind of secret is looked for only where its words occur (a substring search), then by its own
    expression, so that a text costs a few passes over it; a short text seen before is looked up."""
    done = _memo.get(text)
    if done is not None:
        return done
    done = _redact(text)
    if len(text) <= MEMO_LEN and len(_memo) < MEMO_MAX:
        _memo[text] = done
    return done


def _redact(text: str) -> str:
    low = text.lower()
    if any(w in text for w in _TOKEN_WORDS):
        text = _TOKENS.sub(MASK, text)
    if any(w in low for w in _KEY_WORDS):
        text = _KEYWORD.sub(_kept, text)
    if any(w in low for w in _AUTH_WORDS):
        text = _AUTH.sub(_kept, text)
    if "://" in text:
        text = _URL.sub(_kept, text)
    if len(text) >= 40:
        text = _B64.sub(_b64, text)
    return text
