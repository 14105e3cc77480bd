#!/usr/bin/env python3
"""run_compare.py GOLDEN OURS: compares `saved_model_cli run` stdout with ours.

Exit 0: identical. Exit 3: not identical, but the same text once numbers are allowed to differ by
1e-5 relative (1e-6 absolute near zero), the tolerance the runtime promises for float32 against
TensorFlow; numpy's padding may then differ too, so whitespace runs compare equal. Exit 1: different.
"""
import math
import re
import sys

NUM = re.compile(r'[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|inf|nan)', re.I)


def tokens(text):
    out = []
    for tok in text.split():
        pos = 0
        for m in NUM.finditer(tok):
            if m.start() > pos:
                out.append(('t', tok[pos:m.start()]))
            out.append(('n', m.group()))
            pos = m.end()
        if pos < len(tok):
            out.append(('t', tok[pos:]))
    return out


def close(a, b):
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= max(1e-5 * max(abs(x), abs(y)), 1e-6)


def main():
    g = open(sys.argv[1], encoding='utf-8', errors='surrogateescape').read()
    o = open(sys.argv[2], encoding='utf-8', errors='surrogateescape').read()
    if g == o:
        return 0
    tg, to = tokens(g), tokens(o)
    if len(tg) == len(to) and all(a[0] == b[0] and (a[1] == b[1] if a[0] == 't' else close(a[1], b[1]))
                                  for a, b in zip(tg, to)):
        return 3
    return 1


sys.exit(main())
