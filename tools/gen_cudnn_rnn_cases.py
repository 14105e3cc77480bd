#!/usr/bin/env python3
"""gen_cudnn_rnn_cases.py - the cuDNN RNN ops (CudnnRNN, CudnnRNNV2, CudnnRNNV3; src/ops/rnn_cudnn.c)
against TensorFlow. TF's CPU build has no kernel for them, so the expected outputs come from
TF's CPU RNN layers (Keras LSTM / GRU(reset_after=True) / SimpleRNN, eager, use_cudnn=False)
run with the same weights, converted from cuDNN's flat `params` layout (gates i,f,c,o / r,z,n;
input then recurrent matrices [units, in] row-major; the two biases added), one Keras layer per
layer and direction; sequence lengths as a Keras mask, the backward direction over the
reverse_sequence'd input, steps past a row's length zero (cuDNN's padded IO).

Writes:
  tests/unit/cudnn_rnn_cases.h   raw-op cases (tc_case tables; test_ops_cudnn_rnn.c runs them):
      every rnn_mode, dtype (float, double, half, bfloat16), direction, stacked layers,
      time_major both ways, sequence lengths (0, partial, full), V1/V2/V3, empty inputs, and
      errors for bad shapes and a params buffer of the wrong size (our texts: TF has no CPU
      kernel to ask; the shape texts are those of TF's cudnn_rnn_ops.cc).
  tests/fixtures/cudnn_rnn/<name>/  Keras 3 models exported as a GPU machine exports them
      (keras.src.backend.tensorflow.rnn._is_gpu_available patched to True and
      tf.sysconfig.get_build_info()["is_cuda_build"] to True while exporting, so the graph holds
      CudnnRNNV3 with the CUDA build's GRU gate swap), with x.npy and TF's CPU answers
      (the same model and weights, unpatched) want_<output>.npy.
Run: build/venv/bin/python tools/gen_cudnn_rnn_cases.py
"""
import contextlib
import importlib
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
rng = np.random.default_rng(19)
GATES = {"lstm": 4, "gru": 3, "rnn_relu": 1, "rnn_tanh": 1}


def keras_layer(mode, units, dtype):
    kw = dict(return_sequences=True, return_state=True, dtype=dtype)
    if mode == "lstm":
        return keras.layers.LSTM(units, use_cudnn=False, **kw)
    if mode == "gru":
        return keras.layers.GRU(units, use_cudnn=False, reset_after=True, **kw)
    return keras.layers.SimpleRNN(units, activation="relu" if mode == "rnn_relu" else "tanh", **kw)


def set_weights(layer, mode, W, R, bW, bR):
    """W [g, U, in], R [g, U, U], bW/bR [g, U] in cuDNN's gate order -> the Keras layer's weights."""
    order = [1, 0, 2] if mode == "gru" else list(range(W.shape[0]))  # Keras GRU: z, r, h
    kern = np.concatenate([W[i].T for i in order], axis=1)
    rec = np.concatenate([R[i].T for i in order], axis=1)
    if mode == "gru":
        bias = np.stack([np.concatenate([bW[i] for i in order]), np.concatenate([bR[i] for i in order])])
    else:
        bias = np.concatenate([bW[i] + bR[i] for i in order])
    layer.set_weights([kern, rec, bias])


def reference(mode, x, h0, c0, layers, dirs, lens, wdtype):
    """x [T, B, I] time-major; h0/c0 [L*dirs, B, U]; layers[l][d] = (W, R, bW, bR). Returns
    out [T, B, dirs*U], hN, cN, computed by Keras layers in wdtype."""
    T, B = x.shape[0], x.shape[1]
    if T == 0 or B == 0:  # Keras cannot run these: nothing runs, the state passes through
        U = h0.shape[2]
        return np.zeros((T, B, dirs * U), wdtype), h0.astype(wdtype), c0.astype(wdtype)
    inp = np.transpose(x, (1, 0, 2)).astype(wdtype)
    mask = tf.sequence_mask(lens, T)
    hN, cN = np.zeros_like(h0, dtype=wdtype), np.zeros_like(c0, dtype=wdtype)
    for li, dirs_w in enumerate(layers):
        outs = []
        for d in range(dirs):
            W, R, bW, bR = dirs_w[d]
            U = R.shape[1]
            pl = li * dirs + d
            xi = tf.reverse_sequence(inp, lens, seq_axis=1, batch_axis=0) if d else tf.constant(inp)
            lay = keras_layer(mode, U, wdtype)
            init = [tf.constant(h0[pl].astype(wdtype))] + ([tf.constant(c0[pl].astype(wdtype))] if mode == "lstm" else [])
            lay(xi, initial_state=init)  # builds
            set_weights(lay, mode, *(a.astype(wdtype) for a in (W, R, bW, bR)))
            r = lay(xi, initial_state=init, mask=mask)
            seq = r[0] * tf.cast(mask, wdtype)[:, :, None]
            if d:
                seq = tf.reverse_sequence(seq, lens, seq_axis=1, batch_axis=0)
            outs.append(seq.numpy())
            hN[pl] = r[1].numpy()
            if mode == "lstm":
                cN[pl] = r[2].numpy()
        inp = np.concatenate(outs, axis=2)
    return np.transpose(inp, (1, 0, 2)), hN, cN


def rnn_case(name, mode, T, B, I, U, L=1, dirs=1, version=3, time_major=True, lens=None, dt=np.float32,
             op_dt=tf.float32, scale=0.5, extra_attrs=None, bad=None, err=None):
    g_ = GATES[mode]
    layers, mats, biases = [], [], []
    for li in range(L):
        row = []
        for d in range(dirs):
            inn = I if li == 0 else U * dirs
            W = rng.uniform(-scale, scale, (g_, U, inn))
            R = rng.uniform(-scale, scale, (g_, U, U))
            bW = rng.uniform(-scale, scale, (g_, U))
            bR = rng.uniform(-scale, scale, (g_, U))
            row.append((W, R, bW, bR))
            mats += [W.reshape(-1), R.reshape(-1)]
            biases += [bW.reshape(-1), bR.reshape(-1)]
        layers.append(row)
    params = np.concatenate(mats + biases)
    x = rng.uniform(-1, 1, (T, B, I))
    h0 = rng.uniform(-0.5, 0.5, (L * dirs, B, U))
    c0 = rng.uniform(-0.5, 0.5, (L * dirs, B, U)) if mode == "lstm" else np.zeros((0,))
    lens_v = np.full([B], T, np.int32) if lens is None else np.array(lens, np.int32)
    # round the inputs to the op's type first: the reference sees what the op sees

    def rnd(a):
        t = tf.cast(tf.constant(a), op_dt)
        return t, tf.cast(t, tf.float64).numpy()
    xt, x = rnd(x)
    ht, h0 = rnd(h0)
    ct, c0r = rnd(c0 if mode == "lstm" else np.zeros((1,)))
    pt, params = rnd(params)
    # rebuild the layers from the rounded params
    off, boff = 0, sum(m.size for m in mats)
    for li in range(L):
        for d in range(dirs):
            W, R, bW, bR = layers[li][d]
            Wn = params[off:off + W.size].reshape(W.shape); off += W.size
            Rn = params[off:off + R.size].reshape(R.shape); off += R.size
            bWn = params[boff:boff + bW.size].reshape(bW.shape); boff += bW.size
            bRn = params[boff:boff + bR.size].reshape(bR.shape); boff += bR.size
            layers[li][d] = (Wn, Rn, bWn, bRn)
    wdtype = "float64" if op_dt == tf.float64 else "float32"
    outs = []
    if err is None:
        out, hN, cN = reference(mode, x, h0, c0r if mode == "lstm" else np.zeros_like(h0), layers, dirs, lens_v, wdtype)
        if not time_major:
            out, hN, cN = (np.transpose(a, (1, 0, 2)) for a in (out, hN, cN))
        outs = [tf.cast(tf.constant(out), op_dt), tf.cast(tf.constant(hN), op_dt)]
        if mode == "lstm":
            outs.append(tf.cast(tf.constant(cN), op_dt))
    if not time_major:
        xt = tf.transpose(xt, (1, 0, 2))
        ht = tf.transpose(ht, (1, 0, 2))
        if mode == "lstm":
            ct = tf.transpose(ct, (1, 0, 2))
    ins = [xt, ht, ct, pt]
    for i, t in bad or []:  # replace an input: (index, tensor)
        ins[i] = t
    attrs = {"T": op_dt, "rnn_mode": mode, "direction": "bidirectional" if dirs == 2 else "unidirectional"}
    if version == 3:
        attrs["time_major"] = time_major
    attrs.update(extra_attrs or {})
    op = {1: "CudnnRNN", 2: "CudnnRNNV2", 3: "CudnnRNNV3"}[version]
    flat = ins + ([tf.constant(lens_v)] if version == 3 else [])
    node = 'op: "%s" %s' % (op, " ".join(g.attr_text(k, v) for k, v in sorted(attrs.items())))
    g.CASES.append((name, node, flat, outs, err))


def raw_cases():
    for mode in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        rnn_case("%s V3 time-major" % mode, mode, 5, 3, 4, 3)
        rnn_case("%s V3 batch-major lengths" % mode, mode, 5, 3, 4, 3, time_major=False, lens=[5, 2, 0])
        rnn_case("%s V3 bidirectional lengths" % mode, mode, 4, 3, 2, 3, dirs=2, lens=[4, 1, 3])
        rnn_case("%s V3 2 layers bidirectional batch-major" % mode, mode, 4, 2, 3, 2, L=2, dirs=2, time_major=False,
                 lens=[3, 4])
        rnn_case("%s V1 2 layers" % mode, mode, 4, 2, 3, 4, L=2, version=1)
        rnn_case("%s V2 bidirectional" % mode, mode, 3, 2, 3, 2, dirs=2, version=2)
    for mode in ("lstm", "gru"):
        rnn_case("%s V3 float64 bidirectional lengths" % mode, mode, 4, 2, 3, 3, dirs=2, lens=[2, 4], op_dt=tf.float64)
        rnn_case("%s V3 half" % mode, mode, 4, 2, 3, 3, op_dt=tf.float16)
        rnn_case("%s V3 bfloat16" % mode, mode, 3, 2, 3, 2, op_dt=tf.bfloat16)
        rnn_case("%s V3 3 layers units 1" % mode, mode, 6, 1, 2, 1, L=3)
        rnn_case("%s V1 is_training false, dropout ignored" % mode, mode, 3, 2, 2, 3, version=1,
                 extra_attrs={"is_training": False, "dropout": 0.5, "seed": 3})
        rnn_case("%s V3 large weights (saturation)" % mode, mode, 4, 2, 3, 3, scale=8.0)
        rnn_case("%s V3 auto_select input != units" % mode, mode, 3, 2, 2, 3, extra_attrs={"input_mode": "auto_select"})
    # empty: no steps, no batch rows, no input features
    rnn_case("lstm V3 T=0", "lstm", 0, 2, 3, 2)
    rnn_case("gru V3 B=0 batch-major", "gru", 3, 0, 3, 2, time_major=False)
    rnn_case("lstm V3 input_size 0", "lstm", 3, 2, 0, 2)
    rnn_case("gru V3 all lengths 0", "gru", 3, 2, 2, 2, lens=[0, 0])
    # errors (no TF CPU kernel: the texts are TF's shape checks in cudnn_rnn_ops.cc, ours for params)
    f = tf.float32
    rnn_case("err input rank", "lstm", 3, 2, 2, 2, bad=[(0, tf.zeros([3, 2], f))], err="RNN input must be a 3-D vector.")
    rnn_case("err input_h rank", "gru", 3, 2, 2, 2, bad=[(1, tf.zeros([2, 2], f))], err="RNN input_h must be a 3-D vector.")
    rnn_case("err input_h batch", "gru", 3, 2, 2, 2, bad=[(1, tf.zeros([1, 3, 2], f))],
             err="Invalid input_h shape: [1,3,2] [1,2,2]")
    rnn_case("err input_h bidirectional odd", "gru", 3, 2, 2, 2, dirs=2, bad=[(1, tf.zeros([3, 2, 2], f))],
             err="Invalid input_h shape: [3,2,2] [2,2,2]")
    rnn_case("err input_c shape", "lstm", 3, 2, 2, 2, bad=[(2, tf.zeros([1, 2, 3], f))],
             err="input_h and input_c must have the same shape w/o projection: [1,2,2] [1,2,3]")
    rnn_case("err params size", "lstm", 3, 2, 2, 2, bad=[(3, tf.zeros([10], f))],
             err="params has 10 elements; a unidirectional lstm RNN of num_layers 1, num_units 2, input_size 2 takes 48")
    rnn_case("err params size gru 2 layers", "gru", 3, 2, 2, 2, L=2, bad=[(3, tf.zeros([50], f))],
             err="takes 72 (cuDNN's layout)")
    rnn_case("err no layers", "rnn_tanh", 3, 2, 2, 2, bad=[(1, tf.zeros([0, 2, 2], f))], err="gives no layer")
    rnn_case("err skip_input", "gru", 3, 2, 2, 2, extra_attrs={"input_mode": "skip_input"},
             err="input_mode skip_input (cuDNN's skip input")
    rnn_case("err auto_select input == units", "gru", 3, 2, 2, 2, extra_attrs={"input_mode": "auto_select"},
             err="input_mode auto_select")
    rnn_case("err num_proj", "lstm", 3, 2, 2, 2, extra_attrs={"num_proj": 1}, err="num_proj 1")
    # V3 sequence_lengths: out of range, wrong count
    rnn_case("err seq length > T", "gru", 3, 2, 2, 2, lens=[3, 4], err="sequence_lengths[1] = 4 is outside [0, 3]")
    rnn_case("err seq length negative", "lstm", 3, 2, 2, 2, lens=[-1, 2], err="sequence_lengths[0] = -1 is outside")
    rnn_case("err seq lengths count", "lstm", 3, 2, 2, 2, lens=[1, 2, 3], err="sequence_lengths must be an int32 vector of the batch size 2")


@contextlib.contextmanager
def gpu_trace():
    """What a CUDA machine with a visible GPU looks like to Keras 3 while tracing."""
    krnn = importlib.import_module("keras.src.backend.tensorflow.rnn")
    old, old_info = krnn._is_gpu_available, tf.sysconfig.get_build_info
    info = dict(old_info())
    info["is_cuda_build"] = True
    krnn._is_gpu_available = lambda: True
    tf.sysconfig.get_build_info = lambda: info
    try:
        yield
    finally:
        krnn._is_gpu_available, tf.sysconfig.get_build_info = old, old_info


def keras_models():
    """Small Keras 3 models exported GPU-style; the answers are the unpatched CPU path's."""
    out_root = os.path.join(ROOT, "tests", "fixtures", "cudnn_rnn")
    shutil.rmtree(out_root, ignore_errors=True)
    os.makedirs(out_root)
    keras.utils.set_random_seed(19)
    L = keras.layers

    # 1: masked (right-padded) sequences through a Bidirectional LSTM (return_sequences), a
    #    go_backwards GRU returning its state, and an LSTM over the whole thing: every Keras path
    #    around CudnnRNNV3 (reverse_sequence, sequence_lengths, last output = state)
    inp = keras.Input((6, 3), name="x")
    m = L.Masking(0.0)(inp)
    a = L.Bidirectional(L.LSTM(3, return_sequences=True))(m)
    b, bh = L.GRU(2, go_backwards=True, return_state=True)(a)
    c = L.LSTM(2, return_sequences=True)(a)
    model = keras.Model(inp, {"gru_last": b, "gru_state": bh, "lstm_seq": c})
    x = rng.uniform(-1, 1, (3, 6, 3)).astype(np.float32)
    x[0, 4:] = 0  # row 0: length 4, row 1: length 6, row 2: length 1
    x[2, 1:] = 0
    export(model, "keras_masked", out_root, x, lengths=[4, 6, 1])

    # 2: no mask: a stacked GRU -> LSTM (return_sequences and state), batch-major as Keras traces it
    inp = keras.Input((5, 4), name="x")
    s = L.GRU(3, return_sequences=True)(inp)
    o, h, cc = L.LSTM(3, return_state=True)(s)
    model = keras.Model(inp, {"out": o, "h": h, "c": cc})
    export(model, "keras_stacked", out_root, rng.uniform(-1, 1, (2, 5, 4)).astype(np.float32))


def export(model, name, out_root, x, lengths=None):
    """The model traced GPU-style, its variables frozen into constants (a few KB instead of the
    ~100 KB of model.export's two endpoints), saved as a TF1 SavedModel: signature serving_default,
    input x, the model's outputs. want_<k>.npy: the CPU path's answers; where `lengths` is given,
    steps of a sequence output past a row's length are 0, as the cuDNN path gives them (Keras's CPU
    path repeats the last valid output there: keras/src/backend/tensorflow/rnn.py notes the
    difference)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    d = os.path.join(out_root, name)
    os.makedirs(d)
    want = {k: v.numpy() for k, v in model(x).items()}
    if lengths is not None:
        mask = (np.arange(x.shape[1])[None, :] < np.array(lengths)[:, None]).astype(np.float32)
        want = {k: v * mask[:, :, None] if v.ndim == 3 else v for k, v in want.items()}
    with gpu_trace():
        f = tf.function(lambda t: model(t)).get_concrete_function(tf.TensorSpec((None,) + x.shape[1:], tf.float32))
    frozen = convert_variables_to_constants_v2(f)
    gd = frozen.graph.as_graph_def()
    ops = {n.op for n in gd.node} | {n.op for fn in gd.library.function for n in fn.node_def}
    assert "CudnnRNNV3" in ops, sorted(ops)
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as sess:
        xin = v1.placeholder(tf.float32, (None,) + x.shape[1:], name="x")
        outs = tf.import_graph_def(gd, input_map={frozen.inputs[0].name: xin},
                                   return_elements=[t.name for t in frozen.outputs], name="m")
        keys = sorted(want)  # the structured outputs come flattened in sorted key order
        sig = v1.saved_model.signature_def_utils.predict_signature_def({"x": xin}, dict(zip(keys, outs)))
        b = v1.saved_model.Builder(os.path.join(d, "model"))
        b.add_meta_graph_and_variables(sess, [v1.saved_model.SERVING], signature_def_map={"serving_default": sig})
        b.save()
    np.save(os.path.join(d, "x.npy"), x)
    for k, v in want.items():
        np.save(os.path.join(d, "want_%s.npy" % k), v)
    print("wrote", d, sorted(want))


def main():
    raw_cases()
    g.write_unit_header("cudnn_rnn_cases")
    keras_models()


if __name__ == "__main__":
    main()
