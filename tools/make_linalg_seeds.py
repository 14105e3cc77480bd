#!/usr/bin/env python3
"""make_linalg_seeds.py - writes fuzz/seeds/fuzz_graph/issue21_linalg.pb: a TF1-style SavedModel whose
one signature reaches every kernel of src/ops/linalg.c, math_bitwise.c, array_roll.c, segment.c and
array_search.c (the ops the Keras layer sweep needed), so the graph fuzz target mutates their attrs
(align modes, band widths, shift counts, segment ids) and prepares their kernels.
Run: /work/main/build/venv/bin/python tools/make_linalg_seeds.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_op_seeds import r, save_seed, tf  # noqa: E402


def build():
    a = tf.compat.v1.placeholder(tf.float32, [None, 3, 3], name="a")
    v = tf.compat.v1.placeholder(tf.float32, [None], name="v")
    i = tf.compat.v1.placeholder(tf.int32, [None], name="i")
    outs = {}
    spd = tf.matmul(a, a, transpose_b=True) + 3.0 * tf.eye(3)
    outs["solve"] = r.MatrixSolve(matrix=spd, rhs=a, adjoint=False)
    outs["inv"] = r.MatrixInverse(input=spd, adjoint=True)
    outs["det"] = r.MatrixDeterminant(input=a)
    outs["chol"] = r.Cholesky(input=spd)
    outs["tri"] = r.MatrixTriangularSolve(matrix=outs["chol"], rhs=a, lower=True, adjoint=False)
    outs["qr_q"] = r.Qr(input=a, full_matrices=True).q
    outs["band"] = r.MatrixBandPart(input=a, num_lower=tf.constant(1, tf.int64), num_upper=tf.constant(-1, tf.int64))
    d = r.MatrixDiagPartV3(input=a, k=tf.constant([-1, 1]), padding_value=tf.constant(9.0), align="LEFT_RIGHT")
    outs["diag_part"] = d
    outs["diag"] = r.MatrixDiagV3(diagonal=v, k=tf.constant(0), num_rows=tf.constant(-1), num_cols=tf.constant(-1),
                                  padding_value=tf.constant(0.0), align="RIGHT_LEFT")
    outs["set_diag"] = r.MatrixSetDiagV3(input=a, diagonal=tf.ones_like(a[:, 0]), k=tf.constant(0), align="RIGHT_LEFT")
    outs["and"] = r.BitwiseAnd(x=i, y=i + 3)
    outs["or"] = r.BitwiseOr(x=i, y=tf.constant(5))
    outs["xor"] = r.BitwiseXor(x=i, y=tf.constant(6))
    outs["shl"] = r.LeftShift(x=i, y=tf.constant(40))
    outs["shr"] = r.RightShift(x=tf.cast(i, tf.int8), y=tf.constant(-1, tf.int8))
    outs["inv_bits"] = r.Invert(x=tf.cast(i, tf.uint16))
    outs["popcnt"] = r.PopulationCount(x=i)
    outs["roll"] = r.Roll(input=a, shift=tf.constant([1, -4]), axis=tf.constant([1, -1]))
    outs["bitcast"] = r.Bitcast(input=v, type=tf.uint8)
    ids = tf.math.floormod(i, 3)
    outs["useg_sum"] = r.UnsortedSegmentSum(data=v, segment_ids=ids, num_segments=tf.constant(4))
    outs["useg_max"] = r.UnsortedSegmentMax(data=v, segment_ids=ids, num_segments=tf.constant(4))
    outs["useg_prod"] = r.UnsortedSegmentProd(data=v, segment_ids=ids, num_segments=tf.constant(2))
    sids = tf.sort(ids)
    outs["seg_mean"] = r.SegmentMean(data=v, segment_ids=sids)
    outs["seg_min"] = r.SegmentMin(data=v, segment_ids=sids)
    sorted_v = tf.reshape(tf.sort(v), [1, -1])
    outs["lower"] = r.LowerBound(sorted_inputs=sorted_v, values=tf.reshape(v, [1, -1]), out_type=tf.int32)
    outs["upper"] = r.UpperBound(sorted_inputs=sorted_v, values=tf.reshape(v, [1, -1]), out_type=tf.int64)
    outs["cross"] = r.Cross(a=a, b=tf.reverse(a, [2]))
    return {"a": a, "v": v, "i": i}, outs


if __name__ == "__main__":
    save_seed(build, "issue21_linalg.pb")
