#!/usr/bin/env python3
"""test_keras_layer_sweep.py - every public layer class of keras.layers, exported and run here.

Usage: PYTHON test_keras_layer_sweep.py [--build BUILD_DIR] [--jobs N] [--only A,B] [--md PATH]

The classes are found by enumerating keras.layers (every public name bound to a subclass of
keras.layers.Layer; aliases such as AvgPool2D share their class's row). Each class has a builder in
BUILDERS (a small functional model around one instance, its inputs) or a reasoned entry in EXCLUDED;
a class with neither FAILS the run, so a new Keras layer cannot be missed. Every builder's model gets
random weights (random statistics for normalization layers; preprocessing layers are adapted on small
data), is exported with model.export, loaded by TensorFlow and by the Python package (python/), and
the serving_default outputs must agree: floats within 1e-5 x max(1, max|tf|), the rest exactly.

Rows with owner="strings" / owner="image" need kernels another branch adds (string/regex/hash ops;
image adjust/transform/random ops): they still count as failures, the summary just names them.
Work runs in --jobs worker processes (each imports TensorFlow once); a worker that dies (a crash in
the library) is restarted after the class it was on, which is reported as crashed. With --md the
result table (class, ops, status) is written as markdown (tests/interop/keras_layers.md is such a
file, committed; regenerate with --md tests/interop/keras_layers.md). Prints a summary and
'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 21

# Classes that cannot be exported at all, each with its reason.
EXCLUDED = {
    "Layer": "the abstract base class: call() is not implemented; every other row is a subclass",
    "Wrapper": "abstract base of the wrappers (call() not implemented); Bidirectional and TimeDistributed are built",
    "FlaxLayer": "wraps a Flax module: needs the JAX backend, not the TensorFlow backend model.export uses",
    "JaxLayer": "wraps a JAX function: needs the JAX backend, not the TensorFlow backend model.export uses",
    "TorchModuleWrapper": "wraps a torch.nn.Module: needs the PyTorch backend",
}

# Rows that need kernels another branch of this round adds (owner: "strings" for the string, regex
# and hash ops; "image" for the image transform/adjust ops and the random ops they draw with, e.g.
# ImageProjectiveTransformV3, RGBToHSV, ScaleAndTranslate, StatelessRandomGammaV3). They still FAIL
# when they do not match: the mark only tells which failures wait on a merge.
OWNERS = {}  # every row that waited on another branch matches since the merge (2026-12-02)

# Ops that say nothing about a layer (the plumbing of every Keras export), left out of the table.
PLUMBING = {"Const", "Identity", "IdentityN", "NoOp", "Placeholder", "ReadVariableOp", "VarHandleOp",
            "StatefulPartitionedCall", "PartitionedCall", "SaveV2", "RestoreV2", "MergeV2Checkpoints",
            "ShardedFilename", "StringJoin", "StaticRegexFullMatch", "Select", "AssignVariableOp",
            "VarIsInitializedOp", "DisableCopyOnRead", "Pack", "StopGradient"}


class B:
    """One builder, keyed 'Class' or 'Class/variant' in the table: make() -> a layer (or a callable
    taking the Input tensors), inputs: a list of (shape without batch, dtype, kind) where kind picks
    the values: 'normal', 'image' (0..255), 'int:N' (0..N-1), 'audio', 'words', 'text'.
    adapt: data for layer.adapt(). owner: the branch whose kernels it needs."""

    def __init__(self, make, inputs, owner=None, adapt=None, batch=2, model=None, keep_weights=False,
                 subclass=False):
        self.make, self.inputs, self.owner, self.adapt, self.batch, self.model = \
            make, inputs, owner, adapt, batch, model
        self.keep_weights = keep_weights  # the weights are the layer's definition (STFT kernels)
        self.subclass = subclass  # a Model subclass calling the layer (it returns its input symbolically)


def builders():
    import numpy as np
    import tensorflow as tf
    import keras
    L = keras.layers
    f = "float32"
    v3, img, seq, vol = [((4, 5), f, "normal")], [((6, 6, 3), f, "normal")], [((7, 4), f, "normal")], \
        [((4, 5, 6, 2), f, "normal")]
    pic = [((8, 8, 3), f, "image")]
    two, attn = [((5, 4), f, "normal")] * 2, [((3, 4), f, "normal"), ((5, 4), f, "normal")]
    ints = [((5,), "int32", "int:10")]
    rng = np.random.default_rng(SEED)

    def tfsm():
        d = tempfile.mkdtemp(prefix="sm-sweep-tfsm-")
        inner = keras.Sequential([keras.Input((4, 5)), L.Dense(3, activation="tanh")])
        randomize(inner, np.random.default_rng(SEED + 1))
        inner.export(d, verbose=False)
        return L.TFSMLayer(d, call_endpoint="serve")

    t = {
        "Activation": B(lambda: L.Activation("gelu"), v3),
        "ActivityRegularization": B(lambda: L.ActivityRegularization(l1=0.1), v3),
        "AdaptiveAveragePooling1D": B(lambda: L.AdaptiveAveragePooling1D(3), seq),
        "AdaptiveAveragePooling2D": B(lambda: L.AdaptiveAveragePooling2D((4, 3)), img),
        "AdaptiveAveragePooling3D": B(lambda: L.AdaptiveAveragePooling3D((2, 3, 4)), vol),
        "AdaptiveMaxPooling1D": B(lambda: L.AdaptiveMaxPooling1D(3), seq),
        "AdaptiveMaxPooling2D": B(lambda: L.AdaptiveMaxPooling2D((4, 3)), img),
        "AdaptiveMaxPooling3D": B(lambda: L.AdaptiveMaxPooling3D((2, 3, 4)), vol),
        "Add": B(lambda: L.Add(), two),
        "AdditiveAttention": B(lambda: L.AdditiveAttention(), attn),
        "AlphaDropout": B(lambda: L.AlphaDropout(0.3), v3),
        "Attention": B(lambda: L.Attention(score_mode="concat"), attn),
        "AugMix": B(lambda: L.AugMix(seed=1), pic),
        "AutoContrast": B(lambda: L.AutoContrast(), pic),
        "Average": B(lambda: L.Average(), two),
        "AveragePooling1D": B(lambda: L.AveragePooling1D(2, padding="same"), seq),
        "AveragePooling2D": B(lambda: L.AveragePooling2D(2, strides=1), img),
        "AveragePooling3D": B(lambda: L.AveragePooling3D(2, padding="same"), vol),
        "BatchNormalization": B(lambda: L.BatchNormalization(), img),
        "Bidirectional": B(lambda: L.Bidirectional(L.LSTM(3, return_sequences=True)), seq),
        "CategoryEncoding": B(lambda: L.CategoryEncoding(10, output_mode="count"), ints),
        "CenterCrop": B(lambda: L.CenterCrop(5, 4), pic),
        "Concatenate": B(lambda: L.Concatenate(axis=1), two),
        "ContrastLimitedAdaptiveHistogramEqualization":
            B(lambda: L.ContrastLimitedAdaptiveHistogramEqualization(value_range=(0, 255), tile_grid_size=(2, 2)), pic),
        "Conv1D": B(lambda: L.Conv1D(3, 3, dilation_rate=2), seq),
        "Conv1DTranspose": B(lambda: L.Conv1DTranspose(3, 3, strides=2), seq),
        "Conv2D": B(lambda: L.Conv2D(4, 3, strides=2, padding="same"), img),
        "Conv2DTranspose": B(lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"), img),
        "Conv3D": B(lambda: L.Conv3D(3, 2, padding="same"), vol),
        "Conv3DTranspose": B(lambda: L.Conv3DTranspose(2, 3, strides=2), vol),
        "ConvLSTM1D": B(lambda: L.ConvLSTM1D(2, 3, padding="same"), [((3, 5, 2), f, "normal")]),
        "ConvLSTM2D": B(lambda: L.ConvLSTM2D(2, 3, padding="same"), [((3, 5, 4, 2), f, "normal")]),
        "ConvLSTM3D": B(lambda: L.ConvLSTM3D(2, 2), [((2, 3, 4, 3, 1), f, "normal")]),
        "Cropping1D": B(lambda: L.Cropping1D((1, 2)), seq),
        "Cropping2D": B(lambda: L.Cropping2D(((1, 0), (2, 1))), img),
        "Cropping3D": B(lambda: L.Cropping3D(1), vol),
        "CutMix": B(lambda: L.CutMix(seed=1), pic),
        "Dense": B(lambda: L.Dense(3, activation="relu"), v3),
        "DepthwiseConv1D": B(lambda: L.DepthwiseConv1D(3, depth_multiplier=2), seq),
        "DepthwiseConv2D": B(lambda: L.DepthwiseConv2D(3, padding="same"), img),
        "Discretization": B(lambda: L.Discretization(num_bins=4), v3, adapt=rng.standard_normal((20, 4, 5))),
        "Dot": B(lambda: L.Dot(axes=(2, 2), normalize=True), two),
        "Dropout": B(lambda: L.Dropout(0.5), v3),
        "ELU": B(lambda: L.ELU(0.7), v3),
        "EinsumDense": B(lambda: L.EinsumDense("abc,cd->abd", (4, 3), bias_axes="d"), v3),
        "Embedding": B(lambda: L.Embedding(10, 3), ints),
        "Equalization": B(lambda: L.Equalization(), pic, subclass=True),
        "Flatten": B(lambda: L.Flatten(), img),
        "GRU": B(lambda: L.GRU(3), seq),
        "GRUCell": B(lambda: L.RNN(L.GRUCell(3), return_sequences=True), seq),
        "GaussianDropout": B(lambda: L.GaussianDropout(0.3), v3),
        "GaussianNoise": B(lambda: L.GaussianNoise(0.3), v3),
        "GlobalAveragePooling1D": B(lambda: L.GlobalAveragePooling1D(), seq),
        "GlobalAveragePooling2D": B(lambda: L.GlobalAveragePooling2D(keepdims=True), img),
        "GlobalAveragePooling3D": B(lambda: L.GlobalAveragePooling3D(), vol),
        "GlobalMaxPooling1D": B(lambda: L.GlobalMaxPooling1D(), seq),
        "GlobalMaxPooling2D": B(lambda: L.GlobalMaxPooling2D(), img),
        "GlobalMaxPooling3D": B(lambda: L.GlobalMaxPooling3D(), vol),
        "GroupNormalization": B(lambda: L.GroupNormalization(groups=2), [((5, 4), f, "normal")]),
        "GroupQueryAttention": B(lambda: (lambda q, v: L.GroupQueryAttention(
            head_dim=2, num_query_heads=4, num_key_value_heads=2)(q, v)), attn),
        "HashedCrossing": B(lambda: L.HashedCrossing(num_bins=7), [((), "int32", "int:100")] * 2),
        "Hashing": B(lambda: L.Hashing(num_bins=5), ints),
        "Identity": B(lambda: L.Identity(), v3),
        "InputLayer": B(None, v3, model=lambda: keras.Sequential([L.InputLayer((4, 5), name="in0"), L.Dense(2)])),
        "IntegerLookup": B(lambda: L.IntegerLookup(vocabulary=[2, 3, 5, 7], output_mode="int"), ints),
        "LSTM": B(lambda: L.LSTM(3, return_sequences=True), seq),
        "LSTMCell": B(lambda: L.RNN(L.LSTMCell(3)), seq),
        "Lambda": B(lambda: L.Lambda(lambda x: keras.ops.sin(x) * 2.0 + 1.0), v3),
        "LayerNormalization": B(lambda: L.LayerNormalization(), v3),
        "LeakyReLU": B(lambda: L.LeakyReLU(0.2), v3),
        "Masking": B(lambda: L.Masking(0.0), v3),
        "MaxNumBoundingBoxes": B(lambda: L.MaxNumBoundingBoxes(max_number=3), pic),
        "MaxPooling1D": B(lambda: L.MaxPooling1D(2), seq),
        "MaxPooling2D": B(lambda: L.MaxPooling2D(3, strides=2, padding="same"), img),
        "MaxPooling3D": B(lambda: L.MaxPooling3D(2), vol),
        "Maximum": B(lambda: L.Maximum(), two),
        "MelSpectrogram": B(lambda: L.MelSpectrogram(fft_length=64, sequence_stride=16, num_mel_bins=8,
                                                     sampling_rate=8000), [((256,), f, "audio")]),
        "Minimum": B(lambda: L.Minimum(), two),
        "MixUp": B(lambda: L.MixUp(seed=1), pic),
        "MultiHeadAttention": B(lambda: (lambda q, v: L.MultiHeadAttention(2, 3)(q, v)), attn),
        "Multiply": B(lambda: L.Multiply(), two),
        "Normalization": B(lambda: L.Normalization(), v3, adapt=rng.standard_normal((20, 4, 5)) * 3 + 1),
        "PReLU": B(lambda: L.PReLU(), v3),
        "Permute": B(lambda: L.Permute((2, 1)), v3),
        "Pipeline": B(lambda: L.Pipeline([L.Rescaling(1 / 255.0), L.CenterCrop(6, 6)]), pic),
        "RMSNormalization": B(lambda: L.RMSNormalization(), v3),
        "RNN": B(lambda: L.RNN(L.StackedRNNCells([L.SimpleRNNCell(3), L.GRUCell(2)]), return_sequences=True), seq),
        "RandAugment": B(lambda: L.RandAugment(seed=1), pic),
        "RandomBrightness": B(lambda: L.RandomBrightness(0.3, seed=1), pic),
        "RandomColorDegeneration": B(lambda: L.RandomColorDegeneration(0.3, seed=1), pic),
        "RandomColorJitter": B(lambda: L.RandomColorJitter(brightness_factor=0.2, seed=1), pic),
        "RandomContrast": B(lambda: L.RandomContrast(0.3, seed=1), pic),
        "RandomCrop": B(lambda: L.RandomCrop(5, 6, seed=1), pic),
        "RandomElasticTransform": B(lambda: L.RandomElasticTransform(seed=1), pic),
        "RandomErasing": B(lambda: L.RandomErasing(seed=1), pic),
        "RandomFlip": B(lambda: L.RandomFlip(seed=1), pic),
        "RandomGaussianBlur": B(lambda: L.RandomGaussianBlur(seed=1), pic),
        "RandomGrayscale": B(lambda: L.RandomGrayscale(seed=1), pic),
        "RandomHue": B(lambda: L.RandomHue(0.2, value_range=(0, 255), seed=1), pic),
        "RandomInvert": B(lambda: L.RandomInvert(seed=1), pic),
        "RandomPerspective": B(lambda: L.RandomPerspective(seed=1), pic),
        "RandomPosterization": B(lambda: L.RandomPosterization(factor=(1, 4), seed=1), pic),
        "RandomRotation": B(lambda: L.RandomRotation(0.2, seed=1), pic),
        "RandomSaturation": B(lambda: L.RandomSaturation(0.3, seed=1), pic),
        "RandomSharpness": B(lambda: L.RandomSharpness(0.3, seed=1), pic),
        "RandomShear": B(lambda: L.RandomShear(0.2, 0.2, seed=1), pic),
        "RandomTranslation": B(lambda: L.RandomTranslation(0.2, 0.2, seed=1), pic),
        "RandomZoom": B(lambda: L.RandomZoom(0.2, seed=1), pic),
        "ReLU": B(lambda: L.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.2), v3),
        "RepeatVector": B(lambda: L.RepeatVector(3), [((4,), f, "normal")]),
        "Rescaling": B(lambda: L.Rescaling(0.5, offset=-1.0), pic),
        "Reshape": B(lambda: L.Reshape((5, 2, 2)), v3),
        "Resizing": B(lambda: L.Resizing(5, 7), pic),
        "ReversibleEmbedding": B(lambda: L.ReversibleEmbedding(10, 3), ints),
        # window as an array (np.hanning is scipy's symmetric 'hann'): a string window needs scipy
        "STFTSpectrogram": B(lambda: L.STFTSpectrogram(mode="log", frame_length=32, frame_step=8, fft_length=32,
                                                       window=np.hanning(32)), [((200, 1), f, "audio")],
                             keep_weights=True),
        "SeparableConv1D": B(lambda: L.SeparableConv1D(3, 3, depth_multiplier=2), seq),
        "SeparableConv2D": B(lambda: L.SeparableConv2D(4, 3, padding="same"), img),
        "SimpleRNN": B(lambda: L.SimpleRNN(3), seq),
        "SimpleRNNCell": B(lambda: L.RNN(L.SimpleRNNCell(3), go_backwards=True), seq),
        "Softmax": B(lambda: L.Softmax(axis=1), v3),
        "Solarization": B(lambda: L.Solarization(addition_factor=0.2, threshold_factor=0.5, value_range=(0, 255),
                                                 seed=1), pic),
        "SpatialDropout1D": B(lambda: L.SpatialDropout1D(0.3), seq),
        "SpatialDropout2D": B(lambda: L.SpatialDropout2D(0.3), img),
        "SpatialDropout3D": B(lambda: L.SpatialDropout3D(0.3), vol),
        "SpectralNormalization": B(lambda: L.SpectralNormalization(L.Dense(3)), v3),
        "StackedRNNCells": B(lambda: L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.LSTMCell(2)])), seq),
        "StringLookup": B(lambda: L.StringLookup(vocabulary=["a", "bc", "d"]), [((4,), "string", "words")],
                          ),
        "Subtract": B(lambda: L.Subtract(), two),
        "TFSMLayer": B(tfsm, v3),
        "TextVectorization": B(lambda: L.TextVectorization(max_tokens=20, output_sequence_length=5), [((), "string", "text")],
                               adapt=["the cat sat", "a dog ran far away", "The Cat, ran!"]),
        "TimeDistributed": B(lambda: L.TimeDistributed(L.Dense(2)), v3),
        "UnitNormalization": B(lambda: L.UnitNormalization(), v3),
        "UpSampling1D": B(lambda: L.UpSampling1D(2), seq),
        "UpSampling2D": B(lambda: L.UpSampling2D(2, interpolation="bilinear"), img),
        "UpSampling3D": B(lambda: L.UpSampling3D((1, 2, 2)), vol),
        "ZeroPadding1D": B(lambda: L.ZeroPadding1D(2), seq),
        "ZeroPadding2D": B(lambda: L.ZeroPadding2D(((1, 0), (0, 2))), img),
        "ZeroPadding3D": B(lambda: L.ZeroPadding3D(1), vol),
    }
    # Variants: the options whose exports use other ops (modes, paddings, masks, interpolations).
    aud = [((200, 1), f, "audio")]
    for mode in ("magnitude", "psd", "real", "imag", "angle"):
        t[f"STFTSpectrogram/{mode}"] = B(lambda m=mode: L.STFTSpectrogram(
            mode=m, frame_length=24, frame_step=10, fft_length=32, window=np.hamming(24), scaling="spectrum",
            padding="same"), aud, keep_weights=True)
    t["STFTSpectrogram/channels_first"] = B(lambda: L.STFTSpectrogram(
        frame_length=16, window=None, expand_dims=True, data_format="channels_first"), [((2, 100), f, "audio")],
        keep_weights=True)
    t["MelSpectrogram/power"] = B(lambda: L.MelSpectrogram(fft_length=128, sequence_stride=32, sequence_length=100,
                                                           num_mel_bins=16, power_to_db=False, mag_exp=1.0,
                                                           min_freq=100.0, max_freq=3000.0, sampling_rate=8000),
                                  [((400,), f, "audio")])
    for mode in ("one_hot", "multi_hot"):
        t[f"CategoryEncoding/{mode}"] = B(lambda m=mode: L.CategoryEncoding(6, output_mode=m),
                                          [((1,) if mode == "one_hot" else (4,), "int32", "int:6")])
    t["Discretization/one_hot"] = B(lambda: L.Discretization(bin_boundaries=[-1.0, 0.0, 0.5], output_mode="one_hot"),
                                    [((), f, "normal")])
    t["Discretization/count"] = B(lambda: L.Discretization(bin_boundaries=[-0.5, 0.5], output_mode="count"),
                                  [((6,), f, "normal")])
    t["IntegerLookup/multi_hot"] = B(lambda: L.IntegerLookup(vocabulary=[1, 4, 8], output_mode="multi_hot",
                                                             num_oov_indices=2), ints)
    t["IntegerLookup/tf_idf"] = B(lambda: L.IntegerLookup(vocabulary=[1, 4, 8], output_mode="tf_idf",
                                                          idf_weights=[0.5, 1.5, 2.0]), ints)
    t["IntegerLookup/invert"] = B(lambda: L.IntegerLookup(vocabulary=[11, 42, 80], invert=True), [((5,), "int64", "int:4")])
    t["Normalization/invert"] = B(lambda: L.Normalization(mean=[1.0, 2.0, 0.0, -1.0, 3.0], variance=[1.0, 4.0, 0.5, 2.0,
                                                                                                     1.0], invert=True),
                                  v3, keep_weights=True)
    t["Attention/causal"] = B(lambda: (lambda q, v: L.Attention(use_scale=True)([q, v], use_causal_mask=True)), two)
    t["MultiHeadAttention/causal"] = B(lambda: (lambda q, v: L.MultiHeadAttention(2, 3, value_dim=2)(
        q, v, use_causal_mask=True)), two)
    t["MultiHeadAttention/axes"] = B(lambda: (lambda q: L.MultiHeadAttention(2, 2, attention_axes=(1, 2))(q, q)),
                                     [((3, 4, 2), f, "normal")])
    t["Embedding/mask_zero"] = B(lambda: (lambda x: L.LSTM(3)(L.Embedding(10, 4, mask_zero=True)(x))), ints)
    t["Masking/lstm"] = B(lambda: (lambda x: L.GRU(2, return_sequences=True)(L.Masking(0.0)(x))),
                          [((6, 3), f, "int:2")])
    t["GRU/reset_before"] = B(lambda: L.GRU(3, reset_after=False, go_backwards=True), seq)
    t["Bidirectional/gru_sum"] = B(lambda: L.Bidirectional(L.GRU(2), merge_mode="sum"), seq)
    t["Conv1DTranspose/same"] = B(lambda: L.Conv1DTranspose(2, 4, strides=3, padding="same"), seq)
    t["Conv2DTranspose/dilated"] = B(lambda: L.Conv2DTranspose(3, 3, dilation_rate=2), img)
    t["Conv2DTranspose/valid_strided"] = B(lambda: L.Conv2DTranspose(3, (3, 2), strides=(2, 3)), img)
    t["Conv3DTranspose/same"] = B(lambda: L.Conv3DTranspose(3, (2, 3, 2), strides=(1, 2, 2), padding="same"), vol)
    t["Conv3D/strided_dilated"] = B(lambda: L.Conv3D(2, 2, dilation_rate=(1, 2, 1)), vol)
    t["Conv3D/strided"] = B(lambda: L.Conv3D(2, 3, strides=2, padding="same"), vol)
    t["AveragePooling3D/valid"] = B(lambda: L.AveragePooling3D((2, 2, 3), strides=(1, 2, 2)), vol)
    t["MaxPooling3D/same"] = B(lambda: L.MaxPooling3D(3, strides=2, padding="same"), vol)
    t["DepthwiseConv2D/dilated"] = B(lambda: L.DepthwiseConv2D(2, dilation_rate=2, depth_multiplier=2), img)
    t["SeparableConv2D/strided"] = B(lambda: L.SeparableConv2D(3, 3, strides=2), img)
    t["ConvLSTM2D/strided"] = B(lambda: L.ConvLSTM2D(2, 3, strides=2, return_sequences=True),
                                [((2, 6, 6, 1), f, "normal")])
    t["BatchNormalization/axis1"] = B(lambda: L.BatchNormalization(axis=1), img)
    t["GroupNormalization/image"] = B(lambda: L.GroupNormalization(groups=3, axis=-1), [((4, 4, 6), f, "normal")])
    t["LayerNormalization/rms"] = B(lambda: L.LayerNormalization(axis=(1, 2), rms_scaling=True), v3)
    t["UnitNormalization/axes"] = B(lambda: L.UnitNormalization(axis=(1, 2)), v3)
    t["Dot/plain"] = B(lambda: L.Dot(axes=1), [((4,), f, "normal")] * 2)
    for interp in ("nearest", "bicubic", "area", "lanczos3"):
        t[f"UpSampling2D/{interp}"] = B(lambda i=interp: L.UpSampling2D((2, 3), interpolation=i), img)
        t[f"Resizing/{interp}"] = B(lambda i=interp: L.Resizing(11, 5, interpolation=i), pic)
    t["Resizing/crop_to_aspect_ratio"] = B(lambda: L.Resizing(5, 3, crop_to_aspect_ratio=True), pic)
    t["Resizing/pad_to_aspect_ratio"] = B(lambda: L.Resizing(5, 3, pad_to_aspect_ratio=True), pic)
    t["CenterCrop/upsize"] = B(lambda: L.CenterCrop(10, 12), pic)
    t["Softmax/mask"] = B(lambda: (lambda x, m: L.Softmax()(x, mask=m)), [((4, 5), f, "normal"),
                                                                           ((4, 5), "bool", "int:2")])
    t["EinsumDense/gelu"] = B(lambda: L.EinsumDense("abc,cde->abde", (4, 2, 3), activation="gelu"), v3)
    # The random form: training=True, seeded (the layer's SeedGenerator state is a variable both
    # loaders start from), so the stateless random ops must be bit-exact with TensorFlow's Philox.
    rand = {"RandomFlip": lambda: L.RandomFlip(seed=3), "RandomTranslation": lambda: L.RandomTranslation(0.2, 0.3, seed=3),
            "RandomRotation": lambda: L.RandomRotation(0.2, seed=3), "RandomZoom": lambda: L.RandomZoom(0.3, seed=3),
            "RandomContrast": lambda: L.RandomContrast(0.4, seed=3), "RandomBrightness": lambda: L.RandomBrightness(0.3, seed=3),
            "RandomCrop": lambda: L.RandomCrop(5, 6, seed=3), "RandomGrayscale": lambda: L.RandomGrayscale(0.5, seed=3),
            "RandomInvert": lambda: L.RandomInvert(0.5, seed=3), "RandomErasing": lambda: L.RandomErasing(seed=3),
            "RandomSharpness": lambda: L.RandomSharpness(0.3, seed=3),
            "RandomColorDegeneration": lambda: L.RandomColorDegeneration(0.4, seed=3)}
    for n, mk in rand.items():
        t[f"{n}/training"] = B(lambda mk=mk: (lambda x: mk()(x, training=True)), pic)
    noisy = {"Dropout": lambda: L.Dropout(0.4, seed=3), "GaussianNoise": lambda: L.GaussianNoise(0.5, seed=3),
             "GaussianDropout": lambda: L.GaussianDropout(0.3, seed=3), "AlphaDropout": lambda: L.AlphaDropout(0.3, seed=3),
             "SpatialDropout2D": lambda: L.SpatialDropout2D(0.5, seed=3)}
    for n, mk in noisy.items():
        t[f"{n}/training"] = B(lambda mk=mk: (lambda x: mk()(x, training=True)), img)
    # Every activation keras.activations has (Activation takes them by name), one model for all.
    acts = [a for a in sorted(dir(keras.activations)) if not a.startswith("_") and
            a not in ("get", "serialize", "deserialize", "threshold")]

    def all_acts(x):
        return L.Concatenate()([L.Activation(a)(x) for a in acts])
    t["Activation/all"] = B(lambda: all_acts, [((4, 6), f, "normal")])
    # keras.ops a Lambda layer may hold (sorting, scans, special functions), one model per group.
    K = keras.ops
    t["Lambda/sort"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.sort(x), K.top_k(x, 3)[0], K.cast(K.argsort(x), "float32"), K.cumsum(x, axis=1), K.cumprod(x, axis=-1),
         K.flip(x, axis=1), K.roll(x, 2, axis=-1)], axis=-1)), v3)
    t["Lambda/special"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.erf(x), K.erfinv(K.tanh(x)), K.logsumexp(x, axis=-1, keepdims=True), K.sinh(x), K.arcsinh(x),
         K.log1p(K.abs(x)), K.expm1(x), K.sign(x), K.round(x * 3), K.floor(x), K.ceil(x), K.trunc(x * 3),
         K.arctan2(x, x + 1.0), K.hypot(x, x * 2), K.logaddexp(x, x * 0.5), K.square(x), K.reciprocal(x + 5.0),
         K.cos(x), K.tan(x * 0.5), K.arccos(K.tanh(x)), K.arcsin(K.tanh(x)), K.arctan(x), K.cosh(x),
         K.arctanh(K.tanh(x) * 0.9)], axis=-1)), v3)
    t["Lambda/linalg"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.reshape(K.linalg.solve(x + 3.0 * K.eye(4), x[:, :, :1]), (-1, 4, 1)),
         K.linalg.inv(x + 3.0 * K.eye(4)), K.reshape(K.linalg.det(x + 3.0 * K.eye(4)), (-1, 1, 1)) * K.ones((1, 4, 1)),
         K.triu(x), K.tril(x, -1)], axis=-1)), [((4, 4), f, "normal")])
    t["Lambda/index"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.one_hot(K.argmax(x, axis=-1), 5), K.where(x > 0, x, -x), K.clip(x, -0.5, 0.5),
         K.take_along_axis(x, K.argsort(x, axis=-1), axis=-1), K.repeat(x[:, :, :1], 2, axis=-1),
         K.tile(x[:, :1, :], (1, 4, 1))], axis=-1)), v3)
    t["Lambda/numpy"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.diff(x, axis=-1), K.nan_to_num(K.log(x)), K.cast(K.isclose(x, x * 1.0000001), "float32"),
         K.moveaxis(x, 1, 2), K.einsum("bij,jk->bik", x, K.ones((4, 2))), K.cross(x[..., :3], x[..., 1:]),
         K.cast(K.digitize(x, [-0.5, 0.0, 0.5]), "float32"),
         K.cast(K.searchsorted(K.sort(x[0, 0]), x[0, 1]), "float32")[None, None, :] * K.ones_like(x),
         K.max(K.sort(x, axis=-1)[..., 1:3], axis=-1, keepdims=True),
         K.var(x, axis=-1, keepdims=True), K.std(x, axis=-1, keepdims=True), K.cumsum(K.flip(x, 2), axis=2)],
        axis=-1)), [((4, 4), f, "normal")])
    t["Lambda/linalg2"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.linalg.cholesky(K.matmul(x, K.transpose(x, (0, 2, 1))) + 4.0 * K.eye(4)),
         K.linalg.qr(x)[0], K.linalg.qr(x)[1] * 0.5, K.reshape(K.linalg.norm(x, axis=(1, 2)), (-1, 1, 1)) * K.ones((1, 4, 1)),
         K.linalg.solve_triangular(x + 4.0 * K.eye(4), x[:, :, :2], lower=True),
         K.reshape(K.logdet(K.matmul(x, K.transpose(x, (0, 2, 1))) + K.eye(4)), (-1, 1, 1)) * K.ones((1, 4, 1))],
        axis=-1)), [((4, 4), f, "normal")])
    t["Lambda/segment"] = B(lambda: (lambda x, ids: K.concatenate(
        [K.segment_sum(x, ids, num_segments=4), K.segment_max(x, ids, num_segments=4)], axis=-1)),
        [((3,), f, "normal"), ((), "int32", "int:4")], batch=6)
    t["Lambda/nn"] = B(lambda: L.Lambda(lambda x: K.concatenate(
        [K.nn.log_softmax(x), K.nn.normalize(x), K.nn.moments(x, axes=[-1], keepdims=True)[1] * K.ones((1, 1, 5)),
         K.nn.one_hot(K.argmin(x, -1), 5), K.nn.sparse_plus(x), K.nn.squareplus(x),
         K.nn.glu(K.concatenate([x, x], -1)), K.nn.hard_tanh(x)], axis=-1)), v3)
    t["Conv1D/causal"] = B(lambda: L.Conv1D(4, 3, padding="causal", dilation_rate=2), seq)
    t["Conv1D/groups"] = B(lambda: L.Conv1D(4, 3, groups=2), seq)
    t["Conv2D/groups"] = B(lambda: L.Conv2D(6, 2, groups=3, padding="same"), img)
    t["Conv3D/groups"] = B(lambda: L.Conv3D(4, 2, groups=2), vol)
    t["DepthwiseConv1D/strided"] = B(lambda: L.DepthwiseConv1D(2, strides=2, padding="same"), seq)
    t["SeparableConv1D/dilated"] = B(lambda: L.SeparableConv1D(3, 2, dilation_rate=2, padding="same"), seq)
    t["AveragePooling2D/same"] = B(lambda: L.AveragePooling2D(3, strides=2, padding="same"), img)
    t["AveragePooling1D/channels_first"] = B(lambda: L.AveragePooling1D(2, data_format="channels_first"), seq)
    t["MaxPooling1D/same"] = B(lambda: L.MaxPooling1D(3, strides=2, padding="same"), seq)
    t["GlobalAveragePooling1D/mask"] = B(lambda: (lambda x: L.GlobalAveragePooling1D()(
        L.Embedding(10, 3, mask_zero=True)(x))), ints)
    t["SimpleRNN/return_state"] = B(lambda: L.SimpleRNN(3, return_sequences=True, return_state=True), seq)
    t["LSTM/return_state"] = B(lambda: L.LSTM(2, return_state=True, go_backwards=True, unroll=True), seq)
    t["Bidirectional/lstm_concat_state"] = B(lambda: L.Bidirectional(L.LSTM(2, return_state=True)), seq)
    t["AdditiveAttention/masks"] = B(lambda: (lambda q, v, m: L.AdditiveAttention(use_scale=False)(
        [q, v], mask=[None, m], return_attention_scores=True)), [((3, 4), f, "normal"), ((5, 4), f, "normal"),
                                                                ((5,), "bool", "int:2")])
    t["MultiHeadAttention/mask"] = B(lambda: (lambda q, v, m: L.MultiHeadAttention(2, 2)(
        q, v, attention_mask=m, return_attention_scores=True)), [((3, 4), f, "normal"), ((5, 4), f, "normal"),
                                                                   ((3, 5), "bool", "int:2")])
    t["IntegerLookup/count_mask"] = B(lambda: L.IntegerLookup(vocabulary=[3, 5, 7], mask_token=0, output_mode="count"),
                                      [((6,), "int64", "int:9")])
    t["Discretization/multi_hot"] = B(lambda: L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="multi_hot"),
                                      [((5,), f, "normal")])
    t["Normalization/axis_none"] = B(lambda: L.Normalization(axis=None), v3, adapt=rng.standard_normal((10, 4, 5)))
    t["GroupNormalization/instance"] = B(lambda: L.GroupNormalization(groups=-1, center=False), [((5, 4), f, "normal")])
    t["LayerNormalization/no_center"] = B(lambda: L.LayerNormalization(center=False, scale=False, epsilon=0.1), v3)
    t["PReLU/shared"] = B(lambda: L.PReLU(shared_axes=[1, 2]), img)
    t["Permute/4d"] = B(lambda: L.Permute((3, 1, 2)), img)
    t["Cropping2D/channels_first"] = B(lambda: L.Cropping2D(1, data_format="channels_first"), img)
    t["ZeroPadding3D/channels_first"] = B(lambda: L.ZeroPadding3D((1, 0, 2), data_format="channels_first"), vol)
    for owner, keys in OWNERS.items():
        for k in keys:
            t[k].owner = owner
    del tf
    return t


def layer_classes():
    """{canonical class name: [every public name of it]} for the public Layer subclasses of keras.layers."""
    import inspect
    import keras
    out = {}
    for n in sorted(dir(keras.layers)):
        c = getattr(keras.layers, n)
        if not n.startswith("_") and inspect.isclass(c) and issubclass(c, keras.layers.Layer):
            out.setdefault(c, []).append(n)
    rows = {}
    for c, names in out.items():
        canon = c.__name__ if c.__name__ in names else names[0]
        rows[canon] = sorted(names)
    return rows


def randomize(model, rng):
    """Random float weights; variances (normalization statistics) positive."""
    import numpy as np
    for w in model.weights:
        dt = np.dtype(w.dtype) if not hasattr(w.dtype, "name") else np.dtype(w.dtype.name)
        if dt.kind != "f":
            continue
        name = w.path if hasattr(w, "path") else w.name
        shape = tuple(w.shape)
        if "variance" in name or name.endswith("/count"):
            val = rng.uniform(0.5, 1.5, shape)
        else:
            val = rng.standard_normal(shape) * 0.5
        w.assign(val.astype(dt))


def make_input(shape, dtype, kind, batch, rng):
    import numpy as np
    full = (batch,) + tuple(shape)
    if kind == "image":
        return rng.uniform(0, 255, full).astype(dtype)
    if kind == "audio":
        return (np.sin(np.arange(np.prod(full)).reshape(full) * 0.3) + 0.1 * rng.standard_normal(full)).astype(dtype)
    if kind.startswith("int:"):
        return rng.integers(0, int(kind[4:]), full).astype(dtype)
    if kind == "words":
        return np.array(rng.choice(["a", "bc", "d", "zz", ""], full), dtype=object)
    if kind == "text":
        return np.array(rng.choice(["the cat ran", "A dog, far away!", "sat sat"], full), dtype=object)
    return rng.standard_normal(full).astype(dtype)


def graph_ops(d):
    """The op types of an export (graph and function library), less the plumbing."""
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(d, "saved_model.pb"), "rb") as fh:
        sm.ParseFromString(fh.read())
    ops = set()
    for mg in sm.meta_graphs:
        ops.update(n.op for n in mg.graph_def.node)
        for fn in mg.graph_def.library.function:
            ops.update(n.op for n in fn.node_def)
    return sorted(ops - PLUMBING)


def compare(got, want):
    import numpy as np
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, TF {want.shape}"
    if want.dtype.kind in "fc":
        if got.dtype != want.dtype:
            return f"dtype {got.dtype}, TF {want.dtype}"
        fin = np.isfinite(want)
        scale = max(1.0, float(np.abs(want[fin]).max())) if fin.any() else 1.0
        bad = ~((np.abs(got.astype(np.float64) - want) <= 1e-5 * scale) | (got == want) |
                (np.isnan(got) & np.isnan(want)))
        if bad.any():
            i = np.argwhere(bad)[0]
            return (f"{int(bad.sum())}/{bad.size} differ, max |diff| "
                    f"{float(np.nanmax(np.abs(got.astype(np.float64) - want))):.3g} (scale {scale:.3g}); "
                    f"at {tuple(int(j) for j in i)}: {got[tuple(i)]} vs TF {want[tuple(i)]}")
        return None
    if got.dtype.kind in "OSU" or want.dtype.kind in "OSU":
        g = [x.decode() if isinstance(x, bytes) else str(x) for x in got.ravel()]
        w = [x.decode() if isinstance(x, bytes) else str(x) for x in want.ravel()]
        return None if g == w else f"strings differ: {g[:4]} vs TF {w[:4]}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, TF {want.dtype}"
    return None if np.array_equal(got, want) else f"values differ: {got.ravel()[:6]} vs TF {want.ravel()[:6]}"


def sweep_one(name, b, tmp):
    """Build, export, run both ways: a result dict (status matched / failed / error)."""
    import numpy as np
    import tensorflow as tf
    import keras
    import savedmodel
    rng = np.random.default_rng(SEED + sum(map(ord, name)))
    res = {"class": name, "owner": b.owner, "ops": [], "status": "failed", "detail": ""}
    stage = "build"
    try:
        keras.utils.set_random_seed(SEED)
        feed = {f"in{i}": make_input(s, dt, k, b.batch, rng) for i, (s, dt, k) in enumerate(b.inputs)}
        if b.model is not None:
            model = b.model()
        elif b.subclass:
            model = _Wrap(b.make())
            model(*feed.values())
        else:
            ins = [keras.Input(s, dtype=dt, name=f"in{i}") for i, (s, dt, _) in enumerate(b.inputs)]
            layer = b.make()
            if b.adapt is not None:
                layer.adapt(b.adapt)
            if isinstance(layer, keras.layers.Layer):
                out = layer(ins[0] if len(ins) == 1 else ins)
            else:
                out = layer(*ins)
            model = keras.Model(ins, out)
        if not b.keep_weights:
            randomize(model, rng)
        stage = "export"
        d = os.path.join(tmp, name.replace("/", "."))
        if b.subclass:
            model.export(d, verbose=False, input_signature=[
                tf.TensorSpec((None,) + tuple(s), dt, name=f"in{i}") for i, (s, dt, _) in enumerate(b.inputs)])
        else:
            model.export(d, verbose=False)
        res["ops"] = graph_ops(d)
        stage = "TensorFlow"
        tsig = tf.saved_model.load(d).signatures["serving_default"]
        want = {k: v.numpy() for k, v in tsig(**{k: tf.constant(v) for k, v in feed.items()}).items()}
        stage = "savedmodel"
        with savedmodel.load(d) as m:
            got = m.signatures["serving_default"](**feed)
        stage = "compare"
        if sorted(got) != sorted(want):
            raise AssertionError(f"outputs {sorted(got)}, TF {sorted(want)}")
        errs = [f"{k}: {e}" for k in sorted(want) if (e := compare(got[k], want[k]))]
        if errs:
            res["detail"] = "; ".join(errs)
        else:
            res["status"] = "matched"
    except Exception as e:  # every failure is a row of the table; the sweep goes on
        msg = " ".join(str(e).split())
        msg = msg if len(msg) <= 500 else msg[:150] + " ... " + msg[-350:]
        res["detail"] = f"{stage}: {type(e).__name__}: {msg}"
        if stage in ("build", "export", "TensorFlow"):
            res["status"] = "error"   # not ours: the builder or TensorFlow refused
    return res


class _Wrap:
    """A Model subclass around one layer, built on first use (keras is imported lazily)."""

    def __new__(cls, layer):
        import keras

        class Wrap(keras.Model):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def call(self, *xs):
                while len(xs) == 1 and isinstance(xs[0], (list, tuple)):  # export passes a list
                    xs = tuple(xs[0])
                return self.inner(xs[0] if len(xs) == 1 else list(xs))
        return Wrap(layer)


def worker(names, out_path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import warnings
    warnings.simplefilter("ignore")
    import absl.logging
    absl.logging.set_verbosity("error")
    table = builders()
    tmp = tempfile.mkdtemp(prefix="sm-sweep-")
    with open(out_path, "a") as out:
        for n in names:
            out.write(json.dumps({"class": n, "status": "started"}) + "\n")
            out.flush()
            r = sweep_one(n, table[n], tmp)
            out.write(json.dumps(r) + "\n")
            out.flush()
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)


def run_chunk(names, build, tmpdir, idx, timeout):
    """Runs a worker over names, restarting it past a class it died on; the results in order."""
    results = {}
    todo = list(names)
    attempt = 0
    while todo:
        path = os.path.join(tmpdir, f"w{idx}.{attempt}.jsonl")
        env = dict(os.environ, SAVEDMODEL_LIBRARY=os.path.join(build, "libsavedmodel.so"),
                   TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.path.join(ROOT, "python"))
        # TF's reference from its oneDNN CPU path, the default on Intel x86 but off by default on other
        # CPUs (AMD): without it TF's own kernels refuse a dilated Conv2DTranspose and an NCHW Conv2D
        # that TF's default Intel build runs, so the row would fail for TF's reasons, not ours.
        env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", ",".join(todo),
                                "--out", path], env=env, capture_output=True, timeout=timeout)
            died = f"worker exited {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}"
        except subprocess.TimeoutExpired:
            died = f"timed out after {timeout} s"
        started = None
        if os.path.exists(path):
            for line in open(path):
                r = json.loads(line)
                if r["status"] == "started":
                    started = r["class"]
                else:
                    results[r["class"]] = r
                    started = None
        if started is not None:
            results[started] = {"class": started, "ops": [], "status": "failed",
                                "detail": f"crashed: {' '.join(died.split())}"}
        todo = [n for n in todo if n not in results]
        if todo and started is None:  # died before starting any: give up on the rest
            for n in todo:
                results[n] = {"class": n, "ops": [], "status": "failed", "detail": f"not run: {died}"}
            todo = []
        attempt += 1
    return results


def write_md(path, rows, classes, table, counts):
    import keras
    with open(path, "w") as fh:
        fh.write("# Keras layer sweep\n\n")
        fh.write(f"Generated by `tests/interop/test_keras_layer_sweep.py --md` (Keras {keras.__version__}): "
                 "every public layer class of `keras.layers`, in a small model with random weights, exported "
                 "with `model.export` and run by libsavedmodel against TensorFlow "
                 "(|ours - tf| <= 1e-5 x max(1, max|tf|)). Owner: the branch whose kernels a row needs.\n\n")
        fh.write(f"{counts}\n\n| class | ops | status |\n|---|---|---|\n")
        for canon in sorted(classes):
            alias = [a for a in classes[canon] if a != canon]
            label = canon + (f" ({', '.join(alias)})" if alias else "")
            if canon in EXCLUDED:
                fh.write(f"| {label} | | excluded: {EXCLUDED[canon]} |\n")
                continue
            keys = [k for k in sorted(table) if k.split("/")[0] == canon]
            if not keys:
                fh.write(f"| {label} | | FAIL: neither built nor excluded |\n")
            for k in keys:
                r = rows[k]
                st = r["status"]
                if st != "matched":
                    st = f"{st}: {r['detail'][:160]}".replace("|", "/")
                if table[k].owner:
                    st += f" (owner: {table[k].owner})"
                var = f" /{k.split('/', 1)[1]}" if "/" in k else ""
                fh.write(f"| {label}{var} | {' '.join(r['ops'])} | {st} |\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--md", default="")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--worker", default="")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker.split(","), args.out)
        return 0
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    t0 = time.time()
    build = os.path.abspath(args.build)
    classes = layer_classes()
    table = builders()
    failed, passed = [], 0
    built = {k.split("/")[0] for k in table}
    for canon in sorted(classes):
        if canon not in built and canon not in EXCLUDED and not args.only:
            failed.append(canon)
            print(f"FAIL  {canon}: neither built nor excluded: add a builder or an EXCLUDED reason")
    for n in sorted(built - set(classes)):
        print(f"note  builder for {n}, which keras.layers no longer has")
    names = [n for n in sorted(table) if n.split("/")[0] in classes]
    if args.only:
        names = [n for n in names if n in args.only.split(",") or n.split("/")[0] in args.only.split(",")]
    import concurrent.futures
    import shutil
    tmpdir = tempfile.mkdtemp(prefix="sm-sweep-jobs-")
    jobs = max(1, min(args.jobs, len(names)))
    chunks = [names[i::jobs] for i in range(jobs)]
    rows = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
            for res in ex.map(lambda ic: run_chunk(ic[1], build, tmpdir, ic[0], args.timeout), enumerate(chunks)):
                rows.update(res)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    by = {"matched": [], "failed": [], "error": []}
    for n in names:
        r = rows[n]
        by[r["status"]].append(n)
        own = f" [owner={table[n].owner}]" if table[n].owner else ""
        if r["status"] == "matched":
            passed += 1
            print(f"ok    {n}{own}: {' '.join(r['ops'])}")
        else:
            failed.append(n)
            print(f"FAIL  {n}{own} ({r['status']}): {r['detail']}\n      ops: {' '.join(r['ops'])}")
    pending = {o: [n for n in failed if n in table and table[n].owner == o] for o in ("strings", "image")}
    bad_cls = {n.split("/")[0] for n in failed}
    counts = (f"{len(classes)} classes ({sum(len(v) for v in classes.values())} public names), "
              f"{len(EXCLUDED)} excluded, {len({n.split('/')[0] for n in names})} built in {len(names)} models: "
              f"{len(by['matched'])} models matched, {len(by['failed'])} failed here, "
              f"{len(by['error'])} not exportable by TensorFlow; classes with every model matching: "
              f"{len({n.split('/')[0] for n in names} - bad_cls)}")
    print("\nsummary: " + counts)
    for o, v in pending.items():
        if v:
            print(f"  failing, owner={o} (expected until that branch merges): {' '.join(v)}")
    stale = [n for n in names if table[n].owner and rows[n]["status"] == "matched"]
    if stale:
        print(f"  matching though marked with an owner (drop the mark in OWNERS): {' '.join(stale)}")
    mine = [n for n in failed if n not in table or not table[n].owner]
    if mine:
        print(f"  failing, no owner: {' '.join(mine)}")
    print(f"  {time.time() - t0:.0f} s with {jobs} workers")
    if args.md and not args.only:
        write_md(args.md, rows, classes, table, counts)
        print(f"  table written to {args.md}")
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
