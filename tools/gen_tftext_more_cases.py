#!/usr/bin/env python3
"""gen_tftext_more_cases.py - writes tests/unit/tftext_more_cases.h: TensorFlow Text 2.21's kernels
of src/ops/tftext_more.c run by TF Text itself (eager, the op by its registered name through
tensorflow's execute, after `import tensorflow_text` loads the custom ops): TFText>ByteSplitWithOffsets,
TFText>ByteSplitByOffsets, TFText>Utf8Binarize, TFText>RoundRobinGenerateMasks,
SplitMergeTokenizeWithOffsets and TokenizerFromLogits - every attr and dtype, empty inputs,
ill-formed UTF-8, white space, and the errors TF Text words itself. Also checks that the public API
(text.ByteSplitter, text.utf8_binarize, text.RoundRobinTrimmer.generate_masks,
text.SplitMergeTokenizer, text.SplitMergeFromLogitsTokenizer) gives the raw ops' answers.

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_tftext_more_cases.py
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text as text  # noqa: E402,F401
from tensorflow.python.eager import context, execute  # noqa: E402

S = lambda *x: tf.constant([v.encode() if isinstance(v, str) else v for v in x], tf.string)  # noqa: E731
I32 = lambda x: tf.constant(np.array(x, np.int32).reshape(-1) if not isinstance(x, np.ndarray) else x, tf.int32)  # noqa: E731
I64 = lambda x: tf.constant(np.array(x, np.int64), tf.int64)  # noqa: E731
F32 = lambda x: tf.constant(np.array(x, np.float32), tf.float32)  # noqa: E731


def case(name, op, inputs, nout, attrs=None, exec_attrs=()):
    """inputs: the flat input tensors; attrs: the node's attrs (also given to TF), exec_attrs: any
    more TF needs (none so far)."""
    attrs = dict(attrs or {})
    flat_attrs = []
    for k, v in attrs.items():
        flat_attrs += [k, v.as_datatype_enum if isinstance(v, tf.dtypes.DType) else
                       [x.as_datatype_enum for x in v] if isinstance(v, list) and v and isinstance(v[0], tf.dtypes.DType) else v]
    err, outs = None, []
    try:
        outs = list(execute.execute(op, nout, list(inputs), tuple(flat_attrs) + tuple(exec_attrs), context.context()))
    except (tf.errors.InvalidArgumentError, tf.errors.InternalError, tf.errors.OutOfRangeError,
            tf.errors.FailedPreconditionError) as e:
        err = re.sub(r"\s*\[Op:[^\]]*\].*$", "", g.tf_error_text(e), flags=re.S)
    node = 'op: "%s" %s' % (op, " ".join(g.attr_text(k, v) for k, v in sorted(attrs.items())))
    g.CASES.append((name, node, list(inputs), outs, err))
    return outs


UTF8 = ["", "a", "hello", "h\u00e9llo", "\u4e2d\u6587 x", "\U0001F600!", b"\xff\xfeab", b"a\xe0\x80b", b"\xc3", b"\xe4\xb8",
        b"\xf0\x9f\x98", "\u00e9\u0301", b"\xed\xa0\x80z", b"\xf4\x90\x80\x80", b"\xc0\xaf", "x\u3000y \t\nz\u2028w\u00a0"]


def byte_split():
    for nm, xs in [("basic", ["hello", "", "\u00e9t\u00e9"]), ("empty batch", []), ("all empty", ["", ""]),
                   ("utf8 + ill-formed", UTF8)]:
        x = S(*xs) if xs else tf.constant([], tf.string)
        outs = case("ByteSplitWithOffsets %s" % nm, "TFText>ByteSplitWithOffsets", [x], 4)
        b, st, en = text.ByteSplitter().split_with_offsets(x)
        assert np.array_equal(b.flat_values.numpy(), outs[0].numpy()) and np.array_equal(st.flat_values.numpy(), outs[2].numpy())
    x = S("hello", "world", "", "\u00e9t\u00e9")
    basic = case("ByteSplitByOffsets basic", "TFText>ByteSplitByOffsets",
         [x, I32([0, 2, 3, 0, 1, 5, 2]), I32([2, 3, 5, 1, 5, 5, 5]), I64([0, 3, 6, 6, 7])], 2)
    case("ByteSplitByOffsets empty rows", "TFText>ByteSplitByOffsets",
         [x, I32([]), I32([]), I64([0, 0, 0, 0, 0])], 2)
    case("ByteSplitByOffsets empty spans", "TFText>ByteSplitByOffsets",
         [S("ab", ""), I32([0, 2, 1, 0]), I32([0, 2, 1, 0]), I64([0, 3, 4])], 2)
    case("ByteSplitByOffsets empty batch", "TFText>ByteSplitByOffsets",
         [tf.constant([], tf.string), I32([]), I32([]), I64([0])], 2)
    case("ByteSplitByOffsets mid-character", "TFText>ByteSplitByOffsets",
         [S("\u00e9t\u00e9"), I32([0, 1, 3]), I32([1, 4, 5]), I64([0, 3])], 2)
    case("ByteSplitByOffsets start out of range", "TFText>ByteSplitByOffsets",
         [S("abc"), I32([4]), I32([4]), I64([0, 1])], 2)
    case("ByteSplitByOffsets negative start", "TFText>ByteSplitByOffsets",
         [S("abc"), I32([-1]), I32([2]), I64([0, 1])], 2)
    case("ByteSplitByOffsets end out of range", "TFText>ByteSplitByOffsets",
         [S("abc"), I32([0]), I32([4]), I64([0, 1])], 2)
    case("ByteSplitByOffsets start after end", "TFText>ByteSplitByOffsets",
         [S("abc"), I32([2]), I32([1]), I64([0, 1])], 2)
    # the public API's split_by_offsets gives the same
    r = text.ByteSplitter().split_by_offsets(x, tf.RaggedTensor.from_row_splits([0, 2, 3, 0, 1, 5, 2], [0, 3, 6, 6, 7]),
                                             tf.RaggedTensor.from_row_splits([2, 3, 5, 1, 5, 5, 5], [0, 3, 6, 6, 7]))
    assert r.flat_values.numpy().tolist() == basic[0].numpy().tolist(), r


def binarize():
    xs = S(*UTF8)
    for wl, bpc, rep in [(4, 24, 65533), (3, 8, 0), (0, 5, 1), (5, 0, 7), (2, 40, -2), (8, 21, 0xFFFD), (1, 1, 3)]:
        outs = case("Utf8Binarize wl %d bpc %d rep %d" % (wl, bpc, rep), "TFText>Utf8Binarize", [xs], 1,
                    {"word_length": wl, "bits_per_char": bpc, "replacement_char": rep})
        if wl and bpc:
            api = text.utf8_binarize(xs, word_length=wl, bits_per_char=bpc, replacement_char=rep)
            assert np.array_equal(api.numpy(), outs[0].numpy())
    case("Utf8Binarize empty batch", "TFText>Utf8Binarize", [tf.constant([], tf.string)], 1,
         {"word_length": 3, "bits_per_char": 4, "replacement_char": 0})


def masks():
    for T, vals in [(tf.int32, lambda n: np.arange(n, dtype=np.int32)), (tf.int64, lambda n: np.arange(n, dtype=np.int64)),
                    (tf.string, lambda n: np.array([b"t%d" % i for i in range(n)], dtype=object)),
                    (tf.float32, lambda n: np.arange(n, dtype=np.float32))]:
        for ts in (tf.int64, tf.int32):
            segs = [[0, 3, 3, 7, 8], [0, 1, 6, 6, 9], [0, 2, 2, 2, 4]]
            for ml in (0, 1, 4, 5, 7, 100, -3):
                for nseg in (1, 2, 3):
                    sp = segs[:nseg]
                    v = [tf.constant(vals(s[-1]), T) for s in sp]
                    rs = [tf.constant(np.array(s), ts) for s in sp]
                    outs = case("RoundRobinGenerateMasks %s %s max %d N %d" % (T.name, ts.name, ml, nseg),
                                "TFText>RoundRobinGenerateMasks", [tf.constant(ml, tf.int32)] + v + rs, nseg,
                                {"N": nseg, "T": T, "Tsplits": ts})
                    if ml >= 0 and T == tf.int32 and ts == tf.int64:
                        api = text.RoundRobinTrimmer(ml).generate_mask(
                            [tf.RaggedTensor.from_row_splits(a, b) for a, b in zip(v, rs)])
                        for a, b in zip(api, outs):
                            assert np.array_equal(a.flat_values.numpy(), b.numpy())
    case("RoundRobinGenerateMasks empty batch", "TFText>RoundRobinGenerateMasks",
         [tf.constant(3, tf.int32), I32([]), I32([]), I64([0]), I64([0])], 2, {"N": 2, "T": tf.int32, "Tsplits": tf.int64})


def split_merge():
    xs = ["Hello world", "a b  c", "", "\u4e2d\u6587\u3000\u6d4b\u8bd5", " lead", "trail  ", "x\u00a0y\u2028z\tq\nr",
          "\U0001F600\u00e9!", b"\xc3(x", b"\xe9t\xe9s"]
    labels, splits = [], [0]
    rng = np.random.default_rng(24)
    for x in xs:
        n = len(x.encode() if isinstance(x, str) else x)  # enough for the characters
        labels += list(rng.integers(0, 2, n)) + [1]
        splits.append(len(labels))
    for force in (True, False):
        outs = case("SplitMergeTokenizeWithOffsets force %s" % force, "SplitMergeTokenizeWithOffsets",
                    [S(*xs), I32(labels), I32(splits)], 4, {"force_split_at_break_character": force})
        if all(isinstance(x, str) for x in xs):
            pass
        t, st, en = text.SplitMergeTokenizer().tokenize_with_offsets(
            S(*xs), tf.RaggedTensor.from_row_splits(I32(labels), I64(splits)), force_split_at_break_character=force)
        assert t.flat_values.numpy().tolist() == outs[0].numpy().tolist()
    case("SplitMergeTokenizeWithOffsets all split", "SplitMergeTokenizeWithOffsets",
         [S("ab cd", "e"), I32([0] * 6), I32([0, 5, 6])], 4, {"force_split_at_break_character": False})
    case("SplitMergeTokenizeWithOffsets all merge", "SplitMergeTokenizeWithOffsets",
         [S("ab cd", "e"), I32([1] * 6), I32([0, 5, 6])], 4, {"force_split_at_break_character": False})
    case("SplitMergeTokenizeWithOffsets other labels merge", "SplitMergeTokenizeWithOffsets",
         [S("abcd"), I32([7, -1, 0, 2]), I32([0, 4])], 4)
    case("SplitMergeTokenizeWithOffsets empty batch", "SplitMergeTokenizeWithOffsets",
         [tf.constant([], tf.string), I32([]), I32([0])], 4)
    case("SplitMergeTokenizeWithOffsets few labels", "SplitMergeTokenizeWithOffsets",
         [S("abc"), I32([0, 1]), I32([0, 2])], 4)
    case("SplitMergeTokenizeWithOffsets bad splits", "SplitMergeTokenizeWithOffsets",
         [S("abc", "d"), I32([0, 1, 1, 1]), I32([0, 4])], 4)

    for force in (True, False):
        n, w = len(xs), 12
        lg = rng.normal(size=(n, w, 2)).astype(np.float32)
        outs = case("TokenizerFromLogits force %s" % force, "TokenizerFromLogits",
                    [S(*xs), F32(lg), tf.constant(force)], 4)
        t, st, en = text.SplitMergeFromLogitsTokenizer(force).tokenize_with_offsets(S(*xs), F32(lg))
        assert t.flat_values.numpy().tolist() == outs[0].numpy().tolist()
    case("TokenizerFromLogits ties merge", "TokenizerFromLogits",
         [S("abc de"), F32(np.zeros((1, 6, 2))), tf.constant(False)], 4)
    case("TokenizerFromLogits empty batch", "TokenizerFromLogits",
         [tf.constant([], tf.string), F32(np.zeros((0, 3, 2))), tf.constant(True)], 4)
    case("TokenizerFromLogits few logits", "TokenizerFromLogits",
         [S("abcd"), F32(np.zeros((1, 3, 2))), tf.constant(True)], 4)
    case("TokenizerFromLogits rows", "TokenizerFromLogits",
         [S("ab", "c"), F32(np.zeros((1, 3, 2))), tf.constant(True)], 4)
    case("TokenizerFromLogits last dim", "TokenizerFromLogits",
         [S("ab"), F32(np.zeros((1, 3, 3))), tf.constant(True)], 4)


byte_split()
binarize()
masks()
split_merge()
g.write_unit_header("tftext_more_cases")
