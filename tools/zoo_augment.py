"""The zoo's Keras image augmentation builders (Keras 3): every augmentation and image
preprocessing layer of keras.layers, in its inference form (model.export) and, seeded, in its random
training form (an ExportArchive endpoint calling the layers with training=True). A seeded layer
draws from a SeedGenerator whose state is a variable of the export: the random ops are stateless
(StatelessRandomGetKeyCounter + StatelessRandomUniformV2, ...), so a fresh load gives TensorFlow's
numbers bit for bit. Inputs are fixed [2, 8, 8, 3] images in [0, 1] (no unknown batch dim: extra
batch goldens would run on the advanced seed state). Note: Keras 3 augmentation layers default to
training=True, so a functional model built without training=False exports their random form. Each builder writes one SavedModel and returns
its description for make_zoo.py (see the builder contract there)."""

from zoo_common import SEED, _keras, _keras_version, _rng, _tf  # noqa: F401

SHAPE = (2, 8, 8, 3)


def _image():
    import numpy as np
    return _rng(SEED + 77).uniform(0, 1, SHAPE).astype(np.float32)


def _layers(L, names):
    """The layers by name, each seeded; value_range (0, 1) where the layer takes one."""
    s = {"seed": 7}
    vr = {"value_range": (0, 1)}
    make = {
        "random_flip": lambda: L.RandomFlip(**s),
        "random_rotation": lambda: L.RandomRotation(0.2, fill_mode="reflect", **s),
        "random_rotation_nearest": lambda: L.RandomRotation(0.3, fill_mode="constant", interpolation="nearest",
                                                            fill_value=0.5, **s),
        "random_zoom": lambda: L.RandomZoom(0.3, fill_mode="wrap", **s),
        "random_translation": lambda: L.RandomTranslation(0.2, 0.25, fill_mode="nearest", **s),
        "random_contrast": lambda: L.RandomContrast(0.5, **s),
        "random_brightness": lambda: L.RandomBrightness(0.3, **vr, **s),
        "random_crop": lambda: L.RandomCrop(6, 5, **s),
        "random_hue": lambda: L.RandomHue(0.3, **vr, **s),
        "random_saturation": lambda: L.RandomSaturation(0.4, **vr, **s),
        "random_color_jitter": lambda: L.RandomColorJitter(**vr, brightness_factor=0.2, contrast_factor=0.2,
                                                           saturation_factor=0.3, hue_factor=0.2, **s),
        "random_grayscale": lambda: L.RandomGrayscale(0.5, **s),
        "random_shear": lambda: L.RandomShear(0.3, 0.3, **s),
        "solarization": lambda: L.Solarization(0.5, 0.5, **vr, **s),
        "auto_contrast": lambda: L.AutoContrast(**vr),
        "equalization": lambda: L.Equalization(**vr),
        "random_color_degeneration": lambda: L.RandomColorDegeneration(0.5, **s),
        "random_sharpness": lambda: L.RandomSharpness(0.5, **vr, **s),
        "random_invert": lambda: L.RandomInvert(0.5, **vr, **s),
        "random_erasing": lambda: L.RandomErasing(0.8, **vr, **s),
        "random_gaussian_blur": lambda: L.RandomGaussianBlur(0.8, **vr, **s),
        "resizing": lambda: L.Resizing(5, 6),
                "center_crop": lambda: L.CenterCrop(5, 5),
        "rescaling": lambda: L.Rescaling(0.5, 0.1),
        "mix_up": lambda: L.MixUp(**s),
        "cut_mix": lambda: L.CutMix(**s),
        "aug_mix": lambda: L.AugMix(**vr, **s),
        "random_perspective": lambda: L.RandomPerspective(0.5, **s),
        "random_posterization": lambda: L.RandomPosterization(4, **vr, **s),
        "random_elastic_transform": lambda: L.RandomElasticTransform(**vr, **s),
        "rand_augment": lambda: L.RandAugment(**vr, **s),
    }
    return {n: make[n]() for n in names}


# Layers whose every form needs kernels of other families: LeftShift / RightShift (RandomPosterization,
# and the posterize step of AugMix and RandAugment, drawn in inference too), MatrixSolve
# (RandomPerspective), BitwiseOr (RandomElasticTransform). Their seeded random forms are in
# build_keras_augment_pending, to register in AUGMENT_BUILDERS once those kernels exist (until then its
# model cannot load, and tests/cli/validate.sh refuses it).
PENDING = ["random_perspective", "random_posterization", "random_elastic_transform", "rand_augment", "aug_mix"]
INFERENCE = ["random_flip", "random_rotation", "random_zoom", "random_translation", "random_contrast",
             "random_brightness", "random_crop", "random_hue", "random_saturation", "random_color_jitter",
             "random_grayscale", "random_shear", "solarization", "auto_contrast", "random_color_degeneration",
             "random_sharpness", "random_invert", "random_erasing", "random_gaussian_blur", "resizing",
             "center_crop", "rescaling", "mix_up", "cut_mix"]
RANDOM = ["random_flip", "random_rotation", "random_rotation_nearest", "random_zoom", "random_translation",
          "random_contrast", "random_brightness", "random_crop", "random_hue", "random_saturation",
          "random_color_jitter", "random_grayscale", "random_shear", "solarization", "auto_contrast",
          "equalization", "random_color_degeneration", "random_sharpness", "random_invert", "random_erasing",
          "random_gaussian_blur", "mix_up", "cut_mix"]


def _random_export(model_dir, names):
    keras = _keras()
    tf = _tf()
    layers = _layers(keras.layers, names)
    x = keras.Input(shape=SHAPE[1:], batch_size=SHAPE[0], name="x")
    model = keras.Model(x, {n: l(x) for n, l in layers.items() if n != "equalization"})
    arch = keras.export.ExportArchive()
    arch.track(model)
    for n, l in layers.items():
        if n == "equalization":  # not in the functional model (it cycles there): built on its own
            l(_image())
            arch.track(l)
    arch.add_endpoint("serving_default", lambda t: {n: l(t, training=True) for n, l in layers.items()},
                      input_signature=[tf.TensorSpec(SHAPE, tf.float32, name="x")])
    arch.write_out(model_dir, verbose=False)


def build_keras_augment(model_dir):
    keras = _keras()
    layers = _layers(keras.layers, INFERENCE)
    x = keras.Input(shape=SHAPE[1:], batch_size=SHAPE[0], name="x")
    # training=False by hand: a functional graph built without it keeps the layers' default
    # (training=True), and model.export then exports the random form
    model = keras.Model(x, {n: l(x, training=False) for n, l in layers.items()}, name="augment")
    model(_image())
    model.export(model_dir, verbose=False)
    return {"style": "keras3",
            "description": "Keras %s augmentation and image preprocessing layers in their inference form "
                           "(model.export of a functional model calling each with training=False; most are the "
                           "identity there) on x[?,8,8,3]: %s."
                           % (_keras_version(), ", ".join(INFERENCE)),
            "inputs": {"serve": {"x": _image()}, "serving_default": {"x": _image()}}}


def build_keras_augment_random(model_dir):
    _random_export(model_dir, RANDOM)
    return {"style": "keras3",
            "description": "Keras %s augmentation layers in their random training form, seeded (seed=7): an "
                           "ExportArchive endpoint calling each with training=True on x[2,8,8,3] in [0,1] (one "
                           "output each): %s. Bit-exact with TF on a fresh load (stateless Philox draws from "
                           "each layer's SeedGenerator state variable)." % (_keras_version(), ", ".join(RANDOM)),
            "inputs": {"serving_default": {"x": _image()}}}


def build_keras_augment_pending(model_dir):
    _random_export(model_dir, PENDING)
    return {"style": "keras3",
            "description": "Keras %s seeded augmentation layers in their random training form whose ops include "
                           "other families' kernels (LeftShift/RightShift, MatrixSolve, BitwiseOr): %s."
                           % (_keras_version(), ", ".join(PENDING)),
            "inputs": {"serving_default": {"x": _image()}}}


def build_tf2_image_random(model_dir):
    """tf.image and tf.random functions in a tf.function (not Keras): what hand-written input
    pipelines export. Seeded stateless draws, so TF's values are reproducible bit for bit."""
    tf = _tf()

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32, name="x"),
                                      tf.TensorSpec([2], tf.int32, name="seed")])
        def image(self, x, seed):
            boxes = tf.constant([[0.1, 0.2, 0.8, 0.9], [-0.3, 0.4, 0.6, 1.5], [0.9, 0.8, 0.1, 0.05]])
            return {"hue": tf.image.adjust_hue(x, 0.3), "saturation": tf.image.adjust_saturation(x, 1.7),
                    "contrast": tf.image.adjust_contrast(x, 0.6), "hsv": tf.image.rgb_to_hsv(x),
                    "rgb": tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x)),
                    "crop": tf.image.crop_and_resize(x, boxes, [0, 1, 1], [5, 4], extrapolation_value=0.5),
                    "resize_aa": tf.image.resize(x, [5, 6], method="lanczos3", antialias=True),
                    "resize_gauss": tf.image.resize(x, [11, 13], method="gaussian", antialias=True),
                    "rand_hue": tf.image.stateless_random_hue(x, 0.4, seed),
                    "rand_saturation": tf.image.stateless_random_saturation(x, 0.5, 1.5, seed),
                    "rand_contrast": tf.image.stateless_random_contrast(x, 0.5, 1.5, seed),
                    "rand_crop": tf.image.stateless_random_crop(x, [2, 5, 6, 3], seed),
                    "rand_flip": tf.image.stateless_random_flip_left_right(x, seed)}

        @tf.function(input_signature=[tf.TensorSpec([2], tf.int32, name="seed"),
                                      tf.TensorSpec([3], tf.float32, name="alpha")])
        def random(self, seed, alpha):
            logits = tf.math.log(tf.constant([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]]))
            return {"gamma": tf.random.stateless_gamma([4, 3], seed, alpha=alpha),
                    "gamma_beta": tf.random.stateless_gamma([5], seed, alpha=2.0, beta=0.5, dtype=tf.float64),
                    "poisson": tf.random.stateless_poisson([4, 3], seed, lam=alpha * 7.0, dtype=tf.int32),
                    "categorical": tf.random.stateless_categorical(logits, 6, seed),
                    "shuffle": tf.random.experimental.stateless_shuffle(tf.range(10), seed)}

    m = M()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.image, "random": m.random})
    import numpy as np
    return {"style": "tf2",
            "description": "tf.Module of tf.image and tf.random functions: serving_default x[2,8,8,3] in [0,1], seed "
                           "-> adjust_hue/saturation/contrast, rgb_to_hsv and back, crop_and_resize (boxes outside, "
                           "flipped), resize lanczos3/gaussian with antialias (ScaleAndTranslate), stateless_random_"
                           "hue/saturation/contrast/crop/flip; random seed, alpha[3] -> stateless_gamma, "
                           "stateless_poisson, stateless_categorical, stateless_shuffle.",
            "inputs": {"serving_default": {"x": _image(), "seed": np.array([7, -3], np.int32)},
                       "random": {"seed": np.array([11, 5], np.int32),
                                  "alpha": np.array([0.4, 1.0, 3.5], np.float32)}}}


AUGMENT_BUILDERS = {
    "keras_augment": build_keras_augment,
    "keras_augment_random": build_keras_augment_random,
    "tf2_image_random": build_tf2_image_random,
}
