#!/usr/bin/env python3
"""Every file and function the engine's comments and docs name still exists.

    testsuite/tools/check-names.py [TOP]

Reads the comments of delete_engine's C files (tests and tools too), and
delete_engine/README.md, docs/BENCHMARKS.md and README.md, for three
kinds of name:
  * `name.c` or `name.h`: a file of this repository (any directory), of
    the unpacked rsync tree (build/rsync-de), or one of the other
    projects' files listed in OTHERS;
  * `de_name()` or `de__name()`: a function or macro the engine defines;
  * `file.c name`, where name has an underscore or is called, as
    "(sched.c run_phase2)": name appears in that file.
Lab notes (bench/results/) record what was, and are not read.  Exit 1
with one line per stale name; 0 when all are found.
"""

import os
import re
import sys

TOP = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), '..', '..'))
RSYNC = os.path.join(TOP, 'build', 'rsync-de')

# Files of other projects that comments cite for comparison.
OTHERS = {
    'fts.c',        # gnulib's fts, under coreutils' rm
    'remove.c',     # coreutils' rm
    'rm.c',         # coreutils' rm
    'checkpoint.c', # Linux's jbd2, its checkpoint
    'fsmap.h',      # Linux's ext4, its GETFSMAP owner codes
}

DOCS = ['delete_engine/README.md', 'docs/BENCHMARKS.md', 'README.md']
SKIP_DIRS = {'.git', 'build', 'results', 'build-asan', 'build-tsan', 'build-portable'}

FILE = re.compile(r'(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[ch])\b(?!\w)')
ENGINE_CALL = re.compile(r'\b(de__?\w+)\(\)')
PAIR = re.compile(r'\b([\w-]+\.c),? `?([A-Za-z_]\w*)`?(\(\))?')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def repo_files():
    """{basename: [path]} and the set of relative paths of the repository."""
    names, paths = {}, set()
    for root, dirs, files in os.walk(TOP):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), TOP)
            paths.add(rel)
            names.setdefault(f, []).append(os.path.join(TOP, rel))
    if os.path.isdir(RSYNC):
        for root, dirs, files in os.walk(RSYNC):
            dirs[:] = [d for d in dirs if not d.startswith('.')]
            for f in files:
                names.setdefault(f, []).append(os.path.join(root, f))
    return names, paths


def engine_names():
    """Every identifier defined or declared in delete_engine's sources."""
    found = set()
    d = os.path.join(TOP, 'delete_engine')
    for sub in ('', 'test', 'tools'):
        for f in os.listdir(os.path.join(d, sub)):
            if f.endswith(('.c', '.h')):
                with open(os.path.join(d, sub, f)) as fh:
                    text = COMMENT.sub('', fh.read())
                found.update(re.findall(r'\b(de__?\w+)\s*\(', text))
                found.update(re.findall(r'#define\s+(de__?\w+)', text))
    return found


def texts():
    """(path, text to read) of the engine's comments and the docs."""
    d = os.path.join(TOP, 'delete_engine')
    for sub in ('', 'test', 'tools'):
        for f in sorted(os.listdir(os.path.join(d, sub))):
            if f.endswith(('.c', '.h')):
                p = os.path.join(d, sub, f)
                with open(p) as fh:
                    yield p, '\n'.join(COMMENT.findall(fh.read()))
    for doc in DOCS:
        p = os.path.join(TOP, doc)
        with open(p) as fh:
            yield p, fh.read()


def main():
    names, paths = repo_files()
    defined = engine_names()
    bad = []
    for path, text in texts():
        rel = os.path.relpath(path, TOP)
        for f in set(FILE.findall(text)):
            base = os.path.basename(f)
            # A placeholder (test/NAME.c) names no file.
            if base in OTHERS or base in names or f in paths or base[:-2].isupper():
                continue
            bad.append(f'{rel}: names {f}, which is not here')
        for fn in set(ENGINE_CALL.findall(text)):
            if fn not in defined:
                bad.append(f'{rel}: names {fn}(), which the engine does not define')
        for f, ident, called in set(PAIR.findall(text)):
            if '_' not in ident and not called:
                continue
            where = names.get(f, [])
            if not where:
                continue        # reported above, unless another project's
            hit = False
            for p in where:
                with open(p, errors='replace') as fh:
                    if re.search(r'\b%s\b' % re.escape(ident), fh.read()):
                        hit = True
                        break
            if not hit:
                bad.append(f'{rel}: names {f} {ident}, which {f} does not hold')
    for line in sorted(bad):
        print(f'check-names: {line}')
    if bad:
        sys.exit(1)
    print('check-names: every file and function named is there')


if __name__ == '__main__':
    main()
