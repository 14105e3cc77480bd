#!/usr/bin/env python3
"""tools/gpu_models.py - the ResNet50 and MobileNetV2 SavedModels tools/gpu_check.sh times on a GPU.

  build/venv/bin/python tools/gpu_models.py OUT.tar.xz

keras.applications ResNet50 and MobileNetV2 (224x224x3, 1000 logits, weights=None) exported with
Keras 3 model.export. Every weight is a 4093-element block of seeded normals, repeated and scaled
to the He std of its layer (batch-norm variances positive), so that xz packs both models into a
few MB: the GPU machine is reached only through a 64 MiB carry, and a dense float32 convolution
costs the same whatever its weights are. The tarball holds resnet50/ and mobilenetv2/.
"""
import os
import sys
import tarfile
import tempfile

import numpy as np


def fill(model):
    rng = np.random.default_rng(0)
    block = rng.standard_normal(4093).astype(np.float32)
    for v in model.weights:
        shape = tuple(v.shape)
        n = int(np.prod(shape)) if shape else 1
        vals = np.resize(block, n).reshape(shape)
        name = v.path if hasattr(v, "path") else v.name
        if "moving_variance" in name:
            vals = np.abs(vals) * 0.5 + 0.5
        elif "moving_mean" in name or "beta" in name or "bias" in name:
            vals = vals * 0.05
        elif "gamma" in name:
            vals = 1.0 + vals * 0.05
        else:
            fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else max(n, 1)
            vals = vals * np.float32(np.sqrt(2.0 / max(fan_in, 1)))
        v.assign(vals.astype(np.float32))


def main():
    out = sys.argv[1]
    import keras
    with tempfile.TemporaryDirectory() as tmp:
        for name, ctor in (("resnet50", keras.applications.ResNet50), ("mobilenetv2", keras.applications.MobileNetV2)):
            m = ctor(weights=None, input_shape=(224, 224, 3), classifier_activation=None)
            fill(m)
            m.export(os.path.join(tmp, name), verbose=False)
        with tarfile.open(out, "w:xz") as t:
            for name in ("resnet50", "mobilenetv2"):
                t.add(os.path.join(tmp, name), arcname=name)
    print(f"{out}: {os.path.getsize(out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
