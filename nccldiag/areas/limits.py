"""Area stub: limits (to be implemented)."""
from nccldiag.findings import skip

NAME = "limits"
TITLE = "limits"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
