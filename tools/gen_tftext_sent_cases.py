#!/usr/bin/env python3
"""gen_tftext_sent_cases.py - writes tests/unit/tftext_sent_cases.h: TensorFlow Text's scoring ops
(src/ops/tftext_sent.c) against tensorflow_text 2.21's own kernels: RougeL (text.metrics.rouge_l)
over every Tsplits x Tvalues it registers (int32/int64 splits; int32, int64, string values), alpha
in [0, 1] and the tensor2tensor F (alpha < 0), empty rows, empty batches and TF's errors.

Uses tools/gen_array_cases.py's case() machinery: the custom op's generated wrapper stands in for a
tf.raw_ops function. The public API path (text.metrics.rouge_l inside a saved tf.function) is
checked by tools/sweep_ops.py. Run: build/venv/bin/python tools/gen_tftext_sent_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  registers the custom ops
from tensorflow_text.python.metrics import text_similarity_metric_ops as _m  # noqa: E402

from tensorflow_text.python.ops import viterbi_constrained_sequence_op as _v  # noqa: E402

setattr(tf.raw_ops, "RougeL", _m.gen_text_similarity_metric_ops.rouge_l)
setattr(tf.raw_ops, "ConstrainedSequence", _v.gen_constrained_sequence_op.constrained_sequence)

case = g.case
A = g.A
i32, i64 = np.int32, np.int64
rng = np.random.default_rng(24)


def S(x):
    return np.array(x, dtype=object)


def rouge(name, hv, hs, rv, rs, alpha, sdt=i64, err=None):
    case(name, "RougeL", [("hyp_values", hv), ("hyp_splits", A(hs, sdt)), ("ref_values", rv), ("ref_splits", A(rs, sdt)),
                          ("alpha", A(alpha))], err_needle=err)


def rouge_l():
    hw = [b"captain", b"of", b"the", b"delta", b"flight", b"a", b"b", b"c", b"x"]
    rw = [b"delta", b"air", b"lines", b"flight", b"a", b"c", b"b", b"x", b"y", b"the"]
    hs, rs = [0, 5, 8, 8, 9], [0, 4, 7, 8, 10]
    for sdt in (i32, i64):
        for alpha in (0.5, 0.0, 1.0, 0.25, -1.0, -0.5):
            rouge("RougeL string %s a=%g" % (np.dtype(sdt).name, alpha), S(hw), hs, S(rw), rs, alpha, sdt)
        for vdt in (i32, i64):
            h = rng.integers(0, 4, 23).astype(vdt)
            r = rng.integers(0, 4, 19).astype(vdt)
            hsp, rsp = [0, 3, 3, 10, 17, 23], [0, 5, 6, 6, 12, 19]
            for alpha in (0.5, -1.0, 0.9):
                rouge("RougeL %s %s a=%g" % (np.dtype(vdt).name, np.dtype(sdt).name, alpha), h, hsp, r, rsp, alpha, sdt)
    rouge("RougeL identical", A([1, 2, 3], i32), [0, 3], A([1, 2, 3], i32), [0, 3], 0.5)
    rouge("RougeL disjoint", A([1, 2, 3], i32), [0, 3], A([4, 5], i32), [0, 2], 0.5)
    rouge("RougeL disjoint t2t", A([1, 2, 3], i32), [0, 3], A([4, 5], i32), [0, 2], -1.0)
    rouge("RougeL empty rows", A([], i32), [0, 0, 0], A([], i32), [0, 0, 0], 0.5)
    rouge("RougeL empty hyp row", A([], i32), [0, 0], A([7, 8], i32), [0, 2], 0.5)
    rouge("RougeL no rows", S([]), [0], S([]), [0], 0.5)
    rouge("RougeL utf8", S(["né".encode(), b"\xff\xfe", "日本".encode()]), [0, 3], S([b"\xff\xfe", "日本".encode()]), [0, 2], 0.3)
    rouge("RougeL alpha > 1", A([1], i32), [0, 1], A([1], i32), [0, 1], 1.5)
    rouge("RougeL alpha nan", A([1], i32), [0, 1], A([1], i32), [0, 1], float("nan"))
    rouge("RougeL split lengths", A([1, 2], i32), [0, 1, 2], A([1], i32), [0, 1], 0.5)
    rouge("RougeL no splits", A([], i32), [], A([], i32), [], 0.5)
    rouge("RougeL matrix values", A([[1, 2]], i32), [0, 2], A([1], i32), [0, 1], 0.5)


def cs(name, scores, lengths, allowed, weights, viterbi, log, se, ldt=i32, sdt=None, err=None):
    attrs = {"use_viterbi": viterbi, "use_log_space": log, "use_start_and_end_states": se}
    if sdt is not None:
        attrs["Tsplits"] = tf.as_dtype(sdt)
    case(name, "ConstrainedSequence", [("scores", A(scores)), ("sequence_lengths", A(lengths, ldt)),
                                       ("allowed_transitions", np.array(allowed, dtype=bool)), ("transition_weights", A(weights))],
         attrs, err_needle=err)


def constrained_sequence():
    n = 4
    sc = rng.uniform(0.0, 1.0, (3, 5, n)).astype(np.float32)
    lsc = np.log(sc)
    lens = [5, 3, 0]
    for se in (False, True):
        w = n + 1 if se else n
        allowed = rng.uniform(size=(w, w)) > 0.3
        allowed[:, 0] = True
        tw = rng.uniform(0.1, 1.0, (w, w)).astype(np.float32)
        ltw = np.log(tw)
        for viterbi in (True, False):
            tag = "%s se=%d" % ("viterbi" if viterbi else "greedy", se)
            for ldt in (i32, i64):
                for sdt in (None, i32):
                    cs("CS %s log %s splits %s" % (tag, np.dtype(ldt).name, sdt and "i32"), lsc, lens, allowed, ltw, viterbi, True, se,
                       ldt, sdt)
            cs("CS %s prob" % tag, sc, lens, allowed, tw, viterbi, False, se)
            cs("CS %s prob no weights" % tag, sc, lens, allowed, np.zeros((0, 0)), viterbi, False, se)
            cs("CS %s log no constraints" % tag, lsc, lens, np.zeros((0, 0)), np.zeros((0, 0)), viterbi, True, se)
            cs("CS %s prob only weights" % tag, sc, lens, np.zeros((0, 0)), tw, viterbi, False, se)
            cs("CS %s rank 2" % tag, lsc[0], [4], allowed, ltw, viterbi, True, se)
            dead = np.zeros((w, w), dtype=bool)
            dead[:, :] = False
            dead[n if se else 0, 1] = True
            cs("CS %s nothing allowed" % tag, lsc, lens, dead, ltw, viterbi, True, se)
            cs("CS %s ties" % tag, np.zeros((2, 3, n), np.float32), [3, 2], np.zeros((0, 0)), np.zeros((0, 0)), viterbi, True, se)
            cs("CS %s -inf" % tag, np.where(sc > 0.5, lsc, -np.inf).astype(np.float32), lens, np.zeros((0, 0)), ltw, viterbi, True, se)
            cs("CS %s empty batch" % tag, np.zeros((0, 5, n)), [], allowed, ltw, viterbi, True, se)
            cs("CS %s bad allowed shape" % tag, lsc, lens, np.ones((w + 1, w)), ltw, viterbi, True, se)
            cs("CS %s bad weights shape" % tag, lsc, lens, allowed, np.ones((w, w + 2)), viterbi, True, se)
            cs("CS %s weights rank" % tag, lsc, lens, allowed, np.ones((w * w,)), viterbi, True, se)
            cs("CS %s negative weights" % tag, sc, lens, allowed, -tw, viterbi, False, se)
            cs("CS %s too long" % tag, lsc, [6, 1, 1], allowed, ltw, viterbi, True, se)
            cs("CS %s lengths count" % tag, lsc, [1, 1], allowed, ltw, viterbi, True, se)
            cs("CS %s score rank" % tag, lsc[0, 0], [1], allowed, ltw, viterbi, True, se)
    cs("CS viterbi prob big scores", sc * 1e30, lens, np.zeros((0, 0)), np.zeros((0, 0)), True, False, False)


def main():
    rouge_l()
    constrained_sequence()
    g.write_unit_header("tftext_sent_cases")


if __name__ == "__main__":
    main()
