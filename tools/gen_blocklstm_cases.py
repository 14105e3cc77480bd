#!/usr/bin/env python3
"""gen_blocklstm_cases.py - writes tests/unit/blocklstm_cases.h: TensorFlow's fused LSTM / GRU block
ops (src/ops/rnn_block.c) against TF 2.21's CPU kernels (eager tf.raw_ops): LSTMBlockCell,
BlockLSTM, BlockLSTMV2, GRUBlockCell and their gradients LSTMBlockCellGrad, BlockLSTMGrad,
BlockLSTMGradV2, GRUBlockCellGrad. Random shapes (batch 0 and 1, time 0 and 1, seq_len_max below
the time dimension), peephole on/off, forget_bias, cell_clip on/off, float and half (the types TF
registers: half and float for the LSTM ops, float for GRU), and TF's error texts for bad shapes.
The gradient cases feed TF's own forward outputs. The grad ops take up to 18 inputs, more than
array_case.h's tc_case holds, so the cases are `bl_case`s (defined in the header written here).

Uses the machinery of tools/gen_array_cases.py. Run: build/venv/bin/python tools/gen_blocklstm_cases.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_array_cases as g  # noqa: E402
import tensorflow as tf  # noqa: E402



def case(*a, **k):
    print(a[0], file=sys.stderr, flush=True)  # the last name printed is the case a TF abort hit
    g.case(*a, **k)


rng = np.random.default_rng(23)
f32, f16, i64 = np.float32, np.float16, np.int64
R = tf.raw_ops


def U(*shape, dt=f32, s=1.0):
    return np.round(rng.uniform(-s, s, shape), 2).astype(dt)  # two decimals: short in the header


_fmt = g.fmt_values


def fmt_values(t):
    """float32 and half in their shortest round-tripping form (numpy's str): a smaller header."""
    if t.dtype in (tf.float32, tf.float16):
        return " ".join(str(v) for v in t.numpy().reshape(-1))
    return _fmt(t)


g.fmt_values = fmt_values


def lstm_params(B, I, Uc, dt, T=None):
    x = U(B, I, dt=dt) if T is None else U(T, B, I, dt=dt)
    return dict(x=x, cs_prev=U(B, Uc, dt=dt, s=2.0), h_prev=U(B, Uc, dt=dt), w=U(I + Uc, 4 * Uc, dt=dt),
                wci=U(Uc, dt=dt), wcf=U(Uc, dt=dt), wco=U(Uc, dt=dt), b=U(4 * Uc, dt=dt, s=0.5))


LSTM_IN = ("x", "cs_prev", "h_prev", "w", "wci", "wcf", "wco", "b")
GATES = ("i", "cs", "f", "o", "ci", "co")


def cell(name, p, attrs, grad=True):
    case("LSTMBlockCell " + name, "LSTMBlockCell", [(k, p[k]) for k in LSTM_IN], attrs)
    if not grad or g.CASES[-1][4]:  # no gradient case where TF refuses the forward op
        return
    out = R.LSTMBlockCell(**{k: tf.constant(p[k]) for k in LSTM_IN}, **attrs)
    B, Uc = p["cs_prev"].shape
    dt = p["x"].dtype
    ins = [(k, p[k]) for k in LSTM_IN] + [(k, getattr(out, k)) for k in GATES]
    ins += [("cs_grad", U(B, Uc, dt=dt)), ("h_grad", U(B, Uc, dt=dt))]
    case("LSTMBlockCellGrad " + name, "LSTMBlockCellGrad", ins, {"use_peephole": attrs.get("use_peephole", False)})


def block(name, p, seq, attrs, v2=False, grad=True):
    op = "BlockLSTMV2" if v2 else "BlockLSTM"
    ins = [("seq_len_max", np.array(seq, i64))] + [(k, p[k]) for k in LSTM_IN]
    case(op + " " + name, op, ins, attrs)
    nm, node, flat, outs, err = g.CASES[-1]
    if not err:  # TF zeroes cs and h past seq_len_max and leaves i, f, o, ci, co uninitialized: here all are zero
        outs = [tf.constant(np.concatenate([o.numpy()[:seq], np.zeros_like(o.numpy()[seq:])])) for o in outs]
        g.CASES[-1] = (nm, node, flat, outs, err)
    if not grad or err:
        return
    out = dict(zip(GATES + ("h",), outs))
    T, B = p["x"].shape[:2]
    Uc = p["cs_prev"].shape[1]
    dt = p["x"].dtype
    gins = ins + [(k, out[k]) for k in GATES + ("h",)]
    gins += [("cs_grad", U(T, B, Uc, dt=dt)), ("h_grad", U(T, B, Uc, dt=dt))]
    gop = "BlockLSTMGradV2" if v2 else "BlockLSTMGrad"
    case(gop + " " + name, gop,
         gins, {"use_peephole": attrs.get("use_peephole", False)})


def gru(name, B, I, Uc, grad=True, **over):
    p = dict(x=U(B, I), h_prev=U(B, Uc), w_ru=U(I + Uc, 2 * Uc), w_c=U(I + Uc, Uc), b_ru=U(2 * Uc, s=0.5), b_c=U(Uc, s=0.5))
    p.update(over)
    keys = ("x", "h_prev", "w_ru", "w_c", "b_ru", "b_c")
    case("GRUBlockCell " + name, "GRUBlockCell", [(k, p[k]) for k in keys])
    if not grad or g.CASES[-1][4]:
        return
    out = R.GRUBlockCell(**{k: tf.constant(p[k]) for k in keys})
    ins = [(k, p[k]) for k in keys] + [("r", out.r), ("u", out.u), ("c", out.c), ("d_h", U(B, Uc))]
    case("GRUBlockCellGrad " + name, "GRUBlockCellGrad", ins)


def valid():
    for dt in (f32, f16):
        tag = "half " if dt == f16 else ""
        shapes = [(1, 1, 1), (2, 3, 4), (3, 5, 2)] if dt == f32 else [(1, 2, 3), (3, 4, 2)]
        for B, I, Uc in shapes:
            for peep in (False, True):
                for fb, clip in ((1.0, 3.0), (0.0, -1.0), (2.5, 0.2)) if dt == f32 else ((1.0, 3.0), (0.5, 0.2)):
                    cell("%sB%d I%d U%d peep%d fb%g clip%g" % (tag, B, I, Uc, peep, fb, clip), lstm_params(B, I, Uc, dt),
                         {"forget_bias": fb, "cell_clip": clip, "use_peephole": peep})
        cell(tag + "defaults", lstm_params(2, 3, 2, dt), {})
        cell(tag + "batch 0", lstm_params(0, 3, 2, dt), {"use_peephole": True})
        cell(tag + "input 0", lstm_params(2, 0, 3, dt), {"use_peephole": True})
        # BlockLSTM / V2: time 0, 1, several; seq_len_max below T
        bshapes = ((0, 2, 3, 2, 0), (1, 1, 2, 3, 1), (3, 2, 3, 4, 3), (4, 3, 2, 2, 2), (5, 1, 3, 3, 0), (3, 2, 1, 5, 1),
                   (2, 0, 3, 2, 2), (2, 2, 0, 3, 2))
        if dt == f16:
            bshapes = ((1, 1, 2, 3, 1), (3, 2, 3, 4, 3), (4, 3, 2, 2, 2))
        for T, B, I, Uc, seq in bshapes:
            for peep in (False, True):
                for v2 in (False, True):
                    clip = (3.0 if peep else -1.0) if not v2 else (0.0 if peep else 0.3)
                    attrs = {"cell_clip": clip, "use_peephole": peep}
                    if not v2:
                        attrs["forget_bias"] = 1.0 if peep else 0.5
                    block("%sT%d B%d I%d U%d seq%d peep%d clip%g" % (tag, T, B, I, Uc, seq, peep, clip),
                          lstm_params(B, I, Uc, dt, T=T), seq, attrs, v2=v2)
        block(tag + "strong clip", lstm_params(2, 3, 4, dt, T=3), 3, {"cell_clip": 0.3, "use_peephole": True})
        block(tag + "defaults", lstm_params(2, 2, 3, dt, T=3), 3, {})
        block(tag + "defaults", lstm_params(2, 2, 3, dt, T=3), 3, {}, v2=True)
    for B, I, Uc in ((1, 1, 1), (2, 3, 4), (3, 5, 2), (0, 3, 2), (2, 0, 3)):
        gru("B%d I%d U%d" % (B, I, Uc), B, I, Uc)


def errors():
    """TF's error texts for bad shapes (one wrong thing per case). A wrong rank aborts TF 2.21 (a
    CHECK failure in dim_size): test_ops_blocklstm checks those by hand."""
    B, I, Uc = 2, 3, 4
    base = lstm_params(B, I, Uc, f32)
    bad = {"cs_prev batch": ("cs_prev", U(B + 1, Uc)), 
           "h_prev batch": ("h_prev", U(B + 1, Uc)), "h_prev cell": ("h_prev", U(B, Uc + 1)),
           "w rows": ("w", U(I + Uc + 1, 4 * Uc)), "w cols": ("w", U(I + Uc, 4 * Uc - 1)),
           "wci size": ("wci", U(Uc + 1)), "wcf size": ("wcf", U(Uc - 1)),
           "b size": ("b", U(4 * Uc + 1))}
    for name, (k, v) in bad.items():
        p = dict(base)
        p[k] = v
        if k not in ("wci", "wcf"):  # TF 2.21's LSTMBlockCell does not check these (reads out of bounds): hand tests
            cell("err " + name, p, {}, grad=False)
    T = 3
    bbase = lstm_params(B, I, Uc, f32, T=T)
    for name, (k, v) in bad.items():
        p = dict(bbase)
        p[k] = v
        block("err " + name, p, T, {}, grad=False)
        block("err " + name, p, T, {}, v2=True, grad=False)
    gb = dict(x=U(B, I), h_prev=U(B, Uc), w_ru=U(I + Uc, 2 * Uc), w_c=U(I + Uc, Uc), b_ru=U(2 * Uc), b_c=U(Uc))
    for name, (k, v) in {"h_prev batch": ("h_prev", U(B + 1, Uc)), "w_ru rows": ("w_ru", U(I + Uc + 1, 2 * Uc)),
                         "w_ru cols": ("w_ru", U(I + Uc, 2 * Uc + 1)), "w_c cols": ("w_c", U(I + Uc, Uc + 1)),
                         "w_c rows": ("w_c", U(I + Uc - 1, Uc)), "b_ru size": ("b_ru", U(2 * Uc - 1)),
                         "b_c size": ("b_c", U(Uc + 2))}.items():
        p = dict(gb)
        p[k] = v
        case("GRUBlockCell err " + name, "GRUBlockCell", [(q, p[q]) for q in gb])
    gout = R.GRUBlockCell(**{k: tf.constant(v) for k, v in gb.items()})
    ggood = [(k, gb[k]) for k in gb] + [("r", gout.r), ("u", gout.u), ("c", gout.c), ("d_h", U(B, Uc))]
    for j in (6, 7, 8, 9):
        ins = list(ggood)
        ins[j] = (ins[j][0], U(B, Uc + 1))
        case("GRUBlockCellGrad err " + ins[j][0], "GRUBlockCellGrad", ins)

    # LSTMBlockCellGrad: a bad gate / grad shape (last: TF 2.21 checks BlockLSTMGrad's gate and grad inputs
    # and cs_prev not at all, a wrong one corrupts its heap; those are hand tests)
    out = R.LSTMBlockCell(**{k: tf.constant(base[k]) for k in LSTM_IN})
    good = [(k, base[k]) for k in LSTM_IN] + [(k, getattr(out, k)) for k in GATES] + [("cs_grad", U(B, Uc)), ("h_grad", U(B, Uc))]
    for j, nm in ((8, "i"), (10, "f"), (14, "cs_grad"), (15, "h_grad"), (3, "w")):
        ins = list(good)
        ins[j] = (ins[j][0], U(B + 1, Uc) if nm != "w" else U(I + Uc, 4 * Uc + 1))
        case("LSTMBlockCellGrad err " + nm, "LSTMBlockCellGrad", ins, {"use_peephole": False})

def write(stem):
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", stem + ".h"))
    guard = "SM_TEST_%s_H" % stem.upper()
    lines = ["/* %s.h - GENERATED by tools/gen_blocklstm_cases.py from TensorFlow %s; do not edit. */" % (stem, tf.__version__),
             "#ifndef " + guard, "#define " + guard, '#include "array_case.h"',
             "typedef struct {", "  const char *name;", "  const char *node;", "  int nin;", "  tc_tensor in[18];",
             "  int nout;", "  tc_tensor out[8];", "  const char *err;", "} bl_case;",
             "static const bl_case %s[] = {" % stem]
    for name, node, flat, outs, err in g.CASES:
        assert len(flat) <= 18 and len(outs) <= 8
        lines.append("    {%s, %s, %d, {%s}, %d, {%s}, %s}," % (
            g.c_str(name), g.c_str(node), len(flat), ", ".join(g.c_tensor(t) for t in flat), len(outs),
            ", ".join(g.c_tensor(t) for t in outs) or "{0}", g.c_str(err) if err else "NULL"))
    lines += ["};", "#endif", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %d cases to %s" % (len(g.CASES), path))


if __name__ == "__main__":
    valid()
    errors()
    write("blocklstm_cases")
