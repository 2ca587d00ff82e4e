#!/usr/bin/python3
"""Runs rdma-core's pyverbs test suite (a decompressed copy) on one device
and prints pass/fail/skip per module, so the counts in docs/consumers.md can
be reproduced.  What failed, and the slowest tests, are printed before the
suite's own verbose log: a CI log that keeps only the head of a long output
still says which test failed and why.

    run.py TESTS_DIR DEVICE [MODULE[.CLASS[.TEST]]...]

TESTS_DIR is a directory named "tests" holding the suite's .py files (the
suite imports itself as the package "tests").  Without MODULEs every generic
module runs: the provider-specific ones (mlx5, efa, cuda) only skip on any
other device, so their counts would say nothing about softverbs.
Exits 0 when nothing failed, 1 otherwise.
"""
import collections
import importlib
import io
import os
import re
import sys
import time
import unittest

VENDOR = re.compile(r'mlx5|efa|cuda')

# Tests that fork workers from the (multi-threaded) interpreter: ThreadSanitizer
# cannot follow such a fork ("dup thread with used id") and the workers hang.
TSAN_SKIP = {'test_multi_process_alloc_dm'}


def skip_under_tsan(suite):
    """Marks TSAN_SKIP tests as skipped when the libraries run under TSan."""
    if 'thread' not in os.environ.get('SOFTVERBS_SANITIZE', ''):
        return
    for test in iter_tests(suite):
        name = getattr(test, '_testMethodName', '')
        if name in TSAN_SKIP:
            setattr(test, name, unittest.skip('forks a threaded process: not under TSan')(
                getattr(test, name)))


def iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from iter_tests(t)
        else:
            yield t


def generic_modules(tests_dir):
    names = sorted(f[:-3] for f in os.listdir(tests_dir)
                   if f.startswith('test_') and f.endswith('.py'))
    return [n for n in names if not VENDOR.search(n)]


class Tee:
    """The runner's stream: kept for the end and, when SV_PYVERBS_LIVE names
    a file, written there as it comes, so a suite that hangs shows where."""

    def __init__(self, keep):
        self.keep = keep
        live = os.environ.get('SV_PYVERBS_LIVE')
        self.live = open(live, 'w', encoding='utf-8') if live else None

    def write(self, text):
        self.keep.write(text)
        if self.live:
            self.live.write(text)
            self.live.flush()

    def flush(self):
        pass


class CountingResult(unittest.TextTestResult):
    """Counts outcomes per module; the module is the test id's second part."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counts = collections.defaultdict(collections.Counter)
        self.seconds = {}
        self._t0 = 0.0

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        self.seconds[test.id()] = time.monotonic() - self._t0
        super().stopTest(test)

    def _count(self, test, what):
        parts = test.id().split('.')
        module = parts[1] if len(parts) > 2 else parts[0]
        self.counts[module][what] += 1

    def addSuccess(self, test):
        super().addSuccess(test)
        self._count(test, 'pass')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._count(test, 'fail')

    def addError(self, test, err):
        super().addError(test, err)
        self._count(test, 'fail')

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._count(test, 'skip')

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._count(test, 'pass')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._count(test, 'fail')


def print_counts(counts):
    total = collections.Counter()
    print('%-24s %5s %5s %5s' % ('module', 'pass', 'fail', 'skip'))
    for module in sorted(counts):
        c = counts[module]
        total.update(c)
        print('%-24s %5d %5d %5d' % (module, c['pass'], c['fail'], c['skip']))
    print('%-24s %5d %5d %5d' % ('total', total['pass'], total['fail'],
                                 total['skip']))


def print_summary(result, slowest=5):
    """What failed, each with the last lines of its traceback, and the
    slowest tests: first, so a truncated log still shows them."""
    bad = result.failures + result.errors + [(t, 'unexpected success')
                                             for t in result.unexpectedSuccesses]
    print('pyverbs: %d failed' % len(bad))
    for test, tb in bad:
        print('FAILED %s' % test.id())
        for line in tb.rstrip().splitlines()[-6:]:
            print('    ' + line)
    print('slowest:')
    for name, sec in sorted(result.seconds.items(), key=lambda kv: -kv[1])[:slowest]:
        print('  %7.2f s  %s' % (sec, name))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tests_dir = os.path.abspath(sys.argv[1])
    dev = sys.argv[2]
    modules = sys.argv[3:] or generic_modules(tests_dir)
    # The suite imports both "args_parser" and "tests.base".
    sys.path[:0] = [tests_dir, os.path.dirname(tests_dir)]
    from args_parser import parser
    sys.argv[1:] = ['--dev', dev, '-v']
    parser.parse_args()
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    importlib.import_module('tests')
    for name in modules:
        suite.addTests(loader.loadTestsFromName('tests.' + name))
    skip_under_tsan(suite)
    log = io.StringIO()
    runner = unittest.TextTestRunner(verbosity=2, resultclass=CountingResult,
                                     stream=Tee(log))
    result = runner.run(suite)
    print_summary(result)
    print_counts(result.counts)
    print('--- the suite\'s log ---')
    sys.stdout.write(log.getvalue())
    print_counts(result.counts)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == '__main__':
    main()
