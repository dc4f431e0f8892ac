"""A ProxyCommand for tests: relay stdin/stdout to HOST PORT (what ``nc HOST PORT`` does)."""
import os
import select
import socket
import sys


def main() -> None:
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
    sock.settimeout(None)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    watch = [stdin, sock]
    while True:
        r, _, _ = select.select(watch, [], [])
        if stdin in r:
            data = os.read(stdin, 65536)
            if data:
                sock.sendall(data)
            else:
                sock.shutdown(socket.SHUT_WR)
                watch.remove(stdin)
        if sock in r:
            data = sock.recv(65536)
            if not data:
                return
            os.write(stdout, data)


if __name__ == "__main__":
    main()
