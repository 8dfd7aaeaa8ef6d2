#!/usr/bin/env python3
"""spec-md.py - render the virtio spec proposal to Markdown and list its statements.

usage: spec-md.py [--check STATEMENTS.tsv] SPEC.tex OUT.md
       spec-md.py --statements SPEC.tex

Reads SPEC.tex (docs/spec/rng-leak.tex), which uses the subset of the VIRTIO
specification's LaTeX that the entropy device section needs: \\section and below,
\\devicenormative / \\drivernormative / \\conformance, description / itemize /
enumerate lists, note, lstlisting, \\field, \\emph, \\ref.  Writes OUT.md, a
Markdown view of the same text for a browser, with an anchor per statement id.

Every paragraph of a normative block must be preceded by a line "%% id: ID" and
contain an RFC 2119 keyword (MUST, SHOULD, MAY, ...); ids are unique, D ids sit in
device blocks and R ids in driver blocks; descriptive text has no uppercase keyword.
A line "%% retired: ID REASON" records an id whose statement was withdrawn: no
statement may use it again, and statements.tsv may not list it.
--check writes nothing: it compares STATEMENTS.tsv with the text (the same ids, and
for each the same section and sentence) and OUT.md with what the text renders to.  --statements prints "id<TAB>section<TAB>sentence" for
every statement, to start or extend STATEMENTS.tsv.  Exits 1 on any error.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import tsv_rows  # noqa: E402

KEYWORD = re.compile(r"\b(MUST|SHOULD|MAY|SHALL|REQUIRED|RECOMMENDED|OPTIONAL)\b")
ID_LINE = re.compile(r"^%%\s*id:\s*(\S+)\s*$")
RETIRED_LINE = re.compile(r"^%%\s*retired:\s*(\S+)\s*(.*?)\s*$")
ID_FORM = re.compile(r"^RNG-LEAK-([DR])[1-9][0-9]*$")
HEADING = re.compile(r"^\\(section|subsection|subsubsection|paragraph)\{(.*?)\}"
                     r"(?:\\label\{(.*?)\})?\s*$")
NORMATIVE = re.compile(r"^\\(driver|device)normative\{\\(\w+)\}\{(.*?)\}\{(.*?)\}\s*$")
CONFORMANCE = re.compile(r"^\\conformance\{\\(\w+)\}\{(.*?)\}(?:\\label\{(.*?)\})?\s*$")
LEVEL = {"section": 1, "subsection": 2, "subsubsection": 3, "paragraph": 4}
LISTS = {"description", "itemize", "enumerate"}


def slug(label):
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def brace_arg(s, i):
    """s[i] == '{': return (content, index after the matching '}')."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif s[j] == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
    raise ValueError(f"unbalanced braces in: {s[i:i + 60]}")


class Spec:
    def __init__(self, path):
        self.path = path
        self.errors = []
        self.labels = {}          # label -> (title, anchor)
        self.blocks = []          # rendered Markdown pieces
        self.statements = []      # (id, section, plain sentence)
        self.retired = {}         # id -> reason

    def error(self, lineno, msg):
        self.errors.append(f"{self.path}:{lineno}: {msg}")

    # --- inline text -------------------------------------------------------------
    def inline(self, text, md=True):
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c == "\\":
                m = re.match(r"\\([A-Za-z]+)\s*", text[i:])
                if not m:                       # \_ \% \# \& \{ \} \\
                    nxt = text[i + 1:i + 2]
                    out.append("" if nxt == "\\" else nxt)
                    i += 2
                    continue
                cmd, j = m.group(1), i + m.end()
                if cmd in ("emph", "field", "textbf", "texttt", "ref", "footnote") \
                        and j < len(text) and text[j] == "{":
                    arg, j = brace_arg(text, j)
                    out.append(self.command(cmd, arg, md))
                    i = j
                    continue
                raise ValueError(f"unsupported command \\{cmd}")
            if text.startswith("---", i):
                out.append("\u2014"); i += 3; continue
            if text.startswith("--", i):
                out.append("\u2013"); i += 2; continue
            if text.startswith("``", i):
                out.append("\u201c"); i += 2; continue
            if text.startswith("''", i):
                out.append("\u201d"); i += 2; continue
            if c == "~":
                out.append(" "); i += 1; continue
            if c in "{}":
                i += 1; continue
            if md and c in "*<>`|":
                out.append("\\" + c); i += 1; continue
            out.append(c)
            i += 1
        return re.sub(r"\s+", " ", "".join(out)).strip()

    def command(self, cmd, arg, md):
        inner = self.inline(arg, md)
        if cmd in ("emph", "field"):
            return f"*{inner}*" if md else inner
        if cmd == "textbf":
            return f"**{inner}**" if md else inner
        if cmd == "texttt":
            return f"`{arg}`" if md else arg
        if cmd == "footnote":
            return f" ({inner})"
        # \ref: a label of this file links to its heading; others name the spec section
        kind, _, path = arg.partition(":")
        if arg in self.labels:
            title, anchor = self.labels[arg]
            return f"[{title}](#{anchor})" if md else title
        last = path.split(" / ")[-1]
        title = {"drivernormative": f"Driver Requirements: {last}",
                 "devicenormative": f"Device Requirements: {last}"}.get(kind, last)
        return f"\u201c{title}\u201d ({path})" if md else title

    # --- structure ---------------------------------------------------------------
    def parse(self):
        with open(self.path, encoding="utf-8") as f:
            raw = f.read().split("\n")
        lines = []                      # (lineno, text, pending id)
        pending = None
        for n, line in enumerate(raw, 1):
            m = RETIRED_LINE.match(line)
            if m:
                ident, reason = m.groups()
                if not ID_FORM.match(ident):
                    self.error(n, f"retired id {ident} is not of the form RNG-LEAK-D<n> "
                               "or RNG-LEAK-R<n>")
                if not reason:
                    self.error(n, f"retired id {ident} without a reason")
                if ident in self.retired:
                    self.error(n, f"id {ident} is retired twice")
                self.retired[ident] = reason
                continue
            m = ID_LINE.match(line)
            if m:
                if pending:
                    self.error(n, f"id {pending[0]} is not followed by a paragraph")
                pending = (m.group(1), n)
                continue
            if re.match(r"^\s*%", line):
                continue                # a comment line does not end a paragraph
            line = re.sub(r"(?<!\\)%.*$", "", line).rstrip()
            if pending and line.strip():
                lines.append((n, line, pending))
                pending = None
            else:
                lines.append((n, line, None))
        if pending:
            self.error(pending[1], f"id {pending[0]} is not followed by a paragraph")
        self.collect_labels(lines)
        self.walk(lines)

    def collect_labels(self, lines):
        for _, line, _ in lines:
            for rx, title_of, label_of in (
                    (HEADING, lambda m: m.group(2), lambda m: m.group(3)),
                    (NORMATIVE, lambda m: ("Driver" if m.group(1) == "driver" else "Device")
                     + " Requirements: " + m.group(3),
                     lambda m: f"{m.group(1)}normative:{m.group(4)}"),
                    (CONFORMANCE, lambda m: m.group(2), lambda m: m.group(3))):
                m = rx.match(line.strip())
                if m and label_of(m):
                    label = label_of(m)
                    self.labels[label] = (self.inline(title_of(m), False), slug(label))

    def walk(self, lines):
        block = None                    # ("device"|"driver"|"conformance"|None, title)
        para, para_start, para_id = [], 0, None
        env = []                        # stack of environment names
        items = []                      # current list items: [marker, text]
        listing = None
        note = []

        def flush():
            nonlocal para, para_id
            if not para:
                return
            text = " ".join(para)
            if env and env[-1] in LISTS:
                self.error(para_start, "text inside a list outside any \\item")
            elif env and env[-1] == "note":
                note.append(self.inline(text))
            else:
                self.paragraph(text, para_start, para_id, block)
            para, para_id = [], None

        for n, line, sid in lines:
            s = line.strip()
            if listing is not None:
                if s == "\\end{lstlisting}":
                    self.blocks.append("```c\n" + "\n".join(listing) + "\n```")
                    listing = None
                else:
                    listing.append(line)
                continue
            if not s:
                flush()
                continue
            m = HEADING.match(s) or NORMATIVE.match(s) or CONFORMANCE.match(s)
            if m:
                flush()
                if env:
                    self.error(n, f"heading inside \\begin{{{env[-1]}}}")
                if m.re is HEADING:
                    level, title, label = LEVEL[m.group(1)], m.group(2), m.group(3)
                    block = None
                elif m.re is NORMATIVE:
                    level = LEVEL[m.group(2)]
                    who = "Driver" if m.group(1) == "driver" else "Device"
                    title = f"{who} Requirements: {m.group(3)}"
                    label = f"{m.group(1)}normative:{m.group(4)}"
                    block = (m.group(1), self.inline(title, False))
                else:
                    level, title, label = LEVEL[m.group(1)], m.group(2), m.group(3)
                    block = ("conformance", title)
                anchor = f'<a id="{slug(label)}"></a>\n' if label else ""
                self.blocks.append(f"{anchor}{'#' * level} {self.inline(title)}")
                continue
            m = re.match(r"^\\begin\{(\w+)\}$", s)
            if m:
                flush()
                name = m.group(1)
                if name == "lstlisting":
                    listing = []
                elif name in LISTS or name == "note":
                    env.append(name)
                    if name in LISTS:
                        items.append([name, None])
                else:
                    self.error(n, f"unsupported environment {name}")
                continue
            m = re.match(r"^\\end\{(\w+)\}$", s)
            if m:
                flush()
                name = m.group(1)
                if not env or env[-1] != name:
                    self.error(n, f"\\end{{{name}}} does not close {env[-1] if env else 'anything'}")
                    continue
                env.pop()
                if name == "note":
                    body = "\n>\n".join("> " + p for p in note)
                    self.blocks.append(body.replace("> ", "> **Note:** ", 1))
                    note.clear()
                else:
                    self.render_list(items)
                continue
            m = re.match(r"^\\item(?:\[(.*?)\])?\s*(.*)$", s)
            if m and env and env[-1] in LISTS:
                items.append([m.group(1), m.group(2)])
                continue
            if items and env and env[-1] in LISTS and items[-1][1] is not None:
                items[-1][1] += " " + s
                continue
            if not para:
                para_start, para_id = n, sid
            elif sid:
                self.error(n, f"id {sid[0]} in the middle of a paragraph")
            para.append(s)
        flush()
        if env:
            self.error(len(lines), f"\\begin{{{env[-1]}}} is never closed")

    def render_list(self, items):
        start = max(i for i, it in enumerate(items) if it[1] is None)
        kind, body = items[start][0], items[start + 1:]
        del items[start:]
        out = []
        for k, (label, text) in enumerate(body, 1):
            text = self.inline(text)
            if kind == "description":
                out.append(f"- **{self.inline(label)}** {text}")
            elif kind == "enumerate":
                out.append(f"{k}. {text}")
            else:
                out.append(f"- {text}")
        self.blocks.append("\n".join(out))

    def paragraph(self, text, lineno, sid, block):
        has_keyword = KEYWORD.search(re.sub(r"\\\w+\{[^}]*\}", "", text))
        if block and block[0] in ("device", "driver"):
            if not sid:
                self.error(lineno, "normative paragraph without a '%% id:' line")
                self.blocks.append(self.inline(text))
                return
            ident = sid[0]
            m = ID_FORM.match(ident)
            if not m:
                self.error(sid[1], f"id {ident} is not of the form RNG-LEAK-D<n> or RNG-LEAK-R<n>")
            elif (m.group(1) == "D") != (block[0] == "device"):
                self.error(sid[1], f"id {ident} is in a {block[0]} block")
            if any(ident == s[0] for s in self.statements):
                self.error(sid[1], f"id {ident} is used twice")
            if ident in self.retired:
                self.error(sid[1], f"id {ident} is retired ({self.retired[ident]}): "
                           "a new statement takes the next free number")
            if not has_keyword:
                self.error(lineno, f"{ident} has no MUST, SHOULD or MAY")
            self.statements.append((ident, block[1], self.inline(text, False)))
            self.blocks.append(f'<a id="{ident}"></a>**[{ident}]** {self.inline(text)}')
            return
        if sid:
            self.error(sid[1], f"id {sid[0]} outside a normative block")
        if has_keyword and not (block and block[0] == "conformance"):
            self.error(lineno, f"uppercase {has_keyword.group(1)} outside a normative block")
        self.blocks.append(self.inline(text))

    def markdown(self):
        head = ("<!-- Generated from rng-leak.tex by scripts/spec-md.py: edit the .tex, "
                "not this file. -->\n\n"
                "> **Proposal.** This is the VIRTIO entropy device section with "
                "VIRTIO_RNG_F_LEAK as this tree implements it; it is not part of any "
                "OASIS VIRTIO specification. See [README.md](README.md) for its status "
                "and [statements.tsv](statements.tsv) for the numbered normative "
                "statements and their tests.")
        return head + "\n\n" + "\n\n".join(self.blocks) + "\n"


def read_tsv(path):
    return {cols[0]: (n, cols) for n, cols in tsv_rows(path)}


def check(spec, tsv_path):
    errors = []
    rows = read_tsv(tsv_path)
    norm = lambda s: re.sub(r"\s+", " ", s).strip()
    for ident, section, sentence in spec.statements:
        if ident not in rows:
            errors.append(f"{tsv_path}: {ident} ({section}) is missing")
            continue
        n, cols = rows.pop(ident)
        if len(cols) < 3:
            errors.append(f"{tsv_path}:{n}: {ident} has fewer than 3 columns")
            continue
        if norm(cols[1]) != section:
            errors.append(f"{tsv_path}:{n}: {ident} section is '{cols[1]}', the text says '{section}'")
        if norm(cols[2]) != sentence:
            errors.append(f"{tsv_path}:{n}: {ident} sentence differs from the text:\n"
                          f"    tsv:  {cols[2]}\n    text: {sentence}")
    for ident, (n, _) in rows.items():
        if ident in spec.retired:
            errors.append(f"{tsv_path}:{n}: {ident} is retired ({spec.retired[ident]})")
        else:
            errors.append(f"{tsv_path}:{n}: {ident} is not in {spec.path}")
    return errors


def main(argv):
    if len(argv) == 2 and argv[0] == "--statements":
        spec = Spec(argv[1])
        spec.parse()
        for s in spec.statements:
            print("\t".join(s))
        for e in spec.errors:
            print(e, file=sys.stderr)
        return 1 if spec.errors else 0
    tsv = None
    if len(argv) == 4 and argv[0] == "--check":
        tsv, argv = argv[1], argv[2:]
    if len(argv) != 2 or argv[0].startswith("-"):
        sys.exit(__doc__)
    spec = Spec(argv[0])
    spec.parse()
    errors = spec.errors + (check(spec, tsv) if tsv else [])
    if not spec.errors and tsv:
        # --check writes nothing: the committed Markdown must already be current.
        try:
            with open(argv[1], encoding="utf-8") as f:
                current = f.read() == spec.markdown()
        except OSError:
            current = False
        if not current:
            errors.append(f"{argv[1]} is not what {argv[0]} renders to: run "
                          f"'scripts/spec-md.py {argv[0]} {argv[1]}' and commit it")
    elif not spec.errors:
        with open(argv[1], "w", encoding="utf-8") as f:
            f.write(spec.markdown())
    for e in errors:
        print(e, file=sys.stderr)
    kinds = {k: sum(1 for s in spec.statements if f"-{k}" in s[0]) for k in "DR"}
    print(f"spec-md: {len(spec.statements)} statements ({kinds['D']} device, "
          f"{kinds['R']} driver), {len(spec.retired)} retired ids, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
