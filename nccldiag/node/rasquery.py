"""Ask the NCCL RAS service on this node for the status of the job it serves (what ``ncclras -v`` prints).

Sent by ``probe.runner`` as ``python -c`` when a setting hangs, before its ranks are killed.
argv[1]: the RAS address (NCCL_RAS_ADDR form, host:port; localhost:28028 by default); argv[2]: the
seconds RAS may spend gathering the data of the job. Prints the report as RAS sends it; when RAS does not
answer, one line starting with "nccldiag-ras:" says why. Bounded: a connect timeout of 2 s and a
deadline of argv[2] + 5 s for the whole answer, at most 1 MiB of it.
"""
import socket, sys, time
addr = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else "localhost:28028"
wait = int(sys.argv[2]) if len(sys.argv) > 2 else 5
host, _, port = addr.rpartition(":")
host = host.strip("[]") or "localhost"
deadline = time.monotonic() + wait + 5
try:
    s = socket.create_connection((host, int(port)), timeout=2)
except (OSError, ValueError) as e:
    print("nccldiag-ras: no RAS service at %s: %s" % (addr, getattr(e, "strerror", None) or e))
    sys.exit(0)
got, size, done = [], 0, False
try:
    s.sendall(("TIMEOUT %d\nVERBOSE STATUS\n" % wait).encode())
    while size < 1 << 20:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        b = s.recv(65536)
        if not b:
            done = True
            break
        got.append(b)
        size += len(b)
except OSError:
    pass
s.close()
text = b"".join(got).decode("utf-8", "replace")
if text.startswith("OK\n"):
    text = text[3:]
sys.stdout.write(text)
if not done:
    print("\nnccldiag-ras: no complete answer from %s within %d s" % (addr, wait + 5))
