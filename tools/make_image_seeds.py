#!/usr/bin/env python3
"""make_image_seeds.py - writes fuzz/seeds/fuzz_graph/issue21_image_random.pb: a TF1-style SavedModel
whose one signature reaches the image colour and geometry kernels (src/ops/image_adjust.c,
image_transform.c) and the Gamma / Poisson / Multinomial / Shuffle random ops, so the graph fuzz
target mutates their attrs (kernel_type, interpolation, fill_mode, method, dtypes) and inputs.
Saved by make_op_seeds.py's save_seed. Run: /work/main/build/venv/bin/python tools/make_image_seeds.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_op_seeds  # noqa: E402
import tensorflow as tf  # noqa: E402

r = tf.raw_ops


def build():
    img = tf.compat.v1.placeholder(tf.float32, [None, 6, 7, 3], name="images")
    outs = {}
    hsv = r.RGBToHSV(images=img)
    outs["hsv2rgb"] = r.HSVToRGB(images=hsv)
    outs["contrast"] = r.AdjustContrastv2(images=img, contrast_factor=tf.constant(1.5))
    outs["hue"] = r.AdjustHue(images=img, delta=tf.constant(0.3))
    outs["sat"] = r.AdjustSaturation(images=img, scale=tf.constant(0.7))
    tr = tf.constant([[1.1, 0.2, -0.5, 0.1, 0.9, 0.3, 0.05, -0.08]])
    for interp, mode in (("BILINEAR", "REFLECT"), ("NEAREST", "WRAP"), ("BILINEAR", "CONSTANT"), ("NEAREST", "NEAREST")):
        outs["proj_" + mode] = r.ImageProjectiveTransformV3(images=img, transforms=tr, output_shape=[5, 4],
                                                            fill_value=0.5, interpolation=interp, fill_mode=mode)
    outs["crop"] = r.CropAndResize(image=img, boxes=tf.constant([[-0.2, 0.1, 0.9, 1.3]]), box_ind=[0], crop_size=[3, 4],
                                   method="bilinear", extrapolation_value=0.25)
    outs["crop_nn"] = r.CropAndResize(image=img, boxes=tf.constant([[0.9, 0.1, 0.2, 0.7]]), box_ind=[0],
                                      crop_size=[2, 5], method="nearest")
    for kt in ("lanczos3", "gaussian", "mitchellcubic"):
        outs["sat_" + kt] = r.ScaleAndTranslate(images=img, size=[4, 9], scale=[4 / 6, 9 / 7], translation=[0.5, -1.0],
                                                kernel_type=kt, antialias=True)
    seed = tf.constant([1, 2], tf.int64)
    kc = r.StatelessRandomGetKeyCounter(seed=seed)
    alpha = tf.constant([0.5, 1.0, 3.0])
    outs["gamma3"] = r.StatelessRandomGammaV3(shape=[4, 3], key=kc.key, counter=kc.counter, alg=1, alpha=alpha)
    outs["gamma2"] = r.StatelessRandomGammaV2(shape=[4, 3], seed=seed, alpha=alpha)
    outs["rgamma"] = r.RandomGamma(shape=[2], alpha=alpha, seed=5, seed2=6)
    outs["poisson"] = r.StatelessRandomPoisson(shape=[4, 3], seed=seed, lam=tf.constant([0.5, 12.0, 1e3]),
                                               dtype=tf.int64)
    outs["rpoisson"] = r.RandomPoissonV2(shape=[2], rate=tf.constant([3.0, 40.0]), seed=7, seed2=8, dtype=tf.float32)
    logits = tf.reshape(img[:, 0, 0, :], [-1, 3])
    outs["smulti"] = r.StatelessMultinomial(logits=logits, num_samples=4, seed=seed)
    outs["multi"] = r.Multinomial(logits=logits, num_samples=3, seed=9, seed2=1)
    outs["sshuffle"] = r.StatelessShuffle(value=img, key=kc.key, counter=kc.counter, alg=1)
    outs["rshuffle"] = r.RandomShuffle(value=logits, seed=3, seed2=4)
    return {"images": img}, outs


if __name__ == "__main__":
    make_op_seeds.save_seed(build, "issue21_image_random.pb")
