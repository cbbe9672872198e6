#!/usr/bin/env python3
"""examples/httpd/test_httpd.py SERVER — correctness of examples/httpd.

Starts SERVER (build/examples/httpd or httpd-nptl) on a free loopback port
over a fresh document root and checks, over raw sockets, every byte of every
response: status line, each header (Date by its format), body. Covers files
small and large (around the sendfile threshold, a slow reader, a file
truncated while sent), HEAD, keep-alive and pipelining, HTTP/1.0, 404, 405, path
traversal (403), malformed requests (400), 414, 431, 505, and the connection
limit (503). HTTPD_EMULATOR (a command, e.g. qemu-aarch64 -L ...) runs the
server under an emulator. Every socket operation has a timeout; the whole
test is bounded by CTest's.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 20.0
DATE = rb"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT"


def fail(msg):
    print("test_httpd: FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


class Server:
    def __init__(self, exe, root, *extra):
        cmd = os.environ.get("HTTPD_EMULATOR", "").split()
        cmd += [exe, "--addr", "127.0.0.1", "--port", "0", "--root", root]
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        m = re.search(r"port (\d+)", line)
        if not m:
            self.proc.kill()
            fail("server did not say its port: %r" % line)
        self.port = int(m.group(1))

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        s.settimeout(TIMEOUT)
        return s

    def stop(self):
        expect(self.proc.poll() is None, "server died (status %s)"
               % self.proc.returncode)
        self.proc.kill()
        self.proc.wait()


def read_response(s, buf, head_only=False):
    """Reads one response from s (leftover bytes in buf[0]); returns
    (status line, [header lines], body)."""
    while b"\r\n\r\n" not in buf[0]:
        d = s.recv(65536)
        expect(d, "connection closed inside a response head: %r" % buf[0])
        buf[0] += d
    head, rest = buf[0].split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    length = None
    for h in lines[1:]:
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":", 1)[1])
    expect(length is not None, "no Content-Length in %r" % head)
    if head_only:
        length = 0
    while len(rest) < length:
        d = s.recv(1 << 20)
        expect(d, "connection closed inside a body")
        rest += d
    buf[0] = rest[length:]
    return lines[0], lines[1:], rest[:length]


def check_head(lines, status, ctype, length, conn=None, allow=False):
    """The exact header block the server must send, in order."""
    want = [b"Server: swarm-httpd", None,
            b"Content-Type: " + ctype, b"Content-Length: %d" % length]
    if allow:
        want.append(b"Allow: GET, HEAD")
    if conn:
        want.append(b"Connection: " + conn)
    expect(len(lines) == len(want), "headers %r, wanted %r" % (lines, want))
    for got, w in zip(lines, want):
        if w is None:
            expect(re.fullmatch(b"Date: " + DATE, got), "bad Date %r" % got)
        else:
            expect(got == w, "header %r, wanted %r" % (got, w))


REASONS = {400: b"Bad Request", 403: b"Forbidden", 404: b"Not Found",
           405: b"Method Not Allowed", 414: b"URI Too Long",
           431: b"Request Header Fields Too Large",
           505: b"HTTP Version Not Supported"}


def error_body(status):
    return b"<html><body><h1>%d %s</h1></body></html>\n" % (status,
                                                            REASONS[status])


def expect_closed(s, buf):
    expect(buf[0] == b"", "bytes after a closing response: %r" % buf[0])
    expect(s.recv(1) == b"", "connection not closed")


def exchange(srv, raw, status, body=None, ctype=b"text/html", conn=None,
             head_only=False, allow=False, closes=False):
    """Sends raw on a new connection; checks one response byte by byte."""
    s = srv.connect()
    s.sendall(raw)
    buf = [b""]
    line, hdrs, got = read_response(s, buf, head_only)
    expect(line == b"HTTP/1.1 %d %s" % (status, REASONS.get(status, b"OK")),
           "status line %r for %r" % (line, raw[:80]))
    if body is None:
        body = error_body(status)
    check_head(hdrs, status, ctype, len(body), conn, allow)
    expect(got == (b"" if head_only else body), "body differs for %r" % raw[:80])
    if closes:
        expect_closed(s, buf)
    s.close()


def make_root(top):
    root = os.path.join(top, "www")
    os.makedirs(os.path.join(root, "sub"))
    files = {
        "small.txt": bytes(range(256)) * 4,  # 1 KiB, every byte value
        "big.bin": os.urandom((1 << 20) + 3),  # over many 16 KiB pieces
        "empty.html": b"",
        "index.html": b"<html>root</html>\n",
        "sub/index.html": b"<html>sub</html>\n",
        "sp ace.css": b"a { }\n",
    }
    for name, data in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    with open(os.path.join(top, "secret"), "wb") as f:
        f.write(b"not for you\n")
    os.symlink(os.path.join(top, "secret"), os.path.join(root, "escape"))
    return root, files


def test_files(srv, files):
    get = b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n"
    exchange(srv, get % b"/small.txt", 200, files["small.txt"], b"text/plain")
    exchange(srv, get % b"/big.bin", 200, files["big.bin"],
             b"application/octet-stream")
    exchange(srv, get % b"/empty.html", 200, b"", b"text/html")
    exchange(srv, get % b"/", 200, files["index.html"], b"text/html")
    exchange(srv, get % b"/sub/", 200, files["sub/index.html"], b"text/html")
    exchange(srv, get % b"/sp%20ace.css?x=1#f", 200, files["sp ace.css"],
             b"text/css")
    exchange(srv, get % b"http://t/small.txt", 200, files["small.txt"],
             b"text/plain")
    exchange(srv, b"HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n", 200,
             files["big.bin"], b"application/octet-stream", head_only=True)
    # bare LF line ends and leading empty lines are tolerated
    exchange(srv, b"\r\nGET /small.txt HTTP/1.1\nHost: t\n\n", 200,
             files["small.txt"], b"text/plain")
    exchange(srv, get % b"/nope", 404)
    exchange(srv, get % b"/sub", 404)  # a directory is not a file
    exchange(srv, b"POST /small.txt HTTP/1.1\r\nHost: t\r\n\r\n", 405,
             allow=True)
    exchange(srv, b"DELETE / HTTP/1.1\r\nHost: t\r\n\r\n", 405, allow=True)


def test_keepalive(srv, files):
    s = srv.connect()
    buf = [b""]
    # three requests in one segment (pipelined), then one more later
    s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n"
              b"HEAD /index.html HTTP/1.1\r\nHost: t\r\n\r\n"
              b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
    line, hdrs, body = read_response(s, buf)
    check_head(hdrs, 200, b"text/plain", 1024)
    expect(body == files["small.txt"], "pipelined body 1")
    line, hdrs, body = read_response(s, buf, head_only=True)
    check_head(hdrs, 200, b"text/html", len(files["index.html"]))
    line, hdrs, body = read_response(s, buf)
    expect(line == b"HTTP/1.1 404 Not Found", "pipelined 404: %r" % line)
    expect(body == error_body(404), "pipelined 404 body")
    for _ in range(20):  # a request split over many segments
        for piece in (b"GET /sm", b"all.txt HTT", b"P/1.1\r\nHo", b"st: t\r",
                      b"\n\r", b"\n"):
            s.sendall(piece)
        line, hdrs, body = read_response(s, buf)
        expect(body == files["small.txt"], "split request body")
    s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    line, hdrs, body = read_response(s, buf)
    check_head(hdrs, 200, b"text/plain", 1024, conn=b"close")
    expect_closed(s, buf)
    s.close()
    # HTTP/1.0: closes unless asked to keep alive; no Host needed
    exchange(srv, b"GET /small.txt HTTP/1.0\r\n\r\n", 200, files["small.txt"],
             b"text/plain", conn=b"close", closes=True)
    s = srv.connect()
    buf = [b""]
    for _ in range(2):
        s.sendall(b"GET /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        line, hdrs, body = read_response(s, buf)
        check_head(hdrs, 200, b"text/html", len(files["index.html"]),
                   conn=b"keep-alive")
    s.close()


def slow_connect(srv, rcvbuf=16384):
    """A connection whose receive buffer is small, so that the server's
    socket fills while the client does not read."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", srv.port))
    return s


def test_sendfile(srv, root, files):
    """Files above one 16 KiB piece go by sendfile: sizes around that
    threshold, several on one connection, a client that reads slowly while
    another is served, and a file truncated while it is sent."""
    sizes = [16383, 16384, 16385, 65537, 4 << 20]
    for n in sizes:
        data = os.urandom(n)
        files["s%d.bin" % n] = data
        with open(os.path.join(root, "s%d.bin" % n), "wb") as f:
            f.write(data)
    get = b"GET /s%d.bin HTTP/1.1\r\nHost: t\r\n\r\n"
    for n in sizes:
        exchange(srv, get % n, 200, files["s%d.bin" % n],
                 b"application/octet-stream")
    s = srv.connect()  # all of them pipelined on one connection, twice
    buf = [b""]
    s.sendall(b"".join(get % n for n in sizes + sizes))
    for n in sizes + sizes:
        line, hdrs, body = read_response(s, buf)
        check_head(hdrs, 200, b"application/octet-stream", n)
        expect(body == files["s%d.bin" % n], "pipelined body of %d" % n)
    s.close()
    # a slow reader: the server waits on its full socket while another
    # connection is answered
    slow = slow_connect(srv)
    slow.sendall(get % (4 << 20))
    time.sleep(0.2)
    exchange(srv, b"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n", 200,
             files["small.txt"], b"text/plain")
    buf = [b""]
    while b"\r\n\r\n" not in buf[0]:
        buf[0] += slow.recv(4096)
    head, body = buf[0].split(b"\r\n\r\n", 1)
    expect(head.startswith(b"HTTP/1.1 200 OK"), "slow reader: %r" % head)
    while len(body) < 4 << 20:
        d = slow.recv(8192)
        expect(d, "slow reader: closed after %d bytes" % len(body))
        body += d
        if len(body) % (512 << 10) < 8192:
            time.sleep(0.01)
    expect(body == files["s%d.bin" % (4 << 20)], "slow reader's body")
    slow.close()
    # truncated while sent: the promised length cannot be kept, so the
    # server closes; what came before the new end is the file's
    big = os.urandom(16 << 20)
    path = os.path.join(root, "shrinks.bin")
    with open(path, "wb") as f:
        f.write(big)
    slow = slow_connect(srv)
    slow.sendall(b"GET /shrinks.bin HTTP/1.1\r\nHost: t\r\n\r\n")
    got = b""
    while len(got) < 65536:
        d = slow.recv(65536)
        expect(d, "shrinking file: closed early")
        got += d
    os.truncate(path, 1 << 20)
    while True:
        d = slow.recv(1 << 20)
        if not d:
            break
        got += d
    head, body = got.split(b"\r\n\r\n", 1)
    expect(b"Content-Length: %d" % (16 << 20) in head, "shrinking head")
    expect(len(body) < 16 << 20, "a truncated file sent whole")
    expect(body[:min(len(body), 1 << 20)] == big[:min(len(body), 1 << 20)],
           "bytes before the truncation differ")
    slow.close()


def test_refused(srv):
    get = b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n"
    for path in (b"/../secret", b"/%2e%2e/secret", b"/sub/../../secret",
                 b"/sub/%2E%2E/%2e%2e/secret", b"/..", b"http://t/../secret"):
        exchange(srv, get % path, 403)
    exchange(srv, get % b"/escape", 403)  # a symlink out of the root
    exchange(srv, get % b"/sub/..", 403)  # ".." even when it stays inside


def test_malformed(srv):
    bad = [
        b"GARBAGE\r\n\r\n",
        b"GET /\r\n\r\n",  # HTTP/0.9
        b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET / HTTP/1.1 \r\nHost: t\r\n\r\n",
        b"GET / FOO/1.1\r\nHost: t\r\n\r\n",
        b"GET / HTTP/1.x\r\nHost: t\r\n\r\n",
        b"GET small.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /a\x01b HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /%zz HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /%4 HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /a%00b HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",  # no Host
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nNoColon\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n folded\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
        b"POST / HTTP/1.1\r\n\r\n",  # 400 (no Host) wins over 405
    ]
    for raw in bad:
        exchange(srv, raw, 400, conn=b"close", closes=True)
    exchange(srv, b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505, conn=b"close",
             closes=True)
    exchange(srv, b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
             414, conn=b"close", closes=True)
    exchange(srv, b"GET /" + b"a" * 9000, 414, conn=b"close", closes=True)
    exchange(srv, b"GET / HTTP/1.1\r\nHost: t\r\n" + b"X-A: b\r\n" * 2000
             + b"\r\n", 431, conn=b"close", closes=True)
    # a body we do not read: answered, then closed
    exchange(srv, b"GET /index.html HTTP/1.1\r\nHost: t\r\n"
             b"Content-Length: 3\r\n\r\nabc", 200,
             b"<html>root</html>\n", conn=b"close", closes=True)
    # a client that closes mid-request does not hurt the server
    s = srv.connect()
    s.sendall(b"GET /small.txt HTT")
    s.close()


def test_limit(exe, root):
    srv = Server(exe, root, "--max-conns", "2")
    try:
        held = []
        for _ in range(2):  # two connections, each proven accepted
            s = srv.connect()
            buf = [b""]
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
            read_response(s, buf)
            held.append(s)
        s = srv.connect()
        buf = [b""]
        data = b""
        while True:
            d = s.recv(4096)
            if not d:
                break
            data += d
        expect(data == b"HTTP/1.1 503 Service Unavailable\r\nServer: "
               b"swarm-httpd\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
               "over the limit: %r" % data)
        s.close()
        held.pop().close()  # one slot frees: served again
        for _ in range(200):
            s = srv.connect()
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
            data = s.recv(4096)
            s.close()
            if data.startswith(b"HTTP/1.1 200"):
                break
            time.sleep(0.05)
        expect(data.startswith(b"HTTP/1.1 200"), "slot never freed: %r" % data)
    finally:
        srv.stop()


def main():
    if len(sys.argv) != 2:
        fail("usage: test_httpd.py SERVER")
    exe = sys.argv[1]
    top = tempfile.mkdtemp(prefix="httpd-test-")
    try:
        root, files = make_root(top)
        srv = Server(exe, root)
        try:
            test_files(srv, files)
            test_keepalive(srv, files)
            test_sendfile(srv, root, files)
            test_refused(srv)
            test_malformed(srv)
        finally:
            srv.stop()
        # every file by sendfile, then none: both paths at every size
        for extra in (["--sendfile-min", "0"],
                      ["--sendfile-min", "1000000000"]):
            srv = Server(exe, root, *extra)
            try:
                test_files(srv, files)
                test_sendfile(srv, root, files)
            finally:
                srv.stop()
        test_limit(exe, root)
    finally:
        shutil.rmtree(top)
    print("test_httpd: passed (%s)" % os.path.basename(exe))


if __name__ == "__main__":
    main()
