"""Runs that live outside the command line: each command's work end to end, its report returned.

``collection.py`` (the nodes collected, spread over worker processes or not, each saved as it arrives),
``check.py`` (one ``nccldiag check``: the nodes collected or read from a bundle, judged and kept in the run
directory as they arrive, the cluster judged, the diagnoses attached) and ``log.py`` (one ``nccldiag log``: the
files named, read through the prefilter, judged, diagnosed). The commands in :mod:`nccldiag.cli` parse options,
show progress, render the report and choose the exit code; probe and isolate have theirs in
:mod:`nccldiag.probe.session` and :mod:`nccldiag.isolate.run`.
"""
