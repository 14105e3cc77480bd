#!/usr/bin/env python3
"""tools/gpu_torch_bench.py - PyTorch eager's side of tools/gpu_check.sh's inference timing.

  python3 tools/gpu_torch_bench.py MODEL BATCH RUNS WARMUP

torchvision's resnet50 / mobilenet_v2 (random weights, eval mode, float32, NCHW 224x224, on cuda:0,
under torch.inference_mode), the input filled like bench_run.c's. Prints one JSON line:
{"median_ms", "best_ms", "images_per_s", "tf32"} (tf32: whether cuDNN may use TF32, PyTorch's
default for convolutions), or {"error": ...} when torch, torchvision or a GPU is missing.
"""
import json
import sys
import time


def main():
    name, batch, runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(json.dumps({"error": f"import: {e}"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda.is_available() is False"}))
        return 0
    ctor = {"resnet50": torchvision.models.resnet50, "mobilenetv2": torchvision.models.mobilenet_v2}[name]
    m = ctor(weights=None).eval().cuda()
    n = batch * 3 * 224 * 224
    x = ((torch.arange(n, dtype=torch.int64) * 37) % 101).float().div(101).sub(0.5).reshape(batch, 3, 224, 224).cuda()
    times = []
    with torch.inference_mode():
        for i in range(warmup + runs):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            m(x).cpu()  # the output comes back to the host, as ours does
            torch.cuda.synchronize()
            if i >= warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    med = times[len(times) // 2]
    print(json.dumps({"median_ms": med, "best_ms": times[0], "images_per_s": batch * 1e3 / med,
                      "tf32": bool(torch.backends.cudnn.allow_tf32)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
