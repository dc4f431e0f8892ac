"""Area stub: iommu (to be implemented)."""
from nccldiag.findings import skip

NAME = "iommu"
TITLE = "iommu"
SOURCES = ()


def parse(raw):
    return None


def judge(facts, node):
    return [skip(NAME, NAME + ".present", "not implemented")]
