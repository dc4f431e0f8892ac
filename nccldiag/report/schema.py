"""The published JSON Schemas of the report documents (shipped in ``nccldiag/report/schemas``)."""
from __future__ import annotations

import json
from importlib import resources
from typing import Any, Dict

FILES = {"nccldiag.check/1": "check-1.json", "nccldiag.probe/1": "probe-1.json", "nccldiag.log/1": "log-1.json",
         "nccldiag.isolate/1": "isolate-1.json"}


def load(schema: str) -> Dict[str, Any]:
    """The JSON Schema of the document version ``schema`` (e.g. ``nccldiag.probe/1``)."""
    try:
        name = FILES[schema]
    except KeyError:
        raise ValueError(f"no published schema for {schema!r}") from None
    return json.loads(resources.files("nccldiag.report").joinpath("schemas", name).read_text(encoding="utf-8"))
