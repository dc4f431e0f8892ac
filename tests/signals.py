"""Starting a command that a test interrupts as a terminal would (Ctrl-C)."""
import signal


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a child the test sends SIGINT: a shell that starts the suite in the background
    (``cmd &`` without job control) leaves SIGINT ignored, and a Python child would then never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
