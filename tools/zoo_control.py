"""The zoo's control-flow and recurrent builders: TF2 functional loops and branches (While, If, Case,
map_fn, scan), Keras recurrent layers (While over TensorLists), and TF1 graph-mode control flow
(Switch / Merge / Enter / Exit / NextIteration frames, TensorArrayV3) saved with the v1 Builder.
Each writes one SavedModel and returns its description for make_zoo.py (see the builder contract there)."""

from zoo_common import SEED, _how_text, _keras, _keras_out, _keras_version, _rng, _tf, _v1_builder_save  # noqa: F401


def build_tf2_while(model_dir):
    tf = _tf()
    import numpy as np

    class Loops(tf.Module):
        def __init__(self):
            super().__init__(name="loops")
            self.scale = tf.Variable(1.5, name="scale")  # read inside a loop body (a resource loop input)

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="n"),
                                      tf.TensorSpec([None], tf.float32, name="x")])
        def loop(self, n, x):
            def body(i, acc):
                return i + 1, acc * self.scale + tf.cast(i, tf.float32)
            i, acc = tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), x])
            return {"i": i, "acc": acc}

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="n"),
                                      tf.TensorSpec([None], tf.float32, name="x")])
        def nested(self, n, x):
            def outer(i, acc):
                # inner trip count min(i, 3): Keras-style maximum_iterations
                _, acc = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x * tf.cast(j, tf.float32)),
                                       [tf.constant(0), acc], maximum_iterations=3)
                return i + 1, acc
            i, acc = tf.while_loop(lambda i, acc: i < n, outer, [tf.constant(0), tf.zeros_like(x)])
            return {"i": i, "acc": acc}

    m = Loops()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.loop, "nested": m.nested})
    return {"style": "tf2",
            "description": "tf.while_loop in tf.function (While/StatelessWhile): serving_default "
                           "n int32, x[?] f32 -> i (= n), acc (acc = acc * scale + i, n times; scale a "
                           "variable read in the body); nested n, x -> i, acc (outer loop of n steps, "
                           "inner loop of min(i, 3) steps via maximum_iterations adding x * j).",
            "inputs": {"serving_default": {"n": np.int32(5)}, "nested": {"n": np.int32(6)}}}


def build_tf2_cond_case(model_dir):
    tf = _tf()
    import numpy as np

    class Branches(tf.Module):
        def __init__(self):
            super().__init__(name="branches")
            self.bias = tf.Variable([0.5, -0.5], name="bias")

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def cond(self, x):
            s = tf.reduce_sum(x)
            return {"pos": tf.cond(s > 0.0, lambda: x * 2.0, lambda: -x),
                    "neg": tf.cond(s <= 0.0, lambda: x * 2.0, lambda: -x),
                    "stateful": tf.cond(s > 0.0, lambda: x + self.bias, lambda: x - self.bias)}

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="k"),
                                      tf.TensorSpec([None, 2], tf.float32, name="x")])
        def switch(self, k, x):
            fns = [lambda: x + 1.0, lambda: x * x, lambda: x - 3.0]
            return {"at_k": tf.switch_case(k, fns), "at_k1": tf.switch_case(k + 1, fns),
                    "out_of_range": tf.switch_case(k - 5, fns),
                    "with_var": tf.switch_case(k, [lambda: x * self.bias, lambda: x + self.bias])}

    m = Branches()
    tf.saved_model.save(m, model_dir, signatures={"cond": m.cond, "switch": m.switch})
    return {"style": "tf2",
            "description": "tf.cond and tf.switch_case in tf.function (StatelessIf/If, "
                           "StatelessCase/Case): cond x[?,2] -> pos, neg (both ways of sum(x) > 0), "
                           "stateful (a branch reading a variable); switch k int32, x -> at_k, at_k1, "
                           "out_of_range (k - 5: the last branch), with_var (branches read a variable).",
            "inputs": {"switch": {"k": np.int32(1)}}}


def _masked_seq(rng, batch, steps=6, feats=4):
    """A float batch [batch, steps, feats] with all-zero timesteps for Masking(0.0): row 0 padded at
    the end (last 2 steps), row 1 a hole in the middle (step 2), row 2 the first step."""
    import numpy as np
    x = rng.standard_normal((batch, steps, feats)).astype(np.float32)
    x[0, steps - 2:] = 0.0
    if batch > 1:
        x[1, 2] = 0.0
    if batch > 2:
        x[2, 0] = 0.0
    return x


def build_keras_rnn(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(6, 4), name="seq")
    m = keras.Model(x, {"simple_rnn": L.SimpleRNN(5, name="simple_rnn")(x),
                        "lstm": L.LSTM(5, name="lstm")(x),
                        "gru": L.GRU(5, name="gru")(x),
                        "gru_v1": L.GRU(5, reset_after=False, name="gru_v1")(x)}, name="rnn")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 6, 4), "float32"))
    return {"style": style,
            "description": "Keras recurrent layers (While over TensorLists, not unrolled) on "
                           "seq[?,6,4], one output each: SimpleRNN(5), LSTM(5), GRU(5) "
                           "(reset_after=True), GRU(5, reset_after=False); " + _how_text("export")
                           + "."}


def build_keras_rnn_seq(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    x = keras.Input(shape=(6, 4), name="seq")
    seq, h, c = L.LSTM(3, return_sequences=True, return_state=True, name="lstm_seq")(x)
    stacked = L.LSTM(3, name="stacked_2")(L.LSTM(4, return_sequences=True, name="stacked_1")(x))
    bidir = L.Bidirectional(L.LSTM(3), name="bidir")(x)
    masked = L.LSTM(3, name="masked_lstm")(L.Masking(0.0, name="mask")(x))
    cells = L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)]), name="stacked_cells")(x)
    m = keras.Model(x, {"sequences": seq, "state_h": h, "state_c": c, "stacked": stacked,
                        "bidir": bidir, "masked": masked, "stacked_cells": cells}, name="rnn_seq")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 6, 4), "float32"))
    seq = _masked_seq(_rng(SEED + 5), 2)
    return {"style": style,
            "description": "Keras recurrent variants on seq[?,6,4]: LSTM(3, return_sequences, "
                           "return_state) -> sequences, state_h, state_c; stacked LSTM(4, "
                           "return_sequences) -> LSTM(3); Bidirectional(LSTM(3)) (concat); "
                           "Masking(0.0) -> LSTM(3) (golden inputs have all-zero timesteps at the "
                           "end, the middle and the start of rows); RNN(StackedRNNCells([LSTMCell(3), "
                           "GRUCell(2)])); " + _how_text("export") + ".",
            "inputs": {"serve": {"seq": seq}, "serving_default": {"seq": seq}},
            "batch_inputs": lambda key, alias, n, rng: _masked_seq(rng, n)}


def build_keras_text_lstm(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    m = keras.Sequential([
        keras.Input(shape=(7,), dtype="int32", name="tokens"),
        L.Embedding(12, 4, mask_zero=True, name="embedding"),
        L.LSTM(5, name="lstm"),
        L.Dense(3, activation="softmax", name="probs"),
    ], name="text_lstm")
    style = _keras_out(m, model_dir, "export", np.zeros((1, 7), "int32"))
    tokens = np.array([[3, 7, 1, 9, 2, 0, 0], [5, 11, 4, 8, 6, 10, 2]], np.int32)
    return {"style": style,
            "description": "Keras Sequential text classifier: tokens[?,7] int32 -> Embedding(12,4, "
                           "mask_zero) -> LSTM(5) -> Dense(3, softmax); token 0 is padding (masked), "
                           "the main golden pads row 0 at the end; " + _how_text("export") + ".",
            "inputs": {"serve": {"tokens": tokens}, "serving_default": {"tokens": tokens}}}


def build_tf2_map_scan(model_dir):
    tf = _tf()
    import numpy as np

    class MapScan(tf.Module):
        def __init__(self):
            super().__init__(name="map_scan")
            self.w = tf.Variable([0.5, -1.0, 2.0], name="w")  # read inside the mapped function

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def map(self, x):
            dot = tf.map_fn(lambda r: tf.reduce_sum(r * self.w), x)
            sq, pos = tf.map_fn(lambda r: (r * r + 1.0, tf.cast(r > 0.0, tf.int32)), x,
                                fn_output_signature=(tf.float32, tf.int32))
            return {"dot": dot, "squared": sq, "positive": pos}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="v")])
        def scan(self, v):
            cumsum = tf.scan(lambda a, e: a + e, v)
            s, p = tf.scan(lambda acc, e: (acc[0] + e, acc[1] * e), v,
                           initializer=(tf.constant(1.0), tf.constant(1.0)))
            rev = tf.scan(lambda a, e: 0.5 * a + e, v, reverse=True)
            return {"cumsum": cumsum, "sum_from_1": s, "cumprod": p, "reverse_decay": rev}

    m = MapScan()
    tf.saved_model.save(m, model_dir, signatures={"map": m.map, "scan": m.scan})
    return {"style": "tf2",
            "description": "tf.map_fn and tf.scan in tf.function (While over TensorLists): map "
                           "x[?,3] -> dot (row . w, w a variable read in the mapped function), "
                           "squared (r*r+1) and positive (int32) from one map_fn with two outputs; "
                           "scan v[?] -> cumsum, sum_from_1 and cumprod (a tuple accumulator with an "
                           "initializer), reverse_decay (reverse=True, a = 0.5a + e).",
            "inputs": {"scan": {"v": np.array([1.5, -2.0, 0.5, 3.0, -1.0], np.float32)}}}


# ---- TF1 graph-mode control flow (control flow v1: Switch / Merge / Enter / Exit / NextIteration) ----

def _tf1_graph():
    """TensorFlow with control flow v1 on (tf.compat.v1.while_loop / cond then write frames, not
    While / If): the builders run in a process of their own, so the switch stays theirs."""
    tf = _tf()
    tf.compat.v1.disable_control_flow_v2()
    return tf


def build_tf1_while(model_dir):
    tf = _tf1_graph()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        n = v1.placeholder(tf.int32, [], name="n")
        x = v1.placeholder(tf.float32, [None], name="x")
        scale = v1.Variable(1.5, name="scale", use_resource=False)  # a ref variable read in the body
        i, acc = v1.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * scale + tf.cast(i, tf.float32)),
                               [tf.constant(0), x])

        def outer(i, a):
            # inner trip count min(i, 3) (maximum_iterations), reading x from two frames out
            _, a = v1.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + x * tf.cast(j, tf.float32)),
                                 (tf.constant(0), a), maximum_iterations=3)
            return i + 1, a
        ni, nacc = v1.while_loop(lambda i, a: i < n, outer, [tf.constant(0), tf.zeros_like(x)])
        # data-dependent trip count: halve each element's magnitude until all are below 1
        steps, v = v1.while_loop(lambda k, v: tf.reduce_max(tf.abs(v)) >= 1.0,
                                 lambda k, v: (k + 1, v * 0.5), [tf.constant(0), x])
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"n": n, "x": x}, {"i": i, "acc": acc}),
            "nested": S.predict_signature_def({"n": n, "x": x}, {"i": ni, "acc": nacc}),
            "halve": S.predict_signature_def({"x": x}, {"steps": steps, "halved": v})})
    return {"style": "tf1",
            "description": "tf.compat.v1.while_loop with control flow v1 (Enter/Merge/Switch/LoopCond/"
                           "NextIteration/Exit frames), saved with the v1 Builder: serving_default n, "
                           "x[?] -> i (= n), acc (acc * scale + i, n times; scale a ref variable); nested "
                           "-> an outer loop of n steps around an inner loop of min(i, 3) steps "
                           "(maximum_iterations) adding x * j; halve x -> steps, halved (trip count from "
                           "the data: halve until max|v| < 1).",
            "inputs": {"serving_default": {"n": np.int32(5)}, "nested": {"n": np.int32(6)},
                       "halve": {"x": np.array([3.0, -40.0, 0.5], np.float32)}}}


def build_tf1_cond(model_dir):
    tf = _tf1_graph()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        bias = v1.Variable([0.5, -0.5], name="bias", use_resource=False)
        s = tf.reduce_sum(x)
        pos = v1.cond(s > 0.0, lambda: x * 2.0, lambda: -x)
        neg = v1.cond(s <= 0.0, lambda: x * 2.0, lambda: -x)
        const = v1.cond(s > 0.0, lambda: tf.constant(1.0), lambda: tf.constant(-1.0))  # pivot control edges
        nested = v1.cond(s > 0.0, lambda: v1.cond(s > 10.0, lambda: x + bias, lambda: x - bias), lambda: x * 0.0)
        n = v1.placeholder(tf.int32, [], name="n")

        def body(i, a):  # a cond inside a loop: odd steps add, even steps scale
            return i + 1, v1.cond(tf.equal(i % 2, 1), lambda: a + tf.cast(i, tf.float32), lambda: a * 0.5)
        _, looped = v1.while_loop(lambda i, a: i < n, body, [tf.constant(0), x])
        # a cond in the loop's cond: a Switch on a Merge that is not the loop's own
        steps, _ = v1.while_loop(lambda i, a: v1.cond(tf.reduce_sum(a) > 0.0, lambda: i < n, lambda: i < 2 * n),
                                 lambda i, a: (i + 1, a - 1.0), [tf.constant(0), x])
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"x": x}, {"pos": pos, "neg": neg, "const": const,
                                                                 "nested": nested}),
            "in_loop": S.predict_signature_def({"n": n, "x": x}, {"looped": looped, "steps": steps})})
    return {"style": "tf1",
            "description": "tf.compat.v1.cond with control flow v1 (Switch/Merge, dead branches), v1 "
                           "Builder: serving_default x[?,2] -> pos, neg (both ways of sum(x) > 0), const "
                           "(constant branches: control edges from the pivot), nested (a cond in a "
                           "branch, reading a ref variable); in_loop n, x -> looped (a cond inside a "
                           "while_loop body: odd steps add i, even steps halve), steps (a while_loop whose cond is a cond: n "
                           "steps while sum(x) - i > 0, else up to 2n).",
            "inputs": {"in_loop": {"n": np.int32(5)}}}


class _LSTMCell(object):
    """tf.compat.v1.nn.rnn_cell.LSTMCell's math (concat([x, h]) @ kernel + bias split i, j, f, o;
    forget_bias 1.0; c' = sig(f + 1) c + sig(i) tanh(j); h' = sig(o) tanh(c')) as an RNNCell-like
    object dynamic_rnn accepts: TF 2.21 with Keras 3 no longer offers LSTMCell itself."""

    def __init__(self, tf, units, input_size, rng):
        import numpy as np
        v1 = tf.compat.v1
        self.tf, self.units = tf, units
        self.kernel = v1.Variable(0.4 * rng.standard_normal((input_size + units, 4 * units)).astype(np.float32),
                                  name="lstm/kernel", use_resource=False)
        self.bias = v1.Variable(0.1 * rng.standard_normal(4 * units).astype(np.float32), name="lstm/bias",
                                use_resource=False)

    @property
    def state_size(self):
        from tensorflow.python.ops.rnn_cell_impl import LSTMStateTuple
        return LSTMStateTuple(self.units, self.units)

    @property
    def output_size(self):
        return self.units

    def zero_state(self, batch_size, dtype):
        from tensorflow.python.ops.rnn_cell_impl import LSTMStateTuple
        z = self.tf.zeros(self.tf.stack([batch_size, self.units]), dtype)
        return LSTMStateTuple(z, z)

    def __call__(self, inputs, state, scope=None):
        from tensorflow.python.ops.rnn_cell_impl import LSTMStateTuple
        tf = self.tf
        c, h = state
        z = tf.nn.bias_add(tf.matmul(tf.concat([inputs, h], 1), self.kernel), self.bias)
        i, j, f, o = tf.split(z, 4, axis=1)
        c2 = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h2 = tf.sigmoid(o) * tf.tanh(c2)
        return h2, LSTMStateTuple(c2, h2)


def build_tf1_dynamic_rnn(model_dir):
    tf = _tf1_graph()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, 5, 3], name="x")
        sl = v1.placeholder(tf.int32, [None], name="seq_len")
        cell = _LSTMCell(tf, 4, 3, _rng(SEED + 7))
        out, st = v1.nn.dynamic_rnn(cell, x, sequence_length=sl, dtype=tf.float32)
        out_full, st_full = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="full")
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"x": x, "seq_len": sl},
                                                       {"outputs": out, "c": st.c, "h": st.h}),
            "full": S.predict_signature_def({"x": x}, {"outputs": out_full, "h": st_full.h})})
    rng = _rng(SEED + 8)
    xs = rng.standard_normal((3, 5, 3)).astype(np.float32)
    return {"style": "tf1",
            "description": "tf.compat.v1.nn.dynamic_rnn (control flow v1 while_loop over TensorArrayV3) "
                           "of an LSTM cell (LSTMCell's math, 4 units, ref variables; Keras 3 has no "
                           "LSTMCell of its own) on x[?,5,3]: serving_default with seq_len[?] -> outputs "
                           "(zeros past each row's length), c, h (state at each row's last step); full "
                           "without sequence_length -> outputs, h.",
            "inputs": {"serving_default": {"x": xs, "seq_len": np.array([5, 2, 0], np.int32)},
                       "full": {"x": xs}},
            "batch_inputs": lambda key, alias, n, rng: (
                np.minimum(np.arange(n), 5).astype(np.int32) if alias == "seq_len" else None)}


def build_tf1_tensor_array(model_dir):
    tf = _tf1_graph()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n, element_shape=[3]).unstack(x)     # ScatterV3
        squares = tf.TensorArray(tf.float32, size=0, dynamic_size=True, clear_after_read=False)  # grows

        def body(i, acc, sq):
            row = ta.read(i)
            return i + 1, acc + row, sq.write(i, row * row + acc)
        _, total, sq = v1.while_loop(lambda i, a, s: i < n, body, [tf.constant(0), tf.zeros([3]), squares])
        stacked = sq.stack()                                                        # GatherV3
        rev = sq.gather(tf.range(sq.size() - 1, -1, -1))                            # GatherV3 + SizeV3
        parts = tf.TensorArray(tf.float32, size=2, infer_shape=False, clear_after_read=False).split(
            tf.reshape(x, [-1]), tf.stack([2, tf.size(x) - 2]))                       # SplitV3
        concat = parts.concat()                                                     # ConcatV3
        first = parts.read(0)
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"x": x}, {
                "total": total, "stacked": stacked, "reversed": rev, "size": sq.size(), "concat": concat,
                "first": first})})
    return {"style": "tf1",
            "description": "TensorArrayV3 used directly in a TF1 graph (control flow v1): x[?,3] "
                           "unstacked (Scatter), read row by row in a while_loop that writes row^2 + "
                           "running sum into a dynamic_size array; outputs total (sum of rows), stacked "
                           "(Gather of all), reversed (Gather of a reversed range), size, concat and "
                           "first (Split of x's elements into [2, rest], then Concat / Read).",
            "inputs": {"serving_default": {"x": np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0}}}


def build_keras_conv_lstm(model_dir):
    keras = _keras()
    import numpy as np
    L = keras.layers
    a = keras.Input(shape=(4, 6, 2), name="seq1d")
    b = keras.Input(shape=(3, 5, 5, 1), name="seq2d")
    m = keras.Model([a, b], {"conv_lstm1d": L.ConvLSTM1D(3, 3, padding="same", name="conv_lstm1d")(a),
                             "conv_lstm2d": L.ConvLSTM2D(2, (3, 3), name="conv_lstm2d")(b)}, name="conv_lstm")
    style = _keras_out(m, model_dir, "saved", [np.zeros((1, 4, 6, 2), "float32"),
                                               np.zeros((1, 3, 5, 5, 1), "float32")])
    return {"style": style,
            "description": "Keras ConvLSTM1D(3, 3, same) on seq1d[?,4,6,2] and ConvLSTM2D(2, 3x3, valid) "
                           "on seq2d[?,3,5,5,1] (While over TensorLists around convolutions); "
                           + _how_text("saved") + " (one signature: half the size of an export)."}


CONTROL_BUILDERS = {
    "tf2_while": build_tf2_while,
    "tf2_cond_case": build_tf2_cond_case,
    "keras_rnn": build_keras_rnn,
    "keras_rnn_seq": build_keras_rnn_seq,
    "keras_text_lstm": build_keras_text_lstm,
    "tf2_map_scan": build_tf2_map_scan,
    "tf1_while": build_tf1_while,
    "tf1_cond": build_tf1_cond,
    "tf1_dynamic_rnn": build_tf1_dynamic_rnn,
    "tf1_tensor_array": build_tf1_tensor_array,
    "keras_conv_lstm": build_keras_conv_lstm,
}
