# The client side of python_http.sh and privoxy.sh: THREADS threads make
# REQUESTS GET requests in all to 127.0.0.1:PORT, each on a new connection,
# directly or through the HTTP proxy at 127.0.0.1:PROXY_PORT, and check
# every status and body. Prints "requests N failures F" and exits 1 on any
# failure.
# Usage: python_http_client.py PORT REQUESTS THREADS [PROXY_PORT]
import hashlib
import http.client
import sys
import threading

port, total, nthreads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
proxy = int(sys.argv[4]) if len(sys.argv) > 4 else 0


def body_for(n):
    return (hashlib.sha256(str(n).encode()).hexdigest() + "\n") * (1 + n % 7)


failures = []
lock = threading.Lock()


def run(k):
    for n in range(k, total, nthreads):
        try:
            if proxy:
                c = http.client.HTTPConnection("127.0.0.1", proxy, timeout=30)
                c.request("GET", "http://127.0.0.1:%d/%d" % (port, n))
            else:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", "/%d" % n)
            r = c.getresponse()
            got = r.read().decode()
            c.close()
            if r.status != 200 or got != body_for(n):
                raise ValueError("status %d, %d bytes" % (r.status, len(got)))
        except Exception as e:  # every failure is counted and shown
            with lock:
                failures.append("request %d: %r" % (n, e))


threads = [threading.Thread(target=run, args=(k,)) for k in range(nthreads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for f in failures[:10]:
    print(f)
print("requests %d failures %d" % (total, len(failures)))
sys.exit(1 if failures else 0)
