"""Starting a command that a test interrupts as a terminal would (Ctrl-C)."""
import signal


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a child the test sends SIGINT or SIGHUP: a shell that starts the suite in the background
    (``cmd &`` without job control) leaves SIGINT ignored, ``nohup`` leaves SIGHUP ignored, and a Python child
    would then never see them (nccldiag keeps a signal ignored that it was started with, as nohup asks)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
