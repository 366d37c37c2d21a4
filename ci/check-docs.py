#!/usr/bin/env python3
"""The documents stay true to the tree and to the binary.

1. Every relative link in every tracked Markdown file leads to a file that exists, and
   its `#anchor`, if any, to a heading of that file (GitHub's rule for heading anchors).
2. Every `seekless` command the README shows in a code block names a subcommand the
   binary has, and each long option it passes is one that subcommand's `--help` lists.

    python3 ci/check-docs.py target/debug/seekless

Exit status 0 when all hold; otherwise each failure is printed, one per line, and 1.
"""

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def tracked_markdown():
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [p for p in out.splitlines() if p]


def prose_lines(text):
    """The lines of `text` outside fenced code blocks, with inline code taken out."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            inside = not inside
            continue
        if not inside:
            yield n, re.sub(r"`[^`]*`", "", line)


def anchors(path):
    """GitHub's anchors for the headings of the Markdown file at `path`."""
    seen = {}
    out = set()
    for _, line in prose_lines(open(path, encoding="utf-8").read()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        # The heading's text as rendered: links and emphasis reduced to their words.
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check_links(failures):
    cache = {}
    for md in tracked_markdown():
        here = os.path.dirname(os.path.join(ROOT, md))
        text = open(os.path.join(ROOT, md), encoding="utf-8").read()
        # Inline code is taken out before links are looked for: `[x](y)` in code is code.
        for n, line in prose_lines(text):
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(here, path)) if path else os.path.join(ROOT, md)
                if not os.path.exists(full):
                    failures.append(f"{md}:{n}: {target}: no such file")
                    continue
                if anchor and full.endswith(".md"):
                    if full not in cache:
                        cache[full] = anchors(full)
                    if anchor not in cache[full]:
                        failures.append(f"{md}:{n}: {target}: no heading #{anchor} there")


def readme_commands():
    """(line number, argv after `seekless`) of each seekless command the README shows, in a
    code block or as inline code."""
    inside = False
    for n, line in enumerate(open(os.path.join(ROOT, "README.md"), encoding="utf-8"), 1):
        if FENCE.match(line.lstrip()):
            inside = not inside
            continue
        shown = [line.strip()] if inside else re.findall(r"`([^`]+)`", line)
        for code in shown:
            yield from commands_in(n, code)


def commands_in(n, code):
    """The seekless commands in one line of shell: (n, argv after `seekless`)."""
    for part in re.split(r"\s*(?:;|&&|\|\||\||>)\s*", code):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            continue
        while words and words[0] in ("sudo", "time", "env"):
            words = words[1:]
        if words[:4] == ["cargo", "run", "--release", "--"]:
            yield n, words[4:]
        elif words and os.path.basename(words[0]) == "seekless":
            yield n, words[1:]


def check_commands(binary, failures):
    helps = {}
    for n, argv in readme_commands():
        if not argv or argv[0].startswith("-"):
            continue
        sub = argv[0]
        if sub not in helps:
            r = subprocess.run([binary, sub, "--help"], capture_output=True, text=True)
            helps[sub] = r.stdout if r.returncode == 0 else None
        if helps[sub] is None:
            failures.append(f"README.md:{n}: seekless {sub}: no such subcommand")
            continue
        for word in argv[1:]:
            if word.startswith("--") and len(word) > 2:
                option = word.split("=", 1)[0]
                if not re.search(re.escape(option) + r"\b", helps[sub]):
                    failures.append(f"README.md:{n}: seekless {sub} {option}: not an option of it")


def main():
    if len(sys.argv) != 2:
        print("usage: ci/check-docs.py PATH-TO-SEEKLESS", file=sys.stderr)
        return 2
    failures = []
    check_links(failures)
    check_commands(sys.argv[1], failures)
    for f in failures:
        print(f"check-docs: {f}", file=sys.stderr)
    if not failures:
        print("check-docs: every link and README command holds")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
