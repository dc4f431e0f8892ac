"""Area stub: python (to be implemented)."""
from nccldiag.findings import skip

NAME = "python"
TITLE = "python"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
