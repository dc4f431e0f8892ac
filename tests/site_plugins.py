"""A site's own module, written for the tests of the registries that take a dotted module path
(tests/unit/test_catalog.py): a rule module (ID, TITLE, FIX, diagnose), a launcher (LAUNCHER) and a report
format (render), as a site would keep them outside nccldiag."""
import sys

from nccldiag.diagnosis import clues as C
from nccldiag.probe import launchers

ID = "site.plugin"
TITLE = "The site's own rule"
FIX = "Whatever the site's runbook says"
LAUNCHER = launchers.get("local")


def diagnose(inp):
    found = C.find(inp, r"SITE-PLUGIN-MARK", ("warn", "error", "app"))
    if not found:
        return []
    return [C.make(sys.modules[__name__], "the site's rule saw its mark", found, confidence="low",
                   why="written for the tests")]


def render(doc) -> str:
    return f"site format of a {doc.get('schema')} report with {len(doc.get('diagnoses') or [])} diagnoses\n"
