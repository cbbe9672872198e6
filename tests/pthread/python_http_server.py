# The server side of python_http.sh: Python's ThreadingHTTPServer (a thread
# per connection) on an ephemeral port, which it prints. GET /N answers a
# body computed from N; every request is logged on stderr, as the standard
# handler does (the write that raised a stale errno, issue 16). GET /quit
# stops it (so the process exits normally and swarm prints its stats).
import hashlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def body_for(n):
    return (hashlib.sha256(str(n).encode()).hexdigest() + "\n") * (1 + n % 7)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        if self.path == "/quit":
            self.send_response(200)
            self.end_headers()
            threading.Thread(target=self.server.shutdown).start()
            return
        try:
            n = int(self.path.lstrip("/"))
        except ValueError:
            self.send_error(404)
            return
        data = body_for(n).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
server.server_close()
