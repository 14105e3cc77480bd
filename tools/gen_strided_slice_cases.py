#!/usr/bin/env python3
"""Generate tests/unit/strided_slice_cases.h: StridedSlice cases run through TensorFlow's CPU kernel.

Hand-picked cases (the mkl fixture's shrink-to-scalar, foo[-1], ellipsis with new axes, negative
strides, masks) plus a seeded random sweep over shapes, spec lengths, all five masks, begin/end
past both ends and strides of both signs (zero included, for the error). TF's output or error
message is the expectation. Run: /tmp/tfvenv/bin/python tools/gen_strided_slice_cases.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402


def ss(name, x, begin, end, strides, idx=np.int32, **masks):
    g.case(name, "StridedSlice", [("input", x), ("begin", np.array(begin, idx)), ("end", np.array(end, idx)),
                                  ("strides", np.array(strides, idx))], {k: v for k, v in masks.items()})


def main():
    a = g.arange
    # The mkl fixture: [1,10,10,1] -> scalar.
    ss("fixture shrink 15", a([1, 10, 10, 1]), [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], shrink_axis_mask=15)
    x = a([4, 5])
    ss("x[1:3]", x, [1], [3], [1])
    ss("x[-1]", x, [-1], [0], [1], shrink_axis_mask=1)
    ss("x[:, -1]", x, [0, -1], [0, 0], [1, 1], begin_mask=1, end_mask=1, shrink_axis_mask=2)
    ss("x[::-1]", x, [0], [0], [-1], begin_mask=1, end_mask=1)
    ss("x[::-2, 1::2]", x, [0, 1], [0, 0], [-2, 2], begin_mask=1, end_mask=3)
    ss("x[3:0:-1]", x, [3], [0], [-1])
    ss("x[-1:-6:-1]", x, [-1], [-6], [-1])
    ss("x[10:20]", x, [10], [20], [1])
    ss("x[-10:-20:-1]", x, [-10], [-20], [-1])
    ss("x[..., 2]", x, [0, 2], [0, 3], [1, 1], ellipsis_mask=1, shrink_axis_mask=2)
    ss("x[None, ..., None]", x, [0, 0, 0], [0, 0, 0], [1, 1, 1], ellipsis_mask=2, new_axis_mask=5)
    ss("x[1, None, 2:4]", x, [1, 0, 2], [2, 0, 4], [1, 1, 1], new_axis_mask=2, shrink_axis_mask=1)
    ss("x[:, :] identity", x, [0, 0], [0, 0], [1, 1], begin_mask=3, end_mask=3)
    ss("x[0:4] identity int64", x, [0], [4], [1], idx=np.int64)
    ss("x[5] out of bounds", x, [5], [6], [1], shrink_axis_mask=1)
    ss("x[-5] out of bounds", x, [-5], [-4], [1], shrink_axis_mask=1)
    ss("stride 0", x, [0], [1], [0])
    ss("shrink negative stride", x, [1], [0], [-1], shrink_axis_mask=1)
    ss("two ellipses", x, [0, 0], [0, 0], [1, 1], ellipsis_mask=3)
    ss("too many indices", x, [0, 0, 0], [1, 1, 1], [1, 1, 1])
    ss("mismatched lengths", x, [0, 0], [1], [1, 1])
    ss("scalar input", np.float32(3), [0], [1], [1])
    ss("scalar new axis", np.float32(3), [0], [1], [1], new_axis_mask=1)
    ss("scalar ellipsis", np.float32(3), [0], [1], [1], ellipsis_mask=1)
    y = a([2, 3, 4, 5])
    ss("y[..., 1:3, ::-1]", y, [0, 1, 0], [0, 3, 0], [1, 1, -1], ellipsis_mask=1, begin_mask=4, end_mask=4)
    ss("y[1, ..., None, 2]", y, [1, 0, 0, 2], [2, 0, 0, 3], [1, 1, 1, 1], ellipsis_mask=2, new_axis_mask=4,
       shrink_axis_mask=9)
    ss("y[:, None, ..., None, ::2]", y, [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 2], begin_mask=17,
       end_mask=17, ellipsis_mask=4, new_axis_mask=10)
    ss("y[-1, -1, -1, -1]", y, [-1, -1, -1, -1], [0, 0, 0, 0], [1, 1, 1, 1], shrink_axis_mask=15)
    ss("empty dim", a([0, 3]), [0, 1], [0, 2], [1, 1], begin_mask=1, end_mask=1)
    ss("empty dim shrink", a([0, 3]), [0], [1], [1], shrink_axis_mask=1)
    ss("string", np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=object), [1, 2], [0, 0], [-1, -1],
       begin_mask=0, end_mask=3)
    ss("int64 data", a([6], np.int64), [4], [0], [-3])
    ss("bool data", np.array([True, False, True]), [0], [3], [2])

    # Random sweep.
    rng = np.random.RandomState(1234)
    for k in range(400):
        rank = rng.randint(1, 5)
        shape = [int(rng.randint(0 if rng.rand() < 0.05 else 1, 6)) for _ in range(rank)]
        n = rng.randint(1, rank + 3)
        begin, end, strides = [], [], []
        for i in range(n):
            d = shape[min(i, rank - 1)]
            begin.append(int(rng.randint(-d - 3, d + 4)))
            end.append(int(rng.randint(-d - 3, d + 4)))
            strides.append(int(rng.choice([-3, -2, -1, -1, 1, 1, 1, 2, 3] + ([0] if k % 50 == 7 else []))))
        bits = lambda p: sum(1 << i for i in range(n) if rng.rand() < p)  # noqa: E731
        masks = dict(begin_mask=bits(0.25), end_mask=bits(0.25), new_axis_mask=bits(0.12), shrink_axis_mask=bits(0.2))
        if rng.rand() < 0.35:
            masks["ellipsis_mask"] = 1 << int(rng.randint(0, n))
        masks = {m: v for m, v in masks.items() if v}
        ss("random %d %s b%s e%s s%s %s" % (k, shape, begin, end, strides, masks), a(shape), begin, end, strides,
           idx=np.int64 if k % 3 == 0 else np.int32, **masks)
    g.write_header(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit",
                                "strided_slice_cases.h"), "strided_slice_cases", "SM_TEST_STRIDED_SLICE_CASES_H")


if __name__ == "__main__":
    main()
