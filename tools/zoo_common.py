"""Helpers the zoo's model builders share (make_zoo.py, zoo_keras.py, zoo_control.py): the seed,
lazy TensorFlow / Keras imports, Keras's save paths, the TF1 Builder save, random generators."""

SEED = 1234


def _tf():
    import tensorflow as tf
    return tf


def _keras():
    import keras
    keras.utils.set_random_seed(SEED)
    return keras


def _keras_out(model, model_dir, how, example):
    """Builds the model on `example` and writes it with model.export or tf.saved_model.save."""
    import numpy as np
    if isinstance(example, list):
        model([np.asarray(e) for e in example])
    else:
        model(np.asarray(example))
    if how == "export":
        model.export(model_dir)
        return "keras3"
    _tf().saved_model.save(model, model_dir)
    return "tf2"


def _how_text(how):
    return ("exported with Keras %s model.export(dir)" if how == "export"
            else "saved with tf.saved_model.save (Keras %s)") % _keras_version()


def _keras_version():
    import keras
    return keras.__version__


def _rng(seed=SEED):
    import numpy as np
    return np.random.default_rng(seed)


def _v1_builder_save(tf, sess, model_dir, sigs, **kw):
    v1 = tf.compat.v1
    b = v1.saved_model.Builder(model_dir)
    b.add_meta_graph_and_variables(sess, [v1.saved_model.SERVING], signature_def_map=sigs, **kw)
    b.save()


def _set_bn(layer, rng):
    import numpy as np
    n = layer.moving_mean.shape[0]
    layer.set_weights([rng.uniform(0.5, 1.5, n).astype(np.float32),   # gamma
                       rng.uniform(-0.5, 0.5, n).astype(np.float32),  # beta
                       rng.uniform(-1.0, 1.0, n).astype(np.float32),  # moving mean
                       rng.uniform(0.5, 2.0, n).astype(np.float32)])  # moving variance
