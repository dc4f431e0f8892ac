"""Area stub: pcie (to be implemented)."""
from nccldiag.findings import skip

NAME = "pcie"
TITLE = "pcie"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
