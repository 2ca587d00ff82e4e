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

Only each file's busiest thread, and the middle half of its stamps (the
steady state, not the setup nor the end).
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


def steps(path, top):
    rate, ev = load(path)
    d = collections.defaultdict(list)
    for (t1, a), (t2, b) in zip(ev, ev[1:]):
        d[(a, b)].append((t2 - t1) / rate)
    total = (ev[-1][0] - ev[0][0]) / rate
    print(f'{path}: {len(ev)} stamps over {total / 1e6:.1f} ms')
    print(f'  {"step":<34} {"count":>8} {"median ns":>10} {"share":>6}')
    for (a, b), v in sorted(d.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f'  {a + " -> " + b:<34} {len(v):>8} {statistics.median(v):>10.0f} '
              f'{100 * sum(v) / total:>5.1f}%')


def path(fname, start, end):
    rate, ev = load(fname)
    ways = collections.defaultdict(list)
    i = 0
    while i < len(ev):
        if ev[i][1] != start:
            i += 1
            continue
        j = i + 1
        while j < len(ev) and ev[j][1] not in (start, end):
            j += 1
        if j < len(ev) and ev[j][1] == end:
            seq = ev[i:j + 1]
            ways[tuple(p for _, p in seq)].append(
                [(t2 - t1) / rate for (t1, _), (t2, _) in zip(seq, seq[1:])])
        i = j
    if not ways:
        print(f'{fname}: never {start} then {end}')
        return
    total = sum(len(v) for v in ways.values())
    # the usual ways: one, or two if a second is as common (an ACK's and
    # a request's, say)
    for way, runs in sorted(ways.items(), key=lambda kv: -len(kv[1]))[:2]:
        if len(runs) < total / 5:
            break
        med = [statistics.median(r[k] for r in runs) for k in range(len(way) - 1)]
        print(f'{fname}: {start} -> {end}, {len(runs)} of {total} this way, medians:')
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--path', nargs=2, metavar=('FROM', 'TO'))
    ap.add_argument('--cross', nargs=2, metavar=('FROM', 'TO'))
    ap.add_argument('--top', type=int, default=25)
    ap.add_argument('files', nargs='+')
    o = ap.parse_args()
    if o.cross:
        if len(o.files) != 2:
            ap.error('--cross reads two files: FROM in the first, TO in the second')
        cross(*o.cross, *o.files)
        return
    for f in o.files:
        if o.path:
            path(f, *o.path)
        else:
            steps(f, o.top)


if __name__ == '__main__':
    main()
