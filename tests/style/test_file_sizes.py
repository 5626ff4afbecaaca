#!/usr/bin/env python3
"""The size limits of issue 43 ("The Speaker in rooms"), checked on every unit run.

- no non-test source file over 900 lines;
- the Speaker (daemon/speaker.h, speaker.cc, speaker_reload.cc) at most 1,200 lines together;
- no function of 100 lines or more in a non-test source file.

A file is a test's when it is named *_test.cc or *_test_support.{h,cc}, or lives under tests/.
A function's length is counted from the first line of its declarator (a template line
included) to its closing brace, by matching braces outside comments, strings and character
literals: good enough for this codebase's clang-format style (a function body opens with a brace
after a `)` and its qualifiers; namespace, class, struct and enum bodies are scopes, not
functions; lambdas and local classes count towards the function that holds them).

Run with no argument from anywhere (VIPD_SOURCE_DIR names the tree; default: this file's
repository), or `--report` to print the largest files and the longest functions.
"""
import os
import re
import sys

MAX_FILE_LINES = 900
MAX_SPEAKER_LINES = 1200
MAX_FUNCTION_LINES = 99  # "no function of 100 lines or more"
SPEAKER = ("daemon/speaker.h", "daemon/speaker.cc", "daemon/speaker_reload.cc")
FOLDERS = ("bfd", "bgp", "bootstrap", "bytes", "cli", "config", "daemon", "doctor", "netlink",
           "policy")
SUFFIXES = (".h", ".cc", ".h.in", ".cc.in")


def is_test(path):
    name = os.path.basename(path)
    return (path.startswith("tests/") or re.search(r"_test\.(cc|h)$", name) is not None
            or re.search(r"_test_support\.(cc|h)$", name) is not None)


def sources(root):
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def strip_code(text):
    """The text with comments, string and character literals blanked (newlines kept), and
    preprocessor lines emptied, so braces and semicolons are only the code's."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and re.match(r'R"([^(\s]*)\(', text[i:i + 20]):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000'000) is no character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    # Preprocessor lines (and their continuations) hold no function body.
    cont = False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[k] = ""
    return lines


SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|\bextern\s*$")
FUNCTION_HEAD = re.compile(
    r"\)\s*((const|noexcept|override|final|mutable|volatile|&|&&)\s*|->\s*[\w:<>,\s*&]+)*$")


def _in_function(stack):
    return any(isinstance(s, tuple) for s in stack)


def check(root):
    problems = []
    sizes = {}
    longest = []
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        sizes[path] = text.count("\n")
        if is_test(path):
            continue
        if sizes[path] > MAX_FILE_LINES:
            problems.append(f"{path}: {sizes[path]} lines (at most {MAX_FILE_LINES} for a non-test "
                            "source file: split it along its concerns)")
        for first, last, head in functions(text):
            length = last - first + 1
            name = re.sub(r"\s+", " ", head.split("(")[0]).split(" ")[-1]
            longest.append((length, f"{path}:{first} {name}"))
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{path}:{first}: {name} is {length} lines (a function has fewer "
                                f"than {MAX_FUNCTION_LINES + 1})")
    speaker = sum(sizes.get(p, 0) for p in SPEAKER)
    if speaker > MAX_SPEAKER_LINES:
        problems.append(f"the Speaker ({', '.join(SPEAKER)}) is {speaker} lines (at most "
                        f"{MAX_SPEAKER_LINES}: a library is missing)")
    return problems, sizes, speaker, sorted(longest, reverse=True)


def functions(text):
    """(first line, last line, header) of each function body outside another function."""
    lines = strip_code(text)
    stack = []  # "scope" (namespace, class...), "other" (any other brace), a function's tuple
    header = []  # the code since the last statement's end
    header_line = None  # the header's first line
    found = []
    for number, line in enumerate(lines, start=1):
        for ch in line:
            in_function = _in_function(stack)
            if ch == "{":
                head = "".join(header).strip()
                if in_function:
                    stack.append("other")
                elif SCOPE.search(head) and "(" not in head.split("=")[0]:
                    stack.append("scope")
                    header, header_line = [], None
                elif FUNCTION_HEAD.search(head):
                    stack.append((number, header_line or number, head))
                    header, header_line = [], None
                else:
                    stack.append("other")  # an initializer in a declaration: it goes on
                    header.append("{")
                continue
            if ch == "}":
                top = stack.pop() if stack else "scope"
                if isinstance(top, tuple):
                    found.append((top[1], number, top[2]))
                    header, header_line = [], None
                elif top == "scope":
                    header, header_line = [], None
                elif not _in_function(stack):
                    header.append("}")
                continue
            if in_function:
                continue
            if ch == ";":
                header, header_line = [], None
                continue
            if not ch.isspace() and header_line is None:
                header_line = number
            header.append(ch)
        if not _in_function(stack) and header:
            header.append(" ")
    return found


def self_test():
    sample = "\n".join([
        "namespace a {",
        "struct S {",
        "  int f() const {",
        "    return 1;",
        "  }",
        "};",
        "template <typename T>",
        "S::S(int x)",
        "    : x_{x},",
        "      y_(\"{\") {",
        "  auto l = [] { return '}'; };",
        "}",
        "int v[] = {1, 2};",
        "}  // namespace a",
    ])
    got = [(first, last) for first, last, _ in functions(sample)]
    assert got == [(3, 5), (7, 12)], got


def main():
    self_test()
    root = os.environ.get("VIPD_SOURCE_DIR") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    problems, sizes, speaker, longest = check(root)
    if "--report" in sys.argv:
        print(f"the Speaker: {speaker} lines")
        for path, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:10]:
            print(f"{size:6} {path}{' (test)' if is_test(path) else ''}")
        for length, where in longest[:10]:
            print(f"{length:6} {where}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"ok: the Speaker {speaker} lines, no non-test file over {MAX_FILE_LINES}, the longest "
          f"function {longest[0][0] if longest else 0} lines ({longest[0][1] if longest else '-'})")


if __name__ == "__main__":
    main()
