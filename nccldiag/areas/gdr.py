"""Area stub: gdr (to be implemented)."""
from nccldiag.findings import skip

NAME = "gdr"
TITLE = "gdr"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
