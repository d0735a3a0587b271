#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the lines of Markdown files longer than 100 characters, outside fenced code blocks, table
rows (which cannot be wrapped) and HTML comments (markers for generated text, never shown), and
exits 1 when there is any (0 when none, 2 on a usage error). Prose is reflowed instead;
scripts/check-format.sh runs this over every tracked .md.

  scripts/check-markdown.py FILE...
"""
import sys

LIMIT = 100


def long_lines(path):
    """(line number, length) of every prose line of PATH longer than LIMIT characters."""
    fence = None
    found = []
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            line = line.rstrip("\n")
            stripped = line.lstrip()
            # A fence closes only with the same character it opened with (``` or ~~~).
            marker = stripped[:3]
            if marker in ("```", "~~~"):
                if fence is None:
                    fence = marker
                elif fence == marker:
                    fence = None
                continue
            if fence is not None or stripped.startswith(("|", "<!--")):
                continue
            if len(line) > LIMIT:
                found.append((number, len(line)))
    return found


def main(paths):
    if not paths or paths[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failing = 0
    for path in paths:
        try:
            lines = long_lines(path)
        except OSError as error:
            print(f"check-markdown: {error}", file=sys.stderr)
            return 2
        for number, length in lines:
            print(f"{path}:{number}: {length} characters (at most {LIMIT} outside code and tables)")
        failing += bool(lines)
    if failing:
        print(f"check-markdown: {failing} of {len(paths)} Markdown files have lines over {LIMIT}"
              " characters; reflow them", file=sys.stderr)
        return 1
    print(f"check-markdown: {len(paths)} Markdown files keep to {LIMIT} characters a line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
