#!/usr/bin/env python3
"""tools/gpu_train_bench.py - tools/gpu_check.sh's GPU training check and timing (issue #22).

  python3 tools/gpu_train_bench.py --cli build-gpu/savedmodel --data DIR [--epochs 5] [--batch 32]
                                   [--out DIR] [--min-accuracy 0.90] [--no-torch] [--torch-epochs N]
                                   [--device cpu --limit N]

1. Ours: `savedmodel train --device gpu` of the seeds' CNN - Conv2D(32, 3, relu), MaxPooling2D(2),
   Flatten, Dense(64, relu), Dense(10) - Adam (Keras's defaults), sparse cross-entropy from logits,
   shuffled, on the 60,000 Fashion-MNIST training images, --epochs epochs of --batch, then the test
   accuracy the CLI prints (over the 10,000 test images). Seconds per epoch from when the CLI prints
   "Epoch k/N" to its epoch's final line on the pipe; the last epoch is the steady-state figure.
2. PyTorch eager, the same architecture (NCHW), the same optimizer settings, loss and batch size,
   the data set on the GPU as ours keeps it, a new random order each epoch, the loss and accuracy
   summed on the device and read once per epoch (as ours); cuDNN TF32 as PyTorch defaults;
   --torch-epochs epochs (its test accuracy is after those), the last one timed.
Prints one JSON line {"ours": {...}, "torch": {...}, "ratio": torch s/epoch / ours} and exits 1
when our test accuracy is under --min-accuracy (or our run failed), else 0.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from bench_train import find, read_idx  # noqa: E402 - the IDX reader bench/bench_train.py uses


def ours(args):
    out = os.path.join(args.out or tempfile.mkdtemp(), "gpu_trained")
    cmd = [args.cli, "train", "--device", args.device, "--data", args.data, "--epochs", str(args.epochs),
           "--batch_size", str(args.batch), "--seed", "42", "--out", out]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    t_start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    epoch_t0, epochs, acc, lines = None, [], None, []
    for line in p.stdout:
        now = time.perf_counter()
        lines.append(line.rstrip())
        if re.match(r"^Epoch \d+/\d+", line):
            epoch_t0 = now
        elif epoch_t0 is not None and re.match(r"^\s*\d+/\d+ \[=+\] - ", line):
            epochs.append(now - epoch_t0)
            epoch_t0 = None
        m = re.match(r"^test accuracy: ([0-9.]+)", line)
        if m:
            acc = float(m.group(1))
    rc = p.wait()
    r = {"cmd": " ".join(cmd), "rc": rc, "epoch_s": [round(e, 3) for e in epochs], "test_accuracy": acc,
         "total_s": round(time.perf_counter() - t_start, 2)}
    if epochs:
        r["images_per_s"] = round((args.limit or 60000) / epochs[-1])
    if rc != 0:
        r["tail"] = lines[-8:]
    return r


def torch_side(args):
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        return {"error": f"import: {e}"}
    if not torch.cuda.is_available():
        return {"error": "torch.cuda.is_available() is False"}
    dev = torch.device("cuda:0")
    torch.manual_seed(42)
    xtr = torch.from_numpy(read_idx(find(args.data, "train-images-idx3-ubyte")).astype(np.float32) / 255.0)
    ytr = torch.from_numpy(read_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int64))
    xte = torch.from_numpy(read_idx(find(args.data, "t10k-images-idx3-ubyte")).astype(np.float32) / 255.0)
    yte = torch.from_numpy(read_idx(find(args.data, "t10k-labels-idx1-ubyte")).astype(np.int64))
    xtr, ytr = xtr.reshape(-1, 1, 28, 28).to(dev), ytr.to(dev)
    xte, yte = xte.reshape(-1, 1, 28, 28).to(dev), yte.to(dev)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(32 * 13 * 13, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)  # Keras's defaults
    n, b = xtr.shape[0], args.batch
    epochs = []
    for _ in range(args.torch_epochs or args.epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device=dev)
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), device=dev, dtype=torch.int64)
        model.train()
        for i in range(0, n, b):
            idx = perm[i:i + b]
            xb, yb = xtr[idx], ytr[idx]
            out = model(xb)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * idx.numel()
            correct += (out.argmax(1) == yb).sum()
        float(loss_sum), int(correct)  # the epoch's figures, read once (as ours)
        torch.cuda.synchronize()
        epochs.append(time.perf_counter() - t0)
    model.eval()
    with torch.inference_mode():
        acc = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum()) for i in range(0, 10000, 1000))
    return {"epoch_s": [round(e, 3) for e in epochs], "images_per_s": round(n / epochs[-1]),
            "test_accuracy": acc / 10000, "torch": torch.__version__,
            "tf32_conv": bool(torch.backends.cudnn.allow_tf32)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out")
    ap.add_argument("--min-accuracy", type=float, default=0.90)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-epochs", type=int, default=0, help="PyTorch's epochs (default --epochs; its last is timed)")
    ap.add_argument("--device", default="gpu", help="ours: gpu (cpu for a dry run of this script)")
    ap.add_argument("--limit", type=int, default=0, help="ours: the first N training images (dry runs)")
    args = ap.parse_args()
    r = {"batch": args.batch, "epochs": args.epochs, "ours": ours(args)}
    if not args.no_torch:
        try:
            r["torch"] = torch_side(args)
        except Exception as e:  # noqa: BLE001 - reported, ours still counts
            r["torch"] = {"error": repr(e)}
    o, t = r["ours"], r.get("torch", {})
    if o.get("images_per_s") and t.get("images_per_s"):
        r["ratio"] = round(o["images_per_s"] / t["images_per_s"], 2)
    print(json.dumps(r))
    ok = o["rc"] == 0 and o.get("test_accuracy") is not None and o["test_accuracy"] >= args.min_accuracy
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
