/*
 * examples/httpd/httpd.c — a small HTTP/1.1 static-file server, written the
 * plain way: one thread per connection, blocking reads and writes.
 *
 *   httpd --port P --root DIR [--addr A] [--max-conns N] [--sendfile-min B]
 *
 * serves the regular files under DIR with GET and HEAD, keep-alive (also
 * pipelined requests), HTTP/1.0 clients included. Under swarm (the default
 * build) each connection is a swarm thread doing swarm_read / swarm_write /
 * swarm_pread: the code reads as if each connection had a kernel thread, and
 * the runtime parks the thread, not the worker, while it waits. The same
 * source built with -DHTTPD_NPTL (httpd-nptl) gives each connection a
 * kernel thread instead (rt.h).
 *
 * What it answers, and why:
 *  - 200 with the file (Content-Length, a Content-Type from the extension);
 *    a file of at most --sendfile-min bytes (default 16 KiB) is read with
 *    pread in 16 KiB pieces, the first sent with the header in one writev;
 *    a larger one goes by sendfile after the header (the kernel copies it
 *    from the page cache, as nginx's sendfile on).
 *  - 400 for a malformed request line or header (a header without a colon,
 *    whitespace before the colon, obsolete line folding, a bad
 *    Content-Length, an HTTP/1.1 request without exactly one Host, a bad
 *    percent escape or a NUL in the path), then the connection is closed:
 *    after a request we could not parse we cannot know where the next one
 *    starts.
 *  - 414 when the request line exceeds 4 KiB, 431 when the header section
 *    exceeds 8 KiB (both close), 505 for an HTTP major version other than 1.
 *  - 405 (with Allow: GET, HEAD) for any other method; 404 for what is not
 *    a regular file; 403 for a path with a ".." segment or one that leaves
 *    DIR through a symbolic link (openat2 RESOLVE_BENEATH where the kernel
 *    has it).
 *  - 503 and close when --max-conns connections (default 16384) are open:
 *    a thread per connection must bound the threads, as nginx bounds
 *    worker_connections.
 *  - A request with a body (Content-Length > 0 or Transfer-Encoding) is
 *    answered and the connection closed rather than the body parsed.
 *  - A connection idle for 60 s is closed (SO_RCVTIMEO, which swarm's calls
 *    honour as the kernel's do).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

enum {
  LINE_LIMIT = 4096,  /* request line: longer gets 414 */
  HEAD_LIMIT = 8192,  /* request line and headers: longer gets 431 */
  FILE_CHUNK = 16384, /* pread / write piece */
  IDLE_SECONDS = 60,
};

static int root_fd = -1;
static char *root_real; /* the root's canonical path, for the fallback check */
static int max_conns = 16384;
/* files larger than this go by sendfile (--sendfile-min) */
static long long sendfile_min = FILE_CHUNK;
static atomic_int open_conns;

/* ---- Responses --------------------------------------------------------- */

static const char *reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Error";
  }
}

static const char *content_type(const char *path) {
  static const char *const types[][2] = {
      {".html", "text/html"},     {".htm", "text/html"},
      {".txt", "text/plain"},     {".css", "text/css"},
      {".js", "text/javascript"}, {".json", "application/json"},
      {".png", "image/png"},      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},    {".gif", "image/gif"},
      {".svg", "image/svg+xml"},  {".ico", "image/x-icon"},
  };
  const char *dot = strrchr(path, '.');
  if (dot && !strchr(dot, '/')) {
    size_t len = strlen(dot);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
      if (strlen(types[i][0]) == len && strcasecmp(dot, types[i][0]) == 0)
        return types[i][1];
  }
  return "application/octet-stream";
}

/* The Date header, remade at most once a second per connection (no state
 * shared between connections). */
struct date_cache {
  time_t sec;
  char text[40];
};

static const char *http_date(struct date_cache *d) {
  time_t now = time(NULL);
  if (now != d->sec) {
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(d->text, sizeof d->text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    d->sec = now;
  }
  return d->text;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = rt_write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Appends n bytes at *p if they fit before end (they always do for the
 * heads below, which are bounded: the assert is the buffer's size). */
static char *put(char *p, const char *end, const char *s, size_t n) {
  if ((size_t)(end - p) < n)
    n = (size_t)(end - p);
  memcpy(p, s, n);
  return p + n;
}
#define PUT(p, end, lit) put(p, end, lit, sizeof lit - 1)

/* Formats the status line and headers into buf; returns their length.
 * Built by copying (snprintf cost ~2,500 instructions a request: callgrind,
 * docs/io.md). */
static size_t format_head(char *buf, size_t cap, struct date_cache *d,
                          int status, const char *type, long long length,
                          int keep, int http10) {
  char num[24], *q = num + sizeof num;
  unsigned long long v = (unsigned long long)length;
  do
    *--q = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  const char *why = reason(status);
  char *p = buf, *end = buf + cap;
  p = PUT(p, end, "HTTP/1.1 ");
  char code[3] = {(char)('0' + status / 100), (char)('0' + status / 10 % 10),
                  (char)('0' + status % 10)};
  p = put(p, end, code, 3);
  p = PUT(p, end, " ");
  p = put(p, end, why, strlen(why));
  p = PUT(p, end, "\r\nServer: swarm-httpd\r\nDate: ");
  const char *date = http_date(d);
  p = put(p, end, date, strlen(date));
  p = PUT(p, end, "\r\nContent-Type: ");
  p = put(p, end, type, strlen(type));
  p = PUT(p, end, "\r\nContent-Length: ");
  p = put(p, end, q, (size_t)(num + sizeof num - q));
  p = PUT(p, end, "\r\n");
  if (status == 405)
    p = PUT(p, end, "Allow: GET, HEAD\r\n");
  if (!keep)
    p = PUT(p, end, "Connection: close\r\n");
  else if (http10)
    p = PUT(p, end, "Connection: keep-alive\r\n");
  p = PUT(p, end, "\r\n");
  return (size_t)(p - buf);
}

/* An error page; returns 0 when the connection may go on. */
static int send_error(int fd, struct date_cache *d, int status, int keep,
                      int http10, int head_only) {
  char body[128], buf[512];
  int blen =
      snprintf(body, sizeof body, "<html><body><h1>%d %s</h1></body></html>\n",
               status, reason(status));
  size_t n =
      format_head(buf, sizeof buf, d, status, "text/html", blen, keep, http10);
  if (!head_only && n + (size_t)blen < sizeof buf) {
    memcpy(buf + n, body, (size_t)blen);
    n += (size_t)blen;
  }
  return write_all(fd, buf, n) == 0 && keep ? 0 : -1;
}

/* ---- Requests ---------------------------------------------------------- */

struct request {
  int http10;            /* HTTP/1.0 (keep-alive only when asked for) */
  int keep;              /* keep the connection after the response */
  int head_only;         /* HEAD */
  int status;            /* 0 while valid, else the error to answer */
  char path[LINE_LIMIT]; /* decoded, relative to the root, "" = root */
};

static int is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = (char)(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes the target's path into rq->path (leading slashes dropped, "/" at
 * the end meaning index.html); returns 0 or the status to answer. */
static int decode_target(struct request *rq, const char *t, size_t len) {
  if (len > 7 && strncasecmp(t, "http://", 7) == 0) { /* absolute-form */
    const char *slash = memchr(t + 7, '/', len - 7);
    if (!slash)
      return 400;
    len -= (size_t)(slash - t);
    t = slash;
  }
  if (len == 0 || t[0] != '/')
    return 400;
  size_t o = 0;
  for (size_t i = 0; i < len && t[i] != '?' && t[i] != '#'; i++) {
    char c = t[i];
    if (c == '%') {
      int hi = i + 2 < len ? hexval(t[i + 1]) : -1;
      int lo = hi >= 0 ? hexval(t[i + 2]) : -1;
      if (lo < 0)
        return 400;
      c = (char)(hi * 16 + lo);
      if (c == '\0')
        return 400;
      i += 2;
    }
    if (o == 0 && c == '/') /* relative to the root: no leading slash */
      continue;
    if (o + 11 >= sizeof rq->path) /* room for "index.html" */
      return 414;
    rq->path[o++] = c;
  }
  rq->path[o] = '\0';
  /* refuse any ".." segment, however it was spelt */
  for (char *s = rq->path; s; s = strchr(s, '/')) {
    while (*s == '/')
      s++;
    if (s[0] == '.' && s[1] == '.' && (s[2] == '/' || s[2] == '\0'))
      return 403;
  }
  if (o == 0 || rq->path[o - 1] == '/')
    strcpy(rq->path + o, "index.html");
  return 0;
}

/* Parses "METHOD SP target SP HTTP/x.y"; returns 0 or a status. */
static int parse_request_line(struct request *rq, char *line, size_t len) {
  if (len > LINE_LIMIT)
    return 414;
  size_t m = 0;
  while (m < len && is_tchar((unsigned char)line[m]))
    m++;
  if (m == 0 || m >= len || line[m] != ' ')
    return 400;
  char *target = line + m + 1;
  char *sp = memchr(target, ' ', len - m - 1);
  if (!sp || sp == target)
    return 400;
  size_t tlen = (size_t)(sp - target);
  for (size_t i = 0; i < tlen; i++)
    if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
      return 400;
  const char *v = sp + 1;
  size_t vlen = len - (size_t)(v - line);
  if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
      v[6] != '.' || v[7] < '0' || v[7] > '9')
    return 400;
  if (v[5] != '1')
    return 505;
  rq->http10 = v[7] == '0';
  rq->keep = !rq->http10;
  if (m == 4 && memcmp(line, "HEAD", 4) == 0)
    rq->head_only = 1;
  else if (!(m == 3 && memcmp(line, "GET", 3) == 0))
    return 405;
  return decode_target(rq, target, tlen);
}

static int has_token(const char *v, size_t len, const char *tok) {
  size_t tl = strlen(tok);
  for (size_t i = 0; i + tl <= len; i++)
    if (strncasecmp(v + i, tok, tl) == 0 &&
        (i == 0 || v[i - 1] == ' ' || v[i - 1] == ',') &&
        (i + tl == len || v[i + tl] == ',' || v[i + tl] == ' '))
      return 1;
  return 0;
}

/* One header line "name: value"; updates rq, returns 0 or a status. */
static int parse_header(struct request *rq, const char *line, size_t len,
                        int *hosts) {
  if (len > 0 && (line[0] == ' ' || line[0] == '\t'))
    return 400; /* obsolete line folding */
  size_t n = 0;
  while (n < len && is_tchar((unsigned char)line[n]))
    n++;
  if (n == 0 || n >= len || line[n] != ':')
    return 400;
  const char *v = line + n + 1;
  size_t vlen = len - n - 1;
  while (vlen > 0 && (*v == ' ' || *v == '\t'))
    v++, vlen--;
  while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
    vlen--;
  for (size_t i = 0; i < vlen; i++)
    if (((unsigned char)v[i] < ' ' && v[i] != '\t') || v[i] == 0x7f)
      return 400;
  if (n == 4 && strncasecmp(line, "Host", 4) == 0) {
    (*hosts)++;
  } else if (n == 10 && strncasecmp(line, "Connection", 10) == 0) {
    if (has_token(v, vlen, "close"))
      rq->keep = 0;
    else if (rq->http10 && has_token(v, vlen, "keep-alive"))
      rq->keep = 1;
  } else if (n == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
    if (vlen == 0 || vlen > 18)
      return 400;
    for (size_t i = 0; i < vlen; i++)
      if (v[i] < '0' || v[i] > '9')
        return 400;
    if (strspn(v, "0") < vlen)
      rq->keep = 0; /* a body we do not read: close after answering */
  } else if (n == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
    rq->keep = 0;
  }
  return 0;
}

/* Parses the head (request line and headers, CRLF or bare LF line ends,
 * ending with the empty line) into rq; rq->status is 0 or the error. */
static void parse_head(struct request *rq, char *head, size_t len) {
  memset(rq, 0, offsetof(struct request, path));
  int hosts = 0, first = 1;
  char *p = head, *end = head + len;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = (size_t)((nl ? nl : end) - p);
    if (l > 0 && p[l - 1] == '\r')
      l--;
    if (l == 0) /* the empty line ending the head */
      break;
    int st =
        first ? parse_request_line(rq, p, l) : parse_header(rq, p, l, &hosts);
    /* a 405/403/404-class answer still needs the headers read: keep the
     * first such status but go on checking the syntax */
    if (st == 400 || st == 505 || st == 414) {
      rq->status = st;
      rq->keep = 0;
      return;
    }
    if (st && !rq->status)
      rq->status = st;
    first = 0;
    p = nl ? nl + 1 : end;
  }
  if (!rq->http10 && hosts != 1) {
    rq->status = 400;
    rq->keep = 0;
  }
}

/* Reads until buf holds a whole head. Returns its length (the empty line
 * included), 0 when the peer closed or went idle before one, or -status
 * (414, 431) when it would not fit. Leading empty lines are dropped. */
static long read_head(int fd, char *buf, size_t *len) {
  size_t scanned = 0;
  for (;;) {
    size_t skip = 0;
    while (skip < *len && (buf[skip] == '\r' || buf[skip] == '\n'))
      skip++;
    if (skip) {
      memmove(buf, buf + skip, *len - skip);
      *len -= skip;
      scanned = 0;
    }
    for (size_t i = scanned >= 2 ? scanned - 2 : 0; i < *len; i++) {
      if (buf[i] != '\n')
        continue;
      size_t j = i + 1;
      if (j < *len && buf[j] == '\r')
        j++;
      if (j < *len && buf[j] == '\n')
        return (long)(j + 1);
    }
    scanned = *len;
    char *nl = memchr(buf, '\n', *len);
    if ((nl ? (size_t)(nl - buf) : *len) > LINE_LIMIT)
      return -414;
    if (*len == HEAD_LIMIT)
      return -431;
    ssize_t n = rt_read(fd, buf + *len, HEAD_LIMIT - *len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    *len += (size_t)n;
  }
}

/* ---- Files ------------------------------------------------------------- */

static int open_beneath(const char *path) {
  static atomic_int no_openat2;
  if (!atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS)
      return (int)fd;
    /* before Linux 5.6 (or under qemu-user): check where it led instead */
    atomic_store_explicit(&no_openat2, 1, memory_order_relaxed);
  }
  int fd = openat(root_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  char proc[64], real[PATH_MAX];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n = fd >= 0 ? readlink(proc, real, sizeof real - 1) : 0;
  size_t rl = strlen(root_real);
  if (fd >= 0 && (n <= (ssize_t)rl || memcmp(real, root_real, rl) != 0 ||
                  real[rl] != '/')) {
    close(fd);
    errno = EXDEV;
    return -1;
  }
  return fd;
}

/* The next piece to read: no more than the file has left (asking for more
 * costs a second read to learn the end of the file). */
static size_t piece(off_t size, off_t off) {
  return size - off < FILE_CHUNK ? (size_t)(size - off) : FILE_CHUNK;
}

/* A file larger than one piece: the head (MSG_MORE: it leaves with the
 * file's first bytes), then the file by sendfile, which the kernel copies
 * from the page cache to the socket without passing it through us. Returns
 * 1 when all of it went. */
static int send_large(int fd, int f, const char *head, size_t hl, off_t size) {
  while (hl > 0) {
    ssize_t w = rt_send(fd, head, hl, MSG_MORE | MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return 0;
    head += w;
    hl -= (size_t)w;
  }
  off_t off = 0;
  while (off < size) {
    ssize_t n = rt_sendfile(fd, f, &off, (size_t)(size - off));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) /* an error, or the file shrank: the length was promised */
      return 0;
  }
  return 1;
}

/* Answers a parsed GET/HEAD with the file; returns 0 to go on. */
static int send_file(int fd, struct date_cache *d, struct request *rq) {
  int f = open_beneath(rq->path);
  struct stat st;
  if (f < 0 || fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    if (f >= 0)
      close(f);
    int status = f >= 0 || e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG
                     ? 404
                 : e == EACCES || e == EXDEV || e == ELOOP || e == EPERM ? 403
                                                                         : 500;
    return send_error(fd, d, status, rq->keep, rq->http10, rq->head_only);
  }
  char head[512], chunk[FILE_CHUNK];
  size_t hl = format_head(head, sizeof head, d, 200, content_type(rq->path),
                          (long long)st.st_size, rq->keep, rq->http10);
  if (!rq->head_only && st.st_size > sendfile_min) {
    int ok = send_large(fd, f, head, hl, st.st_size);
    close(f);
    return ok && rq->keep ? 0 : -1;
  }
  off_t off = 0;
  ssize_t n = 0;
  if (!rq->head_only && st.st_size > 0)
    n = rt_pread(f, chunk, piece(st.st_size, 0), 0);
  int ok = n >= 0;
  if (ok) { /* the head and the first piece in one system call */
    struct iovec iov[2] = {{head, hl}, {chunk, (size_t)n}};
    ssize_t w = rt_writev(fd, iov, 2);
    ok = w == (ssize_t)(hl + (size_t)n);
    if (!ok && w >= 0 && (size_t)w >= hl)
      ok = write_all(fd, chunk + (w - hl), (size_t)n - (w - hl)) == 0;
    else if (!ok && w >= 0)
      ok = write_all(fd, head + w, hl - (size_t)w) == 0 &&
           write_all(fd, chunk, (size_t)n) == 0;
    off = n;
  }
  while (ok && !rq->head_only && off < st.st_size) {
    n = rt_pread(f, chunk, piece(st.st_size, off), off);
    ok = n > 0 && write_all(fd, chunk, (size_t)n) == 0;
    off += n;
  }
  close(f);
  /* a file that shrank under us broke the promised length: close */
  return ok && rq->keep ? 0 : -1;
}

/* ---- Connections ------------------------------------------------------- */

/* Closing with unread input makes the kernel send a reset, which may
 * destroy the response still on its way. Like nginx's lingering close: send
 * our FIN, then read and drop what the client still sends (at most 1 MiB or
 * until it stops for a second), then close. */
static void linger_close(int fd, char *sink, size_t cap) {
  struct timeval t = {.tv_sec = 1};
  shutdown(fd, SHUT_WR);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  rt_flags_changed(); /* the socket has been waited on: see rt.h */
  size_t total = 0;
  ssize_t n;
  while (total < (1u << 20) && (n = rt_read(fd, sink, cap)) > 0)
    total += (size_t)n;
}

static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[HEAD_LIMIT];
  size_t len = 0;
  struct date_cache date = {0};
  struct request rq;
  for (;;) {
    long h = read_head(fd, buf, &len);
    if (h == 0) /* the client closed, or went idle */
      break;
    if (h < 0) {
      send_error(fd, &date, (int)-h, 0, 0, 0);
      linger_close(fd, buf, sizeof buf);
      break;
    }
    parse_head(&rq, buf, (size_t)h);
    int r = rq.status ? send_error(fd, &date, rq.status, rq.keep, rq.http10,
                                   rq.head_only)
                      : send_file(fd, &date, &rq);
    if (r != 0) {
      linger_close(fd, buf, sizeof buf);
      break;
    }
    memmove(buf, buf + h, len - (size_t)h); /* pipelined requests */
    len -= (size_t)h;
  }
  rt_close(fd);
  atomic_fetch_sub_explicit(&open_conns, 1, memory_order_relaxed);
  return NULL;
}

/* Over the limit: a best-effort 503 that never waits, then close. */
static void refuse(int fd) {
  static const char msg[] =
      "HTTP/1.1 503 Service Unavailable\r\nServer: swarm-httpd\r\n"
      "Content-Length: 0\r\nConnection: close\r\n\r\n";
  if (send(fd, msg, sizeof msg - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
    /* nothing more to do for a client we turn away */
  }
  rt_close(fd);
}

/* TCP_NODELAY and the idle timeout (SO_RCVTIMEO) are set once on the
 * listener: Linux copies both into every accepted socket, which saves two
 * system calls per connection. The listener's own accept then wakes every
 * IDLE_SECONDS with EAGAIN, and simply accepts again. */
static void accept_loop(int ls) {
  for (;;) {
    int c = rt_accept(ls, NULL, NULL);
    if (c < 0) {
      if (errno == EMFILE || errno == ENFILE) /* let a connection end */
        rt_nap_ms(1);
      continue;
    }
    if (atomic_fetch_add_explicit(&open_conns, 1, memory_order_relaxed) >=
        max_conns) {
      atomic_fetch_sub_explicit(&open_conns, 1, memory_order_relaxed);
      refuse(c);
      continue;
    }
    if (rt_spawn(serve, (void *)(intptr_t)c) != 0) {
      atomic_fetch_sub_explicit(&open_conns, 1, memory_order_relaxed);
      refuse(c);
    }
  }
}

static int usage(const char *prog) {
  fprintf(stderr,
          "usage: %s --port P --root DIR [--addr IPv4] [--max-conns N]\n"
          "       [--sendfile-min BYTES]\n"
          "  P = 0 picks a free port; workers from SWARM_WORKERS\n",
          prog);
  return 2;
}

int main(int argc, char **argv) {
  const char *root = NULL, *addr = "0.0.0.0";
  long port = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    char *end;
    if (strcmp(argv[i], "--port") == 0)
      port = strtol(argv[i + 1], &end, 10);
    else if (strcmp(argv[i], "--root") == 0)
      root = argv[i + 1];
    else if (strcmp(argv[i], "--addr") == 0)
      addr = argv[i + 1];
    else if (strcmp(argv[i], "--max-conns") == 0)
      max_conns = (int)strtol(argv[i + 1], &end, 10);
    else if (strcmp(argv[i], "--sendfile-min") == 0)
      sendfile_min = strtoll(argv[i + 1], &end, 10);
    else
      return usage(argv[0]);
  }
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  if (argc % 2 == 0 || !root || port < 0 || port > 65535 || max_conns < 1 ||
      sendfile_min < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
    return usage(argv[0]);
  root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  root_real = realpath(root, NULL);
  if (root_fd < 0 || !root_real) {
    fprintf(stderr, "httpd: --root %s: %s\n", root, strerror(errno));
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  socklen_t slen = sizeof sa;
  struct timeval idle = {.tv_sec = IDLE_SECONDS};
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      setsockopt(ls, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) ||
      setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle) ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 4096) ||
      getsockname(ls, (struct sockaddr *)&sa, &slen)) {
    fprintf(stderr, "httpd: %s:%ld: %s\n", addr, port, strerror(errno));
    return 1;
  }
  int e = rt_start();
  if (e != 0) {
    fprintf(stderr, "httpd: starting the runtime: %s\n", strerror(e));
    return 1;
  }
  printf("httpd: listening on %s port %d (%s, %d workers)\n", addr,
         ntohs(sa.sin_port), rt_name(), rt_workers());
  fflush(stdout);
  accept_loop(ls);
}
