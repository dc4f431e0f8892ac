"""Site specs: what a node should be, derived from known-good nodes and checked on every node.

``fields.py`` (the keys of a spec and how each is read from an area's facts),
``tomlfile.py`` (reading a spec with line numbers, and writing TOML text),
``model.py`` (a loaded, validated spec), ``derive.py`` (``nccldiag spec init``),
``compare.py`` (a node against the spec: findings) and ``policy.py`` (the
site's ``[severity]`` over every finding). All pure but the file reading.
"""
