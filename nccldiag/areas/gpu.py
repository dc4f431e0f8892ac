"""Area stub: gpu (to be implemented)."""
from nccldiag.findings import skip

NAME = "gpu"
TITLE = "gpu"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
