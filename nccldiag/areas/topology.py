"""Area stub: topology (to be implemented)."""
from nccldiag.findings import skip

NAME = "topology"
TITLE = "topology"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
