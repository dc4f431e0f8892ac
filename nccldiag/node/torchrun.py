"""torchrun (``torch.distributed.run``) run as its own ``__main__``, then its process ended at once.

    python -m nccldiag.node.torchrun <torchrun's arguments>

The arguments, the output and the exit status are torchrun's own: a failure
prints what the interpreter prints for it (torchrun's root-cause block
included) and exits 1, ``sys.exit(n)`` exits ``n``. What is left out is the
interpreter's teardown once torchrun has returned: with torch loaded it
takes half a second to a second of CPU on every node after the ranks are
gone, and tells nothing. torchrun registers no exit handler on the static
rendezvous the probe uses, and its log records are flushed as written.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback


def exit_status(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``: None is 0, an int itself, anything else printed, 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main() -> None:
    status = 0
    try:
        runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        status = exit_status(exc.code)
    except BaseException:  # noqa: BLE001 - printed as the interpreter would, then exit 1
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    main()
