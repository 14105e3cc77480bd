#!/usr/bin/env python3
"""gen_imgsum_cases.py - writes tests/unit/imgsum_cases.h: the ops of session 23's h4 against
TensorFlow 2.21 (TF's CPU kernels, run in graph mode through tf.function: ImageSummary's bad_color
is a tensor attr eager execution cannot pass): ImageSummary (uint8, half, float, double; 1, 3 and 4
channels; bad_color; max_images and its tag naming; TF's float-to-uint8 scaling with negative,
positive, tiny and non-finite pixels), AudioSummaryV2 (max_outputs, the rate input, rank 2 and 3 clips, empty ones), their serialized Summary protos byte for byte and
TF's errors (AudioSummary, the V1 op, TF 2.21 refuses: removed in GraphDef version 15); Unbatch and UnbatchGrad run alone (their reassembly by batch_index and id), and
Batch's deterministic answers (a request of 0 rows, its errors). Batch's outputs for a real
request carry a random id: test_ops_imgsum checks those by hand.

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_imgsum_cases.py
"""
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402

A = g.A
nan, inf = float("nan"), float("inf")
f16, f32, f64, u8, i32, i64 = np.float16, np.float32, np.float64, np.uint8, np.int32, np.int64
rng = np.random.default_rng(23)
_raw = tf.raw_ops


class _GraphOps:
    """ImageSummary run inside a tf.function (eager execution cannot pass its tensor attr); a
    shape function's refusal at trace time becomes an InvalidArgumentError (the cases that reach
    it give err_needle: ours is the kernel's message). Other ops run eagerly."""

    def __getattr__(self, name):
        f = getattr(_raw, name)

        @functools.wraps(f)
        def w(**kw):
            try:
                return tf.function(lambda: f(**kw))() if name == "ImageSummary" else f(**kw)
            except ValueError as e:
                raise tf.errors.InvalidArgumentError(None, None, str(e))
            except (tf.errors.AlreadyExistsError, tf.errors.DeadlineExceededError) as e:  # case() takes these four kinds
                raise tf.errors.InvalidArgumentError(None, None, e.message)
        return w


_attr_text = g.attr_text


def attr_text(key, v):
    if isinstance(v, np.ndarray):  # a tensor attr (bad_color)
        dims = " ".join("dim { size: %d }" % d for d in v.shape)
        vals = " ".join("int_val: %d" % x for x in v.ravel())
        return 'attr { key: "%s" value { tensor { dtype: %s tensor_shape { %s } %s } } }' % (
            key, g.TF_ENUM[tf.as_dtype(v.dtype)], dims, vals)
    return _attr_text(key, v)


g.attr_text = attr_text
g.tf.raw_ops = _GraphOps()


def case(name, op, inputs, attrs=None, err_needle=None):
    attrs = dict(attrs or {})
    tf_attrs = {k: tf.make_tensor_proto(v) for k, v in attrs.items() if isinstance(v, np.ndarray)}
    if op in ("Batch", "Unbatch", "UnbatchGrad"):  # eager kernels share resources by name: one each
        attrs["shared_name"] = "c%d" % len(g.CASES)
    g.case(name, op, inputs, attrs, tf_attrs, err_needle)


def S(x):
    return np.array(x, dtype=object)


def U(*shape, dt=f32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dt)


def image():
    for dt in (f16, f32, f64):
        n = np.dtype(dt).name
        case("ImageSummary %s signed" % n, "ImageSummary", [("tag", S(b"img")), ("tensor", U(2, 3, 4, 3, dt=dt, lo=-3, hi=2))])
        case("ImageSummary %s positive" % n, "ImageSummary", [("tag", S(b"img")), ("tensor", U(2, 2, 5, 1, dt=dt, lo=0, hi=7))])
        case("ImageSummary %s rgba" % n, "ImageSummary", [("tag", S(b"a/b")), ("tensor", U(1, 3, 3, 4, dt=dt, lo=-1, hi=9))])
        x = U(2, 3, 3, 3, dt=dt, lo=-2, hi=2)
        x[0, 0, 1, 2] = nan
        x[0, 2, 2, 0] = inf
        x[1, 1, 1, 1] = -inf
        x[1, 0, 0, 0] = 50.0  # the largest |v|: other pixels' scale
        case("ImageSummary %s nonfinite" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", x)])
        case("ImageSummary %s nonfinite bad_color" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", x)],
             {"bad_color": A([0, 255, 7, 1, 99], u8)})
        case("ImageSummary %s all nan" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", np.full([1, 2, 2, 1], nan, dt))])
        case("ImageSummary %s zeros" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", np.zeros([1, 2, 2, 3], dt))])
        case("ImageSummary %s tiny" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", A([[[[1e-7], [5e-7]], [[0], [2e-7]]]], dt))])
        case("ImageSummary %s tiny negative" % n, "ImageSummary", [("tag", S(b"t")),
                                                                  ("tensor", A([[[[-1e-7], [5e-7]], [[0], [2e-7]]]], dt))])
        case("ImageSummary %s exact" % n, "ImageSummary", [("tag", S(b"t")),
                                                          ("tensor", A([[[[0], [1], [2], [3]], [[254], [255], [127], [128]]]], dt))])
        case("ImageSummary %s negative exact" % n, "ImageSummary",
             [("tag", S(b"t")), ("tensor", A([[[[-127], [-1], [0], [1]], [[126], [127], [-0.5], [64]]]], dt))])
        case("ImageSummary %s short bad_color" % n, "ImageSummary", [("tag", S(b"t")), ("tensor", U(1, 2, 2, 3, dt=dt))],
             {"bad_color": A([1, 2], u8)})
    big = U(1, 40, 50, 3, lo=-1, hi=1)
    case("ImageSummary float 40x50", "ImageSummary", [("tag", S(b"big")), ("tensor", big)])
    for c in (1, 3, 4):
        case("ImageSummary uint8 c%d" % c, "ImageSummary",
             [("tag", S(b"u")), ("tensor", rng.integers(0, 256, [3, 4, 5, c]).astype(u8))])
    u = rng.integers(0, 256, [5, 2, 3, 1]).astype(u8)
    for mi in (1, 2, 3, 5, 9):
        case("ImageSummary max_images %d" % mi, "ImageSummary", [("tag", S(b"m")), ("tensor", u)], {"max_images": mi})
    case("ImageSummary max_images 1 of 1", "ImageSummary", [("tag", S(b"one")), ("tensor", u[:1])], {"max_images": 1})
    case("ImageSummary empty tag", "ImageSummary", [("tag", S(b"")), ("tensor", u[:1])])
    case("ImageSummary uint8 bad_color ignored", "ImageSummary", [("tag", S(b"u")), ("tensor", u[:2])], {"bad_color": A([1], u8)})
    case("ImageSummary batch 0", "ImageSummary", [("tag", S(b"z")), ("tensor", np.zeros([0, 2, 2, 3], f32))])
    case("ImageSummary h 0", "ImageSummary", [("tag", S(b"z")), ("tensor", np.zeros([1, 0, 3, 1], f32))])
    case("ImageSummary w 0 uint8", "ImageSummary", [("tag", S(b"z")), ("tensor", np.zeros([2, 3, 0, 1], u8))])
    case("ImageSummary 2 channels", "ImageSummary", [("tag", S(b"z")), ("tensor", np.zeros([1, 2, 2, 2], f32))],
         err_needle="Tensor must be 4-D with last dim 1, 3, or 4, not [1,2,2,2]")
    case("ImageSummary rank 3", "ImageSummary", [("tag", S(b"z")), ("tensor", np.zeros([2, 2, 3], f32))],
         err_needle="Tensor must be 4-D with last dim 1, 3, or 4, not [2,2,3]")
    case("ImageSummary tag vector", "ImageSummary", [("tag", S([b"a"])), ("tensor", np.zeros([1, 2, 2, 1], f32))],
         err_needle="Tags must be a scalar")


def audio():
    clip = np.concatenate([U(2, 9, 2, lo=-1.2, hi=1.2), np.full([2, 1, 2], nan, f32)], axis=1)
    clip[0, 0, 0], clip[0, 1, 1], clip[1, 2, 0], clip[1, 3, 1] = 1.0, -1.0, 0.5 / 32768, 1.5 / 32768
    for mo in (1, 2, 3, 4):
        case("AudioSummaryV2 max_outputs %d" % mo, "AudioSummaryV2",
             [("tag", S(b"snd")), ("tensor", clip), ("sample_rate", A(16000.0))], {"max_outputs": mo})
    case("AudioSummaryV2 rank 2", "AudioSummaryV2", [("tag", S(b"r2")), ("tensor", U(3, 7)), ("sample_rate", A(8000.0))])
    for r in (0.4, 0.5, 1.5, 2.5, 8000.7, 1e9, 5e9):
        case("AudioSummaryV2 rate %g" % r, "AudioSummaryV2", [("tag", S(b"r")), ("tensor", U(1, 3, 1)), ("sample_rate", A(r))])
    case("AudioSummaryV2 rate [1]", "AudioSummaryV2", [("tag", S(b"r")), ("tensor", U(1, 3)), ("sample_rate", A([300.0]))])
    for r in (0.0, -5.0, nan):
        case("AudioSummaryV2 rate %g" % r, "AudioSummaryV2", [("tag", S(b"r")), ("tensor", U(1, 3)), ("sample_rate", A(r))])
    case("AudioSummaryV2 rate [2]", "AudioSummaryV2", [("tag", S(b"r")), ("tensor", U(1, 3)), ("sample_rate", A([1.0, 2.0]))])
    case("AudioSummaryV2 batch 0", "AudioSummaryV2", [("tag", S(b"e")), ("tensor", np.zeros([0, 3, 2], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 frames 0", "AudioSummaryV2", [("tag", S(b"e")), ("tensor", np.zeros([2, 0, 2], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 channels 0", "AudioSummaryV2", [("tag", S(b"e")), ("tensor", np.zeros([1, 3, 0], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 frames 0 channels 0", "AudioSummaryV2",
         [("tag", S(b"e")), ("tensor", np.zeros([1, 0, 0], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 rank 1", "AudioSummaryV2", [("tag", S(b"e")), ("tensor", np.zeros([4], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 rank 4", "AudioSummaryV2", [("tag", S(b"e")), ("tensor", np.zeros([1, 2, 2, 1], f32)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 tag vector", "AudioSummaryV2", [("tag", S([b"a", b"b"])), ("tensor", U(1, 3)), ("sample_rate", A(8e3))])
    case("AudioSummaryV2 empty tag", "AudioSummaryV2", [("tag", S(b"")), ("tensor", U(1, 3)), ("sample_rate", A(8e3))], {"max_outputs": 1})


def batching():
    x = np.arange(12, dtype=f32).reshape(4, 3)
    BA = {"num_batch_threads": 1, "max_batch_size": 4, "batch_timeout_micros": 1000, "grad_timeout_micros": 1000000}
    case("Batch 0 rows", "Batch", [("in_tensors", [np.zeros([0, 3], f32), np.zeros([0], i32)])], BA)
    case("Batch too large", "Batch", [("in_tensors", [np.zeros([5, 1], f32)])], BA)
    for nm, kw in (("num_batch_threads 0", {"num_batch_threads": 0}), ("allowed last", {"allowed_batch_sizes": [2, 3]}),
                   ("allowed order", {"allowed_batch_sizes": [3, 2, 4]})):
        case("Batch " + nm, "Batch", [("in_tensors", [np.zeros([2, 1], f32)])], dict(BA, **kw))
    case("Batch unequal rows", "Batch", [("in_tensors", [np.zeros([2], f32), np.zeros([3], f32)])], BA)
    UA = {"timeout_micros": 1000000}
    for dt in (f32, f64, i32, i64, u8, f16):
        case("Unbatch %s own piece" % np.dtype(dt).name, "Unbatch",
             [("batched_tensor", x.astype(dt)), ("batch_index", A([[5, 0, 1], [6, 1, 3]], i64)), ("id", A(6, i64))], UA)
    case("Unbatch string", "Unbatch", [("batched_tensor", S([b"a", b"bc", b"", b"d"])), ("batch_index", A([[7, 0, 3]], i64)),
                                       ("id", A(7, i64))], UA)
    case("Unbatch bool rank 3", "Unbatch", [("batched_tensor", np.arange(16).reshape(4, 2, 2) % 3 == 0),
                                            ("batch_index", A([[1, 0, 2], [2, 2, 3], [3, 3, 4]], i64)), ("id", A(2, i64))], UA)
    case("Unbatch whole", "Unbatch", [("batched_tensor", x), ("batch_index", A([[9, 0, 4]], i64)), ("id", A(9, i64))], UA)
    case("Unbatch padded", "Unbatch", [("batched_tensor", x), ("batch_index", A([[9, 0, 3]], i64)), ("id", A(9, i64))], UA)
    case("Unbatch sizes not starts", "Unbatch", [("batched_tensor", x), ("batch_index", A([[1, 3, 4], [2, 0, 2]], i64)),
                                                 ("id", A(2, i64))], UA)
    case("Unbatch empty piece", "Unbatch", [("batched_tensor", x), ("batch_index", A([[1, 0, 0], [2, 0, 2]], i64)),
                                            ("id", A(1, i64))], UA)
    case("Unbatch sum too big", "Unbatch", [("batched_tensor", x), ("batch_index", A([[5, 0, 3], [6, 0, 2]], i64)),
                                            ("id", A(6, i64))], UA)
    case("Unbatch index cols", "Unbatch", [("batched_tensor", x), ("batch_index", A([[5, 0, 3, 4]], i64)), ("id", A(5, i64))], UA)
    case("Unbatch index rows", "Unbatch", [("batched_tensor", x[:1]), ("batch_index", A([[5, 0, 1], [6, 1, 1]], i64)),
                                           ("id", A(5, i64))], UA)
    case("Unbatch id vector", "Unbatch", [("batched_tensor", x), ("batch_index", A([[5, 0, 1]], i64)), ("id", A([5, 5], i64))], UA)
    case("Unbatch repeated key", "Unbatch", [("batched_tensor", x), ("batch_index", A([[5, 0, 1], [6, 1, 2], [5, 2, 3]], i64)),
                                             ("id", A(6, i64))], UA)
    GA = {}
    for dt in (f32, f64, i32, f16):
        case("UnbatchGrad %s one task" % np.dtype(dt).name, "UnbatchGrad",
             [("original_input", x.astype(dt)), ("batch_index", A([[5, 0, 4]], i64)), ("grad", (x + 1).astype(dt)),
              ("id", A(5, i64))], GA)
    case("UnbatchGrad padded", "UnbatchGrad", [("original_input", x), ("batch_index", A([[5, 0, 3]], i64)), ("grad", x[:3] * 2),
                                               ("id", A(5, i64))], GA)
    case("UnbatchGrad no input", "UnbatchGrad", [("original_input", np.zeros([0, 3], f32)), ("batch_index", np.zeros([0, 3], i64)),
                                                 ("grad", x[:2]), ("id", A(5, i64))], GA)
    case("UnbatchGrad input without index", "UnbatchGrad", [("original_input", x), ("batch_index", np.zeros([0, 3], i64)),
                                                            ("grad", x), ("id", A(5, i64))], GA)
    case("UnbatchGrad id vector", "UnbatchGrad", [("original_input", x), ("batch_index", A([[5, 0, 4]], i64)), ("grad", x),
                                                  ("id", A([5, 6], i64))], GA)
    case("UnbatchGrad index elements", "UnbatchGrad", [("original_input", x), ("batch_index", A([5, 0, 4], i64)), ("grad", x),
                                                       ("id", A(5, i64))], GA)


def main():
    image()
    audio()
    batching()
    g.write_unit_header("imgsum_cases")


if __name__ == "__main__":
    main()
