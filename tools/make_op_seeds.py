#!/usr/bin/env python3
"""make_op_seeds.py - writes fuzz/seeds/fuzz_graph/issue21_ops.pb: the saved_model.pb of a TF1-style
SavedModel whose one signature reaches every
op issue 21 added (random, unary/binary math, complex and FFT, Unique/Bincount/CTC), so the graph
fuzz target's corpus (fuzz/make_corpus.sh copies fuzz/seeds/<target>/) mutates their attrs and
prepares their kernels. The zoo (tools/make_zoo.py) does not reach them.
Run: /work/main/build/venv/bin/python tools/make_op_seeds.py
"""
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()
r = tf.raw_ops


def build():
    x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
    i = tf.compat.v1.placeholder(tf.int32, [None], name="i")
    outs = {}
    seed = tf.constant([1, 2], tf.int64)
    kc = r.StatelessRandomGetKeyCounter(seed=seed)
    alg = r.StatelessRandomGetAlg()
    sh = tf.constant([2, 3])
    outs["su"] = r.StatelessRandomUniform(shape=sh, seed=seed)
    outs["sn"] = r.StatelessRandomNormal(shape=sh, seed=seed, dtype=tf.float16)
    outs["st"] = r.StatelessTruncatedNormal(shape=sh, seed=seed, dtype=tf.float64)
    outs["si"] = r.StatelessRandomUniformInt(shape=sh, seed=seed, minval=0, maxval=10)
    outs["sf"] = r.StatelessRandomUniformFullInt(shape=sh, seed=seed, dtype=tf.uint64)
    outs["su2"] = r.StatelessRandomUniformV2(shape=sh, key=kc.key, counter=kc.counter, alg=alg)
    outs["sn2"] = r.StatelessRandomNormalV2(shape=sh, key=kc.key, counter=kc.counter, alg=alg, dtype=tf.bfloat16)
    outs["st2"] = r.StatelessTruncatedNormalV2(shape=sh, key=kc.key, counter=kc.counter, alg=alg)
    outs["si2"] = r.StatelessRandomUniformIntV2(shape=sh, key=kc.key, counter=kc.counter, alg=alg,
                                                minval=tf.constant(0, tf.int64), maxval=tf.constant(9, tf.int64))
    outs["sf2"] = r.StatelessRandomUniformFullIntV2(shape=sh, key=kc.key, counter=kc.counter, alg=alg, dtype=tf.int32)
    outs["kca"] = r.StatelessRandomGetKeyCounterAlg(seed=seed).alg
    outs["ru"] = r.RandomUniform(shape=sh, dtype=tf.float32, seed=3, seed2=4)
    outs["rn"] = r.RandomStandardNormal(shape=sh, dtype=tf.float32, seed=3, seed2=5)
    outs["rt"] = r.TruncatedNormal(shape=sh, dtype=tf.float32, seed=3, seed2=6)
    outs["ri"] = r.RandomUniformInt(shape=sh, minval=0, maxval=5, seed=3, seed2=7)
    for op in ("Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Lgamma Digamma Erfinv Ndtri Rint IsInf Inv "
               "BesselI0e BesselI1e").split():
        outs[op] = getattr(r, op)(x=x)
    for op in "Atan2 Xlogy Xdivy Xlog1py TruncateDiv TruncateMod Igamma Igammac".split():
        a, b = ("y", "x") if op == "Atan2" else ("a", "x") if op.startswith("Igamma") else ("x", "y")
        outs[op] = getattr(r, op)(**{a: x, b: x})
    s0, s1 = tf.shape(x), tf.shape(i)
    outs["ba"] = r.BroadcastArgs(s0=s0, s1=s1)
    outs["bga"] = r.BroadcastGradientArgs(s0=s0, s1=s1).r0
    z = r.Complex(real=x, imag=x)
    for op in ("Real", "Imag", "Angle"):
        outs[op] = getattr(r, op)(input=z)
    outs["ComplexAbs"] = r.ComplexAbs(x=z)
    outs["Conj"] = r.Conj(input=z)
    outs["cast"] = tf.cast(z, tf.complex128)
    for op in ("FFT", "IFFT", "FFT2D", "IFFT2D"):
        outs[op] = getattr(r, op)(input=z)
    z3 = tf.reshape(z, [-1, 2, 2, 2])
    outs["FFT3D"] = r.FFT3D(input=z3)
    outs["IFFT3D"] = r.IFFT3D(input=z3)
    outs["RFFT"] = r.RFFT(input=x, fft_length=[8])
    outs["IRFFT"] = r.IRFFT(input=z, fft_length=[8])
    outs["RFFT2D"] = r.RFFT2D(input=x, fft_length=[1, 8])
    outs["IRFFT2D"] = r.IRFFT2D(input=z, fft_length=[1, 8])
    x3 = tf.reshape(x, [-1, 2, 2, 2])
    outs["RFFT3D"] = r.RFFT3D(input=x3, fft_length=[2, 2, 2])
    outs["IRFFT3D"] = r.IRFFT3D(input=tf.reshape(z, [-1, 2, 2, 2]), fft_length=[2, 2, 2])
    outs["Unique"] = r.Unique(x=i).y
    outs["UniqueV2"] = r.UniqueV2(x=x, axis=tf.constant([1], tf.int64)).idx
    outs["UniqueWithCounts"] = r.UniqueWithCounts(x=i).count
    outs["UniqueWithCountsV2"] = r.UniqueWithCountsV2(x=x, axis=tf.constant([0])).count
    outs["Bincount"] = r.Bincount(arr=i, size=5, weights=tf.constant([], tf.float32))
    outs["DenseBincount"] = r.DenseBincount(input=i, size=5, weights=tf.constant([], tf.float32), binary_output=True)
    ctc = r.CTCGreedyDecoder(inputs=tf.reshape(x, [2, -1, 4]), sequence_length=tf.fill([tf.shape(x)[0] // 1], 2),
                             merge_repeated=True, blank_index=0)
    outs["ctc"] = ctc.log_probability
    return {"x": x, "i": i}, outs


def save_seed(build_fn, name):
    """Builds build_fn's graph (it returns its inputs and outputs) into a TF1 SavedModel and copies its
    saved_model.pb to fuzz/seeds/fuzz_graph/<name> (tools/make_string_seeds.py and make_image_seeds.py use this too)."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    g = tf.Graph()
    with g.as_default():
        ins, outs = build_fn()
        with tf.compat.v1.Session() as sess:
            tmp = tempfile.mkdtemp()
            d = os.path.join(tmp, "m")
            b = tf.compat.v1.saved_model.Builder(d)
            sig = tf.compat.v1.saved_model.predict_signature_def(ins, outs)
            b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": sig},
                                           strip_default_attrs=True)
            b.save(as_text=False)
            shutil.copy(os.path.join(d, "saved_model.pb"), os.path.join(root, "fuzz/seeds/fuzz_graph", name))
            shutil.rmtree(tmp)
    print("wrote fuzz/seeds/fuzz_graph/" + name)


def main():
    save_seed(build, "issue21_ops.pb")

if __name__ == "__main__":
    main()
