"""Area stub: infiniband (to be implemented)."""
from nccldiag.findings import skip

NAME = "infiniband"
TITLE = "infiniband"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
