"""The published JSON Schemas of the report documents (shipped in ``nccldiag/report/schemas``), and the check of
a document read back against its own."""
from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=None)
def _validator(schema: str):
    import jsonschema

    s = load(schema)
    return jsonschema.validators.validator_for(s)(s)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def check(doc: Any) -> None:
    """Raise ``ValueError`` naming the first place where ``doc`` is not what its own schema (its ``schema``
    field) says: a document read back from a file is rendered only when every field is of the type the renderers
    read. The message quotes no value of the document, only where it is and what it should be."""
    if not isinstance(doc, dict) or doc.get("schema") not in FILES:
        raise ValueError("not an nccldiag report (its 'schema' names none of "
                         f"{', '.join(FILES)})")
    error = next(iter(_validator(doc["schema"]).iter_errors(doc)), None)
    if error is None:
        return
    import jsonschema

    error = jsonschema.exceptions.best_match([error]) or error
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".") or "the top"
    rule, want = error.validator, error.validator_value
    if rule == "type":
        wanted = " or ".join(want) if isinstance(want, list) else want
        why = f"should be of type {wanted}, not {_kind(error.instance)}"
    elif rule in ("enum", "const"):
        choices = want if rule == "enum" else [want]
        why = "should be one of " + ", ".join(json.dumps(c) for c in choices[:12]) + (" ..." if len(choices) > 12
                                                                                     else "")
    elif rule == "required":
        missing = [k for k in want if isinstance(error.instance, dict) and k not in error.instance]
        why = f"lacks {', '.join(repr(k) for k in missing[:5]) or 'a field it must have'}"
    elif rule == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema.get("properties") or {}))
        extra = [k for k in error.instance if k not in known]
        why = f"has fields the schema does not know ({', '.join(repr(k[:40]) for k in extra[:5])})"
    else:
        why = f"breaks the schema's '{rule}' rule"
    raise ValueError(f"{where} {why}: not a document this nccldiag renders")
