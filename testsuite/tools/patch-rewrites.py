#!/usr/bin/python3
"""Which patches of the series rewrite lines that an earlier patch added.

Usage: testsuite/tools/patch-rewrites.py PRISTINE PATCHES [PINNED]

PRISTINE is an unpacked upstream tree, PATCHES the directory holding
series and the patches.  The series is replayed on line provenance
alone: every line of every file is tagged with the patch that added it
(or upstream), and a patch's removed line ("-") that an earlier patch
added is a rewrite.  Prints one "PATCH FILE EARLIER LINES" line per
rewriting pair.  With PINNED (a file of "PATCH FILE EARLIER" lines, #
comments), exits 1 when a pair is not pinned, so that a new patch, or an
edit, cannot grow the series' rewrites while the ones pinned wait for
the series to be split (issue 21); and when a pinned pair is gone, so
that the list shrinks with the series.

Hunk line numbers are exact: the series is refreshed without fuzz, in
order (rsync-src/refresh.sh, check-patches.sh).
"""

import os
import re
import sys

HUNK = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')


def series(patches):
    names = []
    for line in open(os.path.join(patches, 'series')):
        line = line.split('#', 1)[0].strip()
        if line:
            names.append(line.split()[0])
    return names


def upstream_lines(pristine, path):
    full = os.path.join(pristine, path)
    if not os.path.exists(full):
        return 0
    with open(full, 'rb') as f:
        return len(f.read().splitlines())


def replay(pristine, patches):
    """Returns {(patch, file, earlier): lines}."""
    tags = {}			# file -> list of tags, one per line
    found = {}
    for patch in series(patches):
        lines = open(os.path.join(patches, patch), 'rb').read().decode(
            'utf-8', 'replace').splitlines()
        i, path, delta = 0, None, 0
        while i < len(lines):
            line = lines[i]
            if line.startswith('--- ') and i + 1 < len(lines) and \
                    lines[i + 1].startswith('+++ '):
                new = lines[i + 1][4:].split('\t')[0]
                path = None if new == '/dev/null' else new.split('/', 1)[1]
                old = line[4:].split('\t')[0]
                if path is None:	# a deleted file: nothing to tag
                    path = old.split('/', 1)[1]
                if path not in tags:
                    n = 0 if old == '/dev/null' else upstream_lines(pristine, path)
                    tags[path] = ['upstream'] * n
                delta = 0
                i += 2
                continue
            m = HUNK.match(line)
            if m and path is not None:
                start, count = int(m.group(1)), int(m.group(2) or '1')
                pos = (start if count == 0 else start - 1) + delta
                t = tags[path]
                i += 1
                while i < len(lines):
                    h = lines[i]
                    if h.startswith('\\'):
                        i += 1
                        continue
                    if not h or h[0] not in ' -+':
                        break
                    if h.startswith('--- ') and i + 1 < len(lines) and \
                            lines[i + 1].startswith('+++ '):
                        break
                    if h[0] == ' ':
                        pos += 1
                    elif h[0] == '-':
                        who = t[pos] if pos < len(t) else 'upstream'
                        if who not in ('upstream', patch):
                            key = (patch, path, who)
                            found[key] = found.get(key, 0) + 1
                        del t[pos]
                        delta -= 1
                    else:
                        t.insert(pos, patch)
                        pos += 1
                        delta += 1
                    i += 1
                continue
            i += 1
    return found


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split('\n\n')[1])
    found = replay(sys.argv[1], sys.argv[2])
    for (patch, path, who), n in sorted(found.items()):
        print(f'{patch} {path} {who} {n}')
    if len(sys.argv) == 3:
        return 0
    pinned = set()
    for line in open(sys.argv[3]):
        line = line.split('#', 1)[0].split()
        if line:
            pinned.add(tuple(line[:3]))
    bad = 0
    for key in sorted(set(found) - pinned):
        print(f'patch-rewrites: {key[0]} rewrites lines {key[2]} added to {key[1]}; '
              'fold the change into that patch', file=sys.stderr)
        bad = 1
    for key in sorted(pinned - set(found)):
        print(f'patch-rewrites: {key[0]} no longer rewrites {key[2]}\'s lines in {key[1]}; '
              f'remove it from {sys.argv[3]}', file=sys.stderr)
        bad = 1
    return bad


if __name__ == '__main__':
    sys.exit(main())
