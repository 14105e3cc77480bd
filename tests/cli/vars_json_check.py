#!/usr/bin/env python3
"""Compares a zoo golden vars.json (TensorFlow's reading of a bundle) with
`savedmodel vars --all_tensors --json` (ours). Used by vars.sh; stdlib only.

usage: vars_json_check.py GOLDEN_VARS_JSON OURS_JSON"""
import base64
import hashlib
import json
import math
import struct
import sys

PACK = {"DT_FLOAT": "f", "DT_DOUBLE": "d", "DT_HALF": "e", "DT_INT8": "b", "DT_UINT8": "B",
        "DT_INT16": "h", "DT_UINT16": "H", "DT_INT32": "i", "DT_UINT32": "I", "DT_INT64": "q",
        "DT_UINT64": "Q", "DT_BOOL": "?", "DT_COMPLEX64": "ff", "DT_COMPLEX128": "dd",
        "DT_QINT8": "b", "DT_QUINT8": "B", "DT_QINT16": "h", "DT_QUINT16": "H", "DT_QINT32": "i"}


def flat(v):
  if not isinstance(v, list):
    return [v]
  out = []
  for x in v:
    out.extend(flat(x))
  return out


def num(x):
  if isinstance(x, str):
    return {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf,
            "-inf": -math.inf, "-Infinity": -math.inf}[x]
  return x


def as_bytes(x):
  if isinstance(x, dict):
    return base64.b64decode(x["base64"])
  return x.encode("utf-8")


def le_bytes(dtype, values):
  if dtype == "DT_BFLOAT16":
    return b"".join(struct.pack("<f", num(v))[2:] for v in values)
  code = PACK[dtype]
  if len(code) == 2:  # complex: ours is [re, im] per element, flattened already
    return b"".join(struct.pack("<" + code[0], num(v)) for v in values)
  return b"".join(struct.pack("<" + code, num(v)) for v in values)


def same_number(dtype, a, b):
  if dtype in ("DT_FLOAT", "DT_HALF", "DT_BFLOAT16", "DT_COMPLEX64"):
    a, b = num(a), num(b)
    if math.isnan(a) or math.isnan(b):
      return math.isnan(a) and math.isnan(b)
    code = "<e" if dtype == "DT_HALF" else "<f"  # equal once rounded to the tensor's type
    return struct.pack(code, a) == struct.pack(code, b)
  return num(a) == num(b) or (isinstance(num(a), float) and math.isnan(num(a)) and math.isnan(num(b)))


def main():
  gold = json.load(open(sys.argv[1]))
  ours = json.load(open(sys.argv[2]))["variables"]
  ok = True
  if [g["key"] for g in gold] != [o["key"] for o in ours]:
    print("keys differ:", [g["key"] for g in gold], [o["key"] for o in ours])
    return 1
  for g, o in zip(gold, ours):
    k = g["key"]
    if g["dtype"] != o["dtype"] or g["shape"] != o["shape"]:
      print(k, "dtype/shape", g["dtype"], g["shape"], "vs", o["dtype"], o["shape"])
      ok = False
      continue
    ov = flat(o["value"])
    if g["dtype"] == "DT_STRING":
      gv = flat(g["value"]) if isinstance(g["value"], list) else [g["value"]]
      # The zoo reads strings through numpy's 'S' dtype, which drops trailing NUL bytes.
      if ([base64.b64decode(x).rstrip(b"\0") for x in gv] !=
          [as_bytes(x).rstrip(b"\0") for x in ov]):
        print(k, "string values differ")
        ok = False
    elif g.get("value") is not None:
      gv = flat(g["value"])
      if len(gv) != len(ov) or not all(same_number(g["dtype"], a, b) for a, b in zip(gv, ov)):
        print(k, "values differ")
        ok = False
    elif "sha256_le" in g and (g["dtype"] in PACK or g["dtype"] == "DT_BFLOAT16"):
      if hashlib.sha256(le_bytes(g["dtype"], ov)).hexdigest() != g["sha256_le"]:
        print(k, "sha256 of values differs")
        ok = False
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
