#!/usr/bin/env python3
"""gen-man.py — man pages from the comments where swarm's API is declared.

The public headers (include/swarm.h, include/swarm/{io,dist,cio}.h) are the
one source of truth: each function's page is the comment written where it is
declared, so a page cannot drift from the header. What a page takes:
  - the comment block right above a declaration, shared by a run of
    declarations with no blank line between them (swarm_mutex_lock and
    swarm_mutex_trylock under one comment get one text, each its own page
    naming the other), plus a comment on the declaration's own line;
  - a run of declarations under no comment of its own (a list of one-line
    declarations with trailing comments) shares the nearest "---- Section"
    banner's comment, if any, as its description;
  - the synopsis: the header's #include line and the prototypes as written;
  - the text from "Returns" on becomes RETURN VALUE.
Each header's opening comment becomes an overview page in section 7 (swarm,
swarm-io, swarm-dist, swarm-cio) that every page of that header refers to.
A script's opening '#' comment (tools/swarmrun) becomes its section 1 page.

Usage:
  gen-man.py --out DIR [--version V] INCLUDE_DIR [SCRIPT...]
      writes DIR/man3/<function>.3, DIR/man7/<header>.7, DIR/man1/<script>.1
  gen-man.py --list INCLUDE_DIR
      prints every public function the headers declare, one a line
Needs only python3; the pages are plain man(7) roff that groff renders.
"""
import argparse
import os
import re
import sys

HEADERS = [
    ("swarm.h", "swarm"),
    ("swarm/io.h", "swarm-io"),
    ("swarm/dist.h", "swarm-dist"),
    ("swarm/cio.h", "swarm-cio"),
]
# swarm/io.h's calls named after a libc call have its semantics (the
# header's opening comment says so): their pages refer to it.
LIBC_CALLS = set("read write readv writev pread pwrite preadv pwritev fsync fdatasync "
                 "recv send recvfrom sendto recvmsg sendmsg accept accept4 connect poll "
                 "ppoll select epoll_wait close".split())
# swarm.h's threads and synchronisation mirror the pthread (and semaphore)
# calls of the same name: their pages name the counterpart.
POSIX_PREFIXES = ("mutex_", "cond_", "rwlock_", "barrier_", "key_", "once", "getspecific",
                  "setspecific", "attr_", "join", "detach", "self", "equal", "exit")


# ... except swarm's own attributes, which pthreads lacks.
NO_TWIN = {"attr_setinline", "attr_getinline"}


def posix_twin(name):
    x = name[len("swarm_"):]
    if x in NO_TWIN:
        return None
    if x.startswith("sem_"):
        return x
    if x.startswith(POSIX_PREFIXES):
        return "pthread_" + x
    return None


FUNC_RE = re.compile(r"\b(swarm_\w+)\s*\(")


class Decl:
    def __init__(self, name, proto, comment, trailing, section):
        self.name = name
        self.proto = proto
        self.comment = comment
        self.trailing = trailing
        self.section = section
        self.group = []


def comment_text(raw):
    """The text of a /* ... */ comment, without the stars, lines kept."""
    body = raw[2:-2]
    lines = []
    for line in body.split("\n"):
        line = re.sub(r"^\s*\* ?", "", line) if line.lstrip().startswith("*") else line.strip()
        lines.append(line.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def tokens(text):
    """Top-level items of a header: ('comment', text, line, own_line),
    ('decl', text, line, end_line), ('blank', line). Preprocessor lines are
    skipped; a declaration ends at ';' or at the '}' closing an inline
    function's body."""
    i, n, line = 0, len(text), 1
    out = []
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            if at_line_start:
                out.append(("blank", line))
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t":
            i += 1
            continue
        if text.startswith("/*", i):
            j = text.index("*/", i) + 2
            raw = text[i:j]
            out.append(("comment", comment_text(raw), line, at_line_start))
            line += raw.count("\n")
            i = j
            at_line_start = False
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "#" and at_line_start:
            j = i
            while True:  # continued preprocessor lines
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            line += text[i:k].count("\n")
            i = k
            at_line_start = False
            continue
        if text.startswith('extern "C"', i) or c == "}":
            # the C++ linkage wrapper and its closing brace
            j = text.find("\n", i)
            i = n if j < 0 else j
            at_line_start = False
            continue
        # a declaration
        start, depth, j = i, 0, i
        while j < n:
            if text.startswith("/*", j):
                j = text.index("*/", j) + 2
                continue
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0 and FUNC_RE.search(text[start:j]) and "=" not in text[start:j].split("(")[0]:
                    if not re.match(r"\s*(typedef|struct|union|enum)\b", text[start:j]):
                        j += 1
                        break
            elif ch == ";" and depth == 0:
                j += 1
                break
            j += 1
        decl = text[start:j]
        out.append(("decl", decl, line, line + decl.count("\n")))
        line += decl.count("\n")
        i = j
        at_line_start = False
        continue
    return out


def parse_header(path, include_name, overview):
    text = open(path, encoding="utf-8").read()
    toks = tokens(text)
    decls = []
    head = None
    section_comment = ""
    pending = ""  # the comment block that the next declaration run takes
    run = []  # declarations of the current run
    types = []  # type definitions under the run's comment
    prev_kind = None
    for idx, t in enumerate(toks):
        kind = t[0]
        if kind == "comment":
            body, own_line = t[1], t[3]
            if head is None:
                head = body
                prev_kind = "comment"
                continue
            if not own_line and decls and prev_kind == "decl" and decls[-1].trailing == "" and t[2] == decls[-1]._end:
                decls[-1].trailing = body
                continue
            if body.startswith("----") or body.startswith("-- "):
                title = body.strip("- \n")
                section_comment = title
                pending = ""
                run, types = [], []
            else:
                pending = body
                run, types = [], []
            prev_kind = "comment"
        elif kind == "blank":
            if prev_kind == "type":  # the calls may follow the type's blank line
                continue
            if prev_kind == "decl":
                run, types = [], []
                pending = ""
            prev_kind = "blank" if prev_kind != "comment" else "comment-blank"
            if prev_kind == "comment-blank":
                pending = ""  # a comment followed by a blank line is no doc
        elif kind == "decl":
            body = t[1]
            m = FUNC_RE.search(body.split("{")[0])
            prev_kind = "decl"
            if not m or re.match(r"\s*(typedef|struct|union|enum|#)", body):
                if pending and re.match(r"\s*typedef\s+struct", body):
                    # a comment over a type and the calls that use it
                    # (swarm_stats_t, swarm_stats_get): the type joins the
                    # synopsis of those calls
                    types.append(body.strip())
                    prev_kind = "type"
                    continue
                run = []
                types = []
                pending = ""
                continue
            name = m.group(1)
            if "(*" in body.split(name)[0] or body.strip().startswith("return"):
                continue
            proto = body.split("{")[0].strip().rstrip(";").strip()
            proto = re.sub(r"\bSWARM_NORETURN\s+", "", proto)
            if "{" in body:
                proto = proto  # an inline function: show its prototype
            d = Decl(name, re.sub(r"\s+", " ", proto) + ";", pending, "", section_comment)
            d._end = t[3]
            d.types = types
            d.header = include_name
            d.overview = overview
            if pending:  # one comment over a run of declarations: one text
                run.append(d)
            else:
                run, types = [d], []
                d.types = types
            for o in run:
                o.group = run
            decls.append(d)
    return head or "", decls


def roff_escape(s):
    s = s.replace("\\", "\\e")
    return "\n".join(("\\&" + l if l.startswith((".", "'")) else l) for l in s.split("\n"))


def roff_text(text):
    """Comment text as roff: paragraphs flow; indented lines stay as they are."""
    out = []
    paras = re.split(r"\n\s*\n", text.strip())
    for p in paras:
        lines = p.split("\n")
        out.append(".PP")
        block = []
        for l in lines:
            if re.match(r"^(\s{2,}|\s*[-*] )", l) or re.match(r"^\s*\S+=\S*\s{2,}", l):
                if block and block[0] != ".nf":
                    out.append(roff_escape(" ".join(block)))
                    block = [".nf"]
                elif not block:
                    block = [".nf"]
                block.append(roff_escape(l))
            else:
                if block and block[0] == ".nf":
                    out.extend(block + [".fi"])
                    block = []
                block.append(l.strip())
        if block and block[0] == ".nf":
            out.extend(block + [".fi"])
        elif block:
            out.append(roff_escape(" ".join(block)))
    return "\n".join(out)


def first_sentence(text, fallback):
    """The text up to the first '.', ';' or ':' outside parentheses."""
    t = " ".join(text.split())
    depth, end = 0, len(t)
    for i, ch in enumerate(t):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch in ".;:" and depth == 0 and (i + 1 == len(t) or t[i + 1] == " "):
            end = i
            break
    s = t[:end]
    if not s:
        return fallback
    return s[0].lower() + s[1:] if s[:2] != s[:2].upper() else s


def th(name, sec, version, title):
    return '.TH "%s" "%s" "" "swarm %s" "%s"\n' % (name.upper(), sec, version, title)


def function_page(d, version):
    if d.trailing:  # a one-line declaration documented on its own line
        d.comment, d.group = "", [d]
    text = "\n\n".join(x for x in (d.comment, d.trailing) if x) or d.section
    desc, ret = text, ""
    m = re.search(r"(^|(?<=[.\n] ))Returns\b|(?<=\n)Returns\b|(?<=\. )Returns\b", text)
    if m and m.start() > 0:
        desc, ret = text[: m.start()].rstrip(), text[m.start():]
    elif m:
        desc, ret = "", text
    summary = first_sentence(text, d.section or "swarm function")
    twin = posix_twin(d.name) if d.header == "swarm.h" else None
    if twin and re.match(r"(E[A-Z]+\b|As )", summary):
        summary = "%s(3) for swarm threads" % twin
    if d.header == "swarm/io.h" and d.name[6:] in LIBC_CALLS:
        summary = "%s(2) that blocks only the calling swarm thread" % d.name[6:]
    r = [th(d.name, "3", version, "swarm Library Functions")]
    r.append(".SH NAME\n%s \\- %s" % (d.name, roff_escape(summary)))
    r.append(".SH SYNOPSIS\n.nf\n.B #include <%s>\n.PP" % d.header)
    for ty in d.types:
        r.append(roff_escape(ty) + "\n")
    for o in d.group:
        r.append(roff_escape(o.proto))
    r.append(".fi\n.PP\nLink with \\fI\\-l%s\\fP (pkg-config: \\fIswarm\\fP)."
             % {"swarm.h": "swarm", "swarm/io.h": "swarm", "swarm/dist.h": "swarm\\-dist",
                "swarm/cio.h": "swarm\\-cio"}[d.header])
    r.append(".SH DESCRIPTION")
    if d.section:
        r.append(".PP\nPart of: %s." % roff_escape(d.section))
    libc = d.name[len("swarm_"):]
    if d.header == "swarm/io.h" and libc in LIBC_CALLS:
        r.append(".PP\nAs \\fB%s\\fP(2), with its return value and errno, except that where "
                 "%s would block the kernel thread it blocks only the calling swarm thread "
                 "(see \\fBswarm\\-io\\fP(7))." % (libc, libc))
    if desc:
        r.append(roff_text(desc))
    if len(d.group) > 1:
        r.append(".PP\nThis text describes each of: %s." % ", ".join(o.name for o in d.group))
    if ret:
        r.append(".SH RETURN VALUE\n" + roff_text(ret))
    see = [o.name + "(3)" for o in d.group if o is not d] + [d.overview + "(7)"]
    if d.header == "swarm/io.h" and libc in LIBC_CALLS:
        see.append(libc + "(2)")
    if twin:
        see.append(twin + "(3)")
    r.append(".SH SEE ALSO\n" + ", ".join("\\fB%s\\fP" % s.replace("(", "\\fR(") for s in see))
    r.append(".PP\nGenerated from the comments in <%s>." % d.header)
    return "\n".join(r) + "\n"


def overview_page(name, header, head, funcs, version):
    first, _, rest = head.partition("\n\n")
    summary = " ".join(first.split("\u2014", 1)[-1].split()).rstrip(".")
    r = [th(name, "7", version, "swarm Overview")]
    r.append(".SH NAME\n%s \\- %s" % (name, roff_escape(summary)))
    r.append(".SH SYNOPSIS\n.nf\n.B #include <%s>\n.fi" % header)
    r.append(".SH DESCRIPTION\n" + roff_text(rest))
    r.append(".SH FUNCTIONS\n" + ",\n".join("\\fB%s\\fP(3)" % f for f in funcs))
    r.append(".SH SEE ALSO\n\\fBswarmrun\\fP(1), \\fBswarm\\fP(7)")
    return "\n".join(r) + "\n"


def script_page(path, version):
    name = os.path.basename(path)
    lines = open(path, encoding="utf-8").read().split("\n")
    body = []
    for l in lines[1:]:
        if not l.startswith("#"):
            break
        body.append(l[2:] if l.startswith("# ") else l[1:])
    text = "\n".join(body)
    first, _, rest = text.partition("\n\n")
    summary = " ".join(first.split("\u2014", 1)[-1].split()).rstrip(".")
    paras = rest.strip("\n").split("\n\n")
    r = [th(name, "1", version, "swarm User Commands")]
    r.append(".SH NAME\n%s \\- %s" % (name, roff_escape(summary)))
    syn = [l.strip() for l in rest.split("\n") if l.strip().startswith(name + " ")]
    if syn:
        r.append(".SH SYNOPSIS\n.nf\n" + "\n".join(roff_escape(s) for s in syn) + "\n.fi")
    desc = "\n".join(l for l in rest.split("\n") if l.strip() not in syn)
    r.append(".SH DESCRIPTION\n" + roff_text(desc))
    r.append(".SH SEE ALSO\n\\fBswarm\\fP(7), \\fBswarm\\-trace\\fP --help")
    del paras
    return "\n".join(r) + "\n"


def collect(include_dir):
    pages = []
    for rel, overview in HEADERS:
        path = os.path.join(include_dir, rel)
        if not os.path.exists(path):
            continue
        head, decls = parse_header(path, rel, overview)
        pages.append((rel, overview, head, decls))
    return pages


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--version", default="")
    ap.add_argument("include_dir")
    ap.add_argument("scripts", nargs="*")
    a = ap.parse_args()
    pages = collect(a.include_dir)
    if a.list:
        for _, _, _, decls in pages:
            for d in decls:
                print(d.name)
        return 0
    if not a.out:
        ap.error("--out or --list")
    for sub in ("man1", "man3", "man7"):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
    n = 0
    for rel, overview, head, decls in pages:
        for d in decls:
            with open(os.path.join(a.out, "man3", d.name + ".3"), "w") as f:
                f.write(function_page(d, a.version))
            n += 1
        with open(os.path.join(a.out, "man7", overview + ".7"), "w") as f:
            f.write(overview_page(overview, rel, head, [d.name for d in decls], a.version))
    for s in a.scripts:
        with open(os.path.join(a.out, "man1", os.path.basename(s) + ".1"), "w") as f:
            f.write(script_page(s, a.version))
    print("gen-man: %d function pages, %d overviews, %d commands in %s"
          % (n, len(pages), len(a.scripts), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
