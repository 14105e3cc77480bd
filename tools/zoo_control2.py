"""The zoo's second control-flow module: TF1 reference variables (VariableV2, use_resource=False)
assigned inside a tf.compat.v1.while_loop body (RefEnter into the frame, Assign / AssignAdd each
iteration), saved with the v1 Builder. Each builder writes one SavedModel and returns its
description for make_zoo.py (see the builder contract there)."""

from zoo_common import _tf, _v1_builder_save


def build_tf1_ref_loop(model_dir):
    tf = _tf()
    tf.compat.v1.disable_control_flow_v2()
    v1 = tf.compat.v1
    S = v1.saved_model
    import numpy as np
    with tf.Graph().as_default(), v1.Session() as sess:
        n = v1.placeholder(tf.int32, [], name="n")
        x = v1.placeholder(tf.float32, [3], name="x")
        v = v1.Variable(0.0, name="v", use_resource=False)
        w = v1.Variable(np.zeros(3, np.float32), name="w", use_resource=False)
        # each run starts from the same state, so its results do not depend on earlier runs
        with tf.control_dependencies([v1.assign(v, 1.0), v1.assign(w, x)]):
            i0, a0 = tf.constant(0), tf.identity(tf.reduce_sum(x))

        def body(i, a):
            # read only through the assigns' outputs: a `w` read inside the body would be an Enter of
            # w/read, which TF evaluates unordered against the reset (and aliases the live buffer);
            # the assigns wait for `a`, so iteration k+1's assigns follow iteration k's reads (TF
            # otherwise runs them ahead: parallel_iterations), and TF's result is deterministic
            with tf.control_dependencies([a]):
                up = v1.assign_add(v, tf.cast(i, tf.float32))  # v += i (RefEnter into the frame)
                st = v1.assign_add(w, x * 0.5)                  # w += x / 2
            with tf.control_dependencies([up, st]):
                return i + 1, a * 0.5 + up + tf.reduce_sum(st)
        i, acc = v1.while_loop(lambda i, a: i < n, body, [i0, a0], parallel_iterations=1)
        with tf.control_dependencies([acc]):
            vf, wf = tf.identity(v.read_value()), tf.identity(w.read_value())
        sess.run(v1.global_variables_initializer())
        _v1_builder_save(tf, sess, model_dir, {
            "serving_default": S.predict_signature_def({"n": n, "x": x},
                                                       {"i": i, "acc": acc, "v": vf, "w": wf})})
    return {"style": "tf1",
            "description": "tf.compat.v1.while_loop (control flow v1) whose body assigns TF1 reference "
                           "variables: v (scalar, AssignAdd v += i) and w ([3], AssignAdd w += x/2), both "
                           "reset (Assign) before the loop (v = 1, w = x); serving_default n, x[3] -> i, acc "
                           "(acc/2 + v + sum(w) each step, read through the assigns' ref outputs), v and w "
                           "after the loop.",
            "inputs": {"serving_default": {"n": np.int32(4), "x": np.array([1.0, -2.0, 0.5], np.float32)}}}


CONTROL2_BUILDERS = {
    "tf1_ref_loop": build_tf1_ref_loop,
}
