#!/usr/bin/env python3
"""make_string_seeds.py - writes fuzz/seeds/fuzz_graph/issue21_strings.pb: a TF1-style SavedModel whose
one signature reaches every string, regex, Unicode, ragged and crossing kernel of src/ops/regex.c,
text.c, unicode.c, ragged.c and cross.c, so the graph fuzz target mutates their attrs (patterns,
encodings, ngram widths, partition types, AsString formats) and prepares their kernels.
Run: /work/main/build/venv/bin/python tools/make_string_seeds.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_op_seeds import r, save_seed, tf  # noqa: E402


def build():
    s = tf.compat.v1.placeholder(tf.string, [None], name="s")
    i = tf.compat.v1.placeholder(tf.int64, [None], name="i")
    x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
    outs = {}
    outs["srr"] = r.StaticRegexReplace(input=s, pattern=r"(\w+)\s*", rewrite=r"<\1>", replace_global=True)
    outs["rr"] = r.RegexReplace(input=s, pattern=tf.constant("[aeiou]"), rewrite=tf.constant("_"), replace_global=False)
    outs["rfm"] = r.RegexFullMatch(input=s, pattern=tf.constant(".*x.*"))
    sp = r.StringSplitV2(input=s, sep=tf.constant(" "), maxsplit=3)
    outs["split"] = sp.values
    ng = r.StringNGrams(data=sp.values, data_splits=tf.stack([tf.constant(0, tf.int64), tf.size(sp.values, out_type=tf.int64)]), separator="|", ngram_widths=[1, 2],
                        left_pad="<", right_pad=">", pad_width=-1, preserve_short_sequences=False)
    outs["ngrams"] = ng.ngrams
    outs["as_string"] = r.AsString(input=x, precision=2, scientific=False, shortest=False, width=9, fill="0")
    outs["join"] = r.UnsortedSegmentJoin(inputs=s, segment_ids=tf.zeros_like(i), num_segments=tf.constant(2, tf.int64),
                                         separator=",")
    dec = r.UnicodeDecodeWithOffsets(input=s, input_encoding="UTF-8", errors="replace", replacement_char=65533,
                                     replace_control_characters=True)
    outs["dec_offsets"] = dec.char_to_byte_starts
    outs["dec"] = r.UnicodeDecode(input=s, input_encoding="UTF-16-BE", errors="ignore").char_values
    outs["enc"] = r.UnicodeEncode(input_values=dec.char_values, input_splits=dec.row_splits, errors="strict",
                                  output_encoding="UTF-32-BE")
    outs["r2t"] = r.RaggedTensorToTensor(shape=tf.constant([-1, 4], tf.int64), values=dec.char_values,
                                         default_value=tf.constant(0), row_partition_tensors=[dec.row_splits],
                                         row_partition_types=["ROW_SPLITS"])
    outs["r2t_rowids"] = r.RaggedTensorToTensor(shape=tf.constant(-1, tf.int64), values=x, default_value=tf.constant(1.5),
                                                row_partition_tensors=[tf.constant(2, tf.int64), tf.zeros_like(i)],
                                                row_partition_types=["FIRST_DIM_SIZE", "VALUE_ROWIDS"])
    rng = r.RaggedRange(starts=i, limits=i + 3, deltas=tf.constant(1, tf.int64))
    outs["range"] = rng.rt_dense_values
    outs["bincount"] = r.RaggedBincount(splits=rng.rt_nested_splits, values=rng.rt_dense_values,
                                        size=tf.constant(8, tf.int64), weights=tf.constant([], tf.float32),
                                        binary_output=True)
    dense = tf.reshape(s, [-1, 1])
    outs["cross"] = r.SparseCross(indices=[], values=[], shapes=[], dense_inputs=[dense, tf.reshape(i, [-1, 1])],
                                  hashed_output=True, num_buckets=10, hash_key=5, out_type=tf.int64,
                                  internal_type=tf.int64).output_values
    outs["cross_hashed"] = r.SparseCrossHashed(indices=[], values=[], shapes=[], dense_inputs=[dense],
                                               num_buckets=tf.constant(4, tf.int64), strong_hash=tf.constant(False),
                                               salt=tf.constant([1, 2], tf.int64)).output_values
    outs["cross_v2"] = r.SparseCrossV2(indices=[], values=[], shapes=[], dense_inputs=[dense, dense],
                                       sep=tf.constant("_x_")).output_values
    return {"s": s, "i": i, "x": x}, outs


if __name__ == "__main__":
    save_seed(build, "issue21_strings.pb")
