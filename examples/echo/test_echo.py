#!/usr/bin/env python3
"""examples/echo/test_echo.py SERVER — the echo example echoes: 64
connections at once each send 200 KiB of their own bytes in uneven pieces
and must get exactly those bytes back. HTTPD_EMULATOR runs the server under
an emulator. Bounded by socket timeouts and CTest's."""
import os
import re
import selectors
import socket
import subprocess
import sys


def main():
    cmd = os.environ.get("HTTPD_EMULATOR", "").split()
    proc = subprocess.Popen(cmd + [sys.argv[1], "--addr", "127.0.0.1",
                                   "--port", "0"], stdout=subprocess.PIPE)
    try:
        m = re.search(r"port (\d+)", proc.stdout.readline().decode())
        assert m, "no port printed"
        port = int(m.group(1))
        sel = selectors.DefaultSelector()
        conns = []
        for i in range(64):
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.setblocking(False)
            data = bytes((i * 7 + k * 13) % 256 for k in range(200 * 1024))
            st = {"sock": s, "out": data, "sent": 0, "got": bytearray(),
                  "want": data, "step": 1 + i * 997}
            conns.append(st)
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)
        left = len(conns)
        while left:
            events = sel.select(timeout=20)
            assert events, "no progress for 20 s"
            for key, ev in events:
                st = key.data
                if ev & selectors.EVENT_WRITE:
                    if st["sent"] < len(st["out"]):
                        end = min(len(st["out"]), st["sent"] + st["step"])
                        st["sent"] += st["sock"].send(st["out"][st["sent"]:end])
                    if st["sent"] == len(st["out"]):
                        sel.modify(st["sock"], selectors.EVENT_READ, st)
                if ev & selectors.EVENT_READ:
                    d = st["sock"].recv(65536)
                    assert d, "closed early"
                    st["got"] += d
                    if len(st["got"]) == len(st["want"]):
                        assert bytes(st["got"]) == st["want"], "bytes differ"
                        sel.unregister(st["sock"])
                        st["sock"].close()
                        left -= 1
        assert proc.poll() is None, "server died"
    finally:
        proc.kill()
        proc.wait()
    print("test_echo: passed")


if __name__ == "__main__":
    main()
