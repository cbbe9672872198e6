#!/usr/bin/env python3
"""Checks the project's size rules (docs/design.md): no source file under
src/ over 900 lines, no function over 120 lines. (That the runtime binds to
no drop-in symbol is the test dropin_symbols, which needs a build.)

  tools/check_structure.py

A function's length counts from the line of its name to its closing brace.
The parser is a brace counter over the text with comments, strings and
preprocessor lines blanked: enough for this code base, which has no
function-like macros that open a brace at file scope. Exit status 1 and one
line per violation when a rule is broken."""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 120


def blank_noncode(text):
    """Comments, string and char literals and preprocessor lines become
    spaces (newlines kept, so line numbers stay)."""
    pattern = re.compile(
        r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
        r'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.S | re.M)
    return pattern.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)


def functions(path):
    """(name, first line, last line) of every function defined in path."""
    code = blank_noncode(path.read_text())
    depth, stmt_start, out = 0, 0, []
    open_at = None
    for i, ch in enumerate(code):
        if ch == '{':
            if depth == 0:
                head = code[stmt_start:i]
                m = re.search(r'(\w+)\s*\([^;{}]*\)[\s\w()]*$', head)
                if m and not re.search(r'=\s*$', head.strip()[-1:] or ''):
                    open_at = (m.group(1), stmt_start + m.start(1))
                else:
                    open_at = None
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth == 0:
                if open_at:
                    name, start = open_at
                    out.append((name, code.count('\n', 0, start) + 1,
                                code.count('\n', 0, i) + 1))
                open_at = None
                stmt_start = i + 1
        elif ch == ';' and depth == 0:
            stmt_start = i + 1
    return out


def check_sources(problems):
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix not in (".c", ".h", ".S", ".cc", ".cpp"):
            continue
        rel = path.relative_to(ROOT)
        n = path.read_text().count('\n')
        if n > MAX_FILE_LINES:
            problems.append(f"{rel}: {n} lines (at most {MAX_FILE_LINES})")
        if path.suffix in (".c", ".h"):
            for name, first, last in functions(path):
                if last - first + 1 > MAX_FUNCTION_LINES:
                    problems.append(f"{rel}:{first}: {name} is "
                                    f"{last - first + 1} lines (at most "
                                    f"{MAX_FUNCTION_LINES})")


def main():
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    problems = []
    check_sources(problems)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"structure: ok (src/ files <= {MAX_FILE_LINES} lines, functions "
          f"<= {MAX_FUNCTION_LINES} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
