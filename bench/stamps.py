#!/usr/bin/env python3
"""Where a message's time goes, from softverbs TSC stamps (src/util/stamp.h).

Build with `make stamps`, run both processes with
SOFTVERBS_STAMPS=/tmp/st (each writes /tmp/st.<pid>), then:

  bench/stamps.py /tmp/st.*                      each step's median, per process
  bench/stamps.py --path poll_found sock_sent F  the usual way from one point
                                                 to the next other, step by step
  bench/stamps.py --cross ring_written rings_ready A B
                                                 from a point in A to the next
                                                 other in B (the processes
                                                 share the TSC): the hand-over
  bench/stamps.py --path FROM TO [--via P] --a F... --b F...
                                                 two builds (or runs) side by
                                                 side: each step's median over
                                                 the files of each side

Only each file's busiest thread, and the middle half of its stamps (the
steady state, not the setup nor the end).  On a machine whose speed
wanders, a step a change shortens shows here when whole runs cannot
resolve it (docs/measurements.md, 'Where a one-way trip goes').
"""
import argparse
import collections
import statistics
import sys


def load(path):
    """(ticks per ns, [(tsc, point)]) of the file's busiest thread."""
    with open(path) as f:
        head = f.readline()
        if not head.startswith('# softverbs stamps'):
            sys.exit(f'{path}: not a softverbs stamp file')
        rate = float(head.split()[-1])
        rows = [line.split() for line in f]
    if not rows:
        sys.exit(f'{path}: no stamps')
    busiest = collections.Counter(r[1] for r in rows).most_common(1)[0][0]
    ev = [(int(r[0]), r[2]) for r in rows if r[1] == busiest]
    n = len(ev)
    return rate, ev[n // 4:3 * n // 4]


def step_times(fname):
    """{(a, b): [ns]} of consecutive stamps, and the span they cover."""
    rate, ev = load(fname)
    d = collections.defaultdict(list)
    for (t1, a), (t2, b) in zip(ev, ev[1:]):
        d[(a, b)].append((t2 - t1) / rate)
    return d, len(ev), (ev[-1][0] - ev[0][0]) / rate


def ways(fname, start, end, via=None):
    """The usual ways from `start` to the next `end` (one, or two if a second
    is as common: an ACK's and a request's, say), only those through `via`
    if given: [(way, [median ns], n)], and how many runs there were in all."""
    rate, ev = load(fname)
    runs = collections.defaultdict(list)
    i = 0
    while i < len(ev):
        if ev[i][1] != start:
            i += 1
            continue
        j = i + 1
        while j < len(ev) and ev[j][1] not in (start, end):
            j += 1
        if j < len(ev) and ev[j][1] == end and (
                not via or any(p == via for _, p in ev[i:j + 1])):
            seq = ev[i:j + 1]
            runs[tuple(p for _, p in seq)].append(
                [(t2 - t1) / rate for (t1, _), (t2, _) in zip(seq, seq[1:])])
        i = j
    total = sum(len(v) for v in runs.values())
    out = []
    for way, rs in sorted(runs.items(), key=lambda kv: -len(kv[1]))[:2]:
        if len(rs) < total / 5:
            break
        out.append((way, [statistics.median(r[k] for r in rs) for k in range(len(way) - 1)],
                    len(rs)))
    return out, total


def show_steps(fname, top):
    d, n, span = step_times(fname)
    print(f'{fname}: {n} stamps over {span / 1e6:.1f} ms')
    print(f'  {"step":<34} {"count":>8} {"median ns":>10} {"share":>6}')
    for (a, b), v in sorted(d.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f'  {a + " -> " + b:<34} {len(v):>8} {statistics.median(v):>10.0f} '
              f'{100 * sum(v) / span:>5.1f}%')


def show_path(fname, start, end, via):
    found, total = ways(fname, start, end, via)
    if not found:
        print(f'{fname}: never {start} then {end}')
    for way, med, n in found:
        print(f'{fname}: {start} -> {end}, {n} of {total} this way, medians:')
        for k, m in enumerate(med):
            print(f'  {way[k] + " -> " + way[k + 1]:<34} {m:>8.0f} ns')
        print(f'  {"sum":<34} {sum(med):>8.0f} ns')


def cross(start, end, fa, fb):
    rate, a = load(fa)
    _, b = load(fb)
    tb = [t for t, p in b if p == end]
    gaps, k = [], 0
    for t, p in a:
        if p != start:
            continue
        while k < len(tb) and tb[k] < t:
            k += 1
        if k < len(tb):
            gaps.append((tb[k] - t) / rate)
    if not gaps:
        print(f'never {start} in {fa} then {end} in {fb}')
        return
    gaps.sort()
    print(f'{start} ({fa}) -> {end} ({fb}): {len(gaps)}, median '
          f'{statistics.median(gaps):.0f} ns, p25 {gaps[len(gaps) // 4]:.0f}, '
          f'p75 {gaps[3 * len(gaps) // 4]:.0f}')


def side_steps(files, start, end, via):
    """Each step's medians over the files of one side, keyed "a -> b" in the
    order of the first file's usual way (without --path: every step)."""
    per = collections.defaultdict(list)
    order = []
    for f in files:
        if start:
            found, _ = ways(f, start, end, via)
            if found:
                way, med, _ = found[0]
                for k, m in enumerate(med):
                    per[f'{way[k]} -> {way[k + 1]}'].append(m)
        else:
            d, _, _ = step_times(f)
            for (a, b), v in sorted(d.items(), key=lambda kv: -sum(kv[1])):
                per[f'{a} -> {b}'].append(statistics.median(v))
        for key in per:
            if key not in order:
                order.append(key)
    return {k: statistics.median(v) for k, v in per.items()}, order


def compare(files_a, files_b, start, end, via, top):
    a, order = side_steps(files_a, start, end, via)
    b, order_b = side_steps(files_b, start, end, via)
    order += [k for k in order_b if k not in a]
    print(f'A: {len(files_a)} file(s), B: {len(files_b)}; each step\'s median ns '
          '(over the files: their medians\' median)')
    print(f'  {"step":<34} {"A":>8} {"B":>8} {"B - A":>8}')
    for k in order[:top] if not start else order:
        va, vb = a.get(k), b.get(k)
        fa = f'{va:8.0f}' if va is not None else f'{"-":>8}'
        fb = f'{vb:8.0f}' if vb is not None else f'{"-":>8}'
        fd = f'{vb - va:+8.0f}' if va is not None and vb is not None else f'{"":>8}'
        print(f'  {k:<34} {fa} {fb} {fd}')
    if start:
        sa, sb = sum(a.values()), sum(b.values())
        print(f'  {"sum":<34} {sa:8.0f} {sb:8.0f} {sb - sa:+8.0f}')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--path', nargs=2, metavar=('FROM', 'TO'))
    ap.add_argument('--via', metavar='POINT',
                    help='with --path: only the ways through POINT (the request\'s: header)')
    ap.add_argument('--cross', nargs=2, metavar=('FROM', 'TO'))
    ap.add_argument('--a', nargs='+', metavar='FILE', help='one side of a comparison')
    ap.add_argument('--b', nargs='+', metavar='FILE', help='the other side')
    ap.add_argument('--top', type=int, default=25)
    ap.add_argument('files', nargs='*')
    o = ap.parse_args()
    if bool(o.a) != bool(o.b):
        ap.error('--a and --b go together')
    if o.a:
        start, end = o.path if o.path else (None, None)
        compare(o.a, o.b, start, end, o.via, o.top)
        return
    if not o.files:
        ap.error('no stamp files')
    if o.cross:
        if len(o.files) != 2:
            ap.error('--cross reads two files: FROM in the first, TO in the second')
        cross(*o.cross, *o.files)
        return
    for f in o.files:
        if o.path:
            show_path(f, *o.path, o.via)
        else:
            show_steps(f, o.top)


if __name__ == '__main__':
    main()
