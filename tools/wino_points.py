#!/usr/bin/env python3
"""wino_points.py - the Winograd F(m, 3) matrices for a set of interpolation points (plus infinity),
and their float32 error (session 19 c7, issue #15): how nn_winograd_avx2.c's F(3x3) and F(4x4)
points were chosen.

  python3 tools/wino_points.py matrices 3/2 -3/2 1/4 -1/4     # A^T, G, B^T (B^T rows made integers)
  python3 tools/wino_points.py search                         # a bound over point sets (pure Python)
  build/venv/bin/python tools/wino_points.py simulate         # float32 Winograd vs float64 (numpy)

Construction: A^T[i][j] = p_j^i, G[j][k] = p_j^k / prod_{l != j} (p_j - p_l), the last column / row
for the point at infinity; B^T solved exactly (fractions) from sum_j A^T[i][j] G[j][k] B^T[j][l] =
[l == i + k]; then each B^T row scaled to coprime integers and G's row divided by the same factor
(G is applied in double once per filter). The bound: max_i sum_p |A^T[i][p]| |G[p]|_1 |B^T[p]|_1,
squared for 2D, over the direct sum's 9. simulate: float32 transforms, channel sums in order (in
blocks of b channels with --block), float64 direct reference, max error / max |reference|.
"""
import math
from fractions import Fraction as Fr

def solve_bt(AT, G, m, r, n):
    # for each l: sum_j AT[i][j] G[j][k] BT[j][l] = (l == i+k)
    rows = [[AT[i][j]*G[j][k] for j in range(n)] for i in range(m) for k in range(r)]
    BT = [[None]*n for _ in range(n)]
    for l in range(n):
        rhs = [Fr(1 if l == i+k else 0) for i in range(m) for k in range(r)]
        M = [row[:] + [b] for row, b in zip(rows, rhs)]
        # gaussian elimination
        piv = []
        ri = 0
        for c in range(n):
            p = next((q for q in range(ri, len(M)) if M[q][c] != 0), None)
            if p is None: raise Exception("singular")
            M[ri], M[p] = M[p], M[ri]
            pv = M[ri][c]
            M[ri] = [v/pv for v in M[ri]]
            for q in range(len(M)):
                if q != ri and M[q][c] != 0:
                    f = M[q][c]; M[q] = [a - f*b for a, b in zip(M[q], M[ri])]
            ri += 1
        for q in range(n, len(M)):
            assert all(v == 0 for v in M[q]), "inconsistent"
        for j in range(n): BT[j][l] = M[j][n]
    return BT

def wino(pts, m, r=3):
    n = m + r - 1
    assert len(pts) == n - 1
    AT = [[(pts[j]**i if j < n-1 else Fr(1 if i == m-1 else 0)) for j in range(n)] for i in range(m)]
    G = []
    for j in range(n-1):
        f = Fr(1)
        for l in range(n-1):
            if l != j: f *= pts[j] - pts[l]
        G.append([pts[j]**k / f for k in range(r)])
    G.append([Fr(1 if k == r-1 else 0) for k in range(r)])
    BT = solve_bt(AT, G, m, r, n)
    return AT, G, BT

def amp(AT, G, BT, m, n):
    a = [sum(abs(v) for v in G[p]) for p in range(n)]
    b = [sum(abs(v) for v in BT[p]) for p in range(n)]
    return max(sum(abs(AT[i][p])*a[p]*b[p] for p in range(n)) for i in range(m))


try:
    import numpy as np
    f32 = np.float32
except ImportError:  # search and matrices need no numpy
    np = None


def mats(pts, m):
    AT, G, BT = wino([Fr(p) for p in pts], m)
    n = m + 2
    # normalise BT rows: integers with gcd 1 where possible; compensate in G
    import math as _m
    for p in range(n):
        den = 1
        for v in BT[p]: den = den * v.denominator // _m.gcd(den, v.denominator)
        row = [v * den for v in BT[p]]
        g = 0
        for v in row: g = _m.gcd(g, int(v))
        s = Fr(den, g if g else 1)
        BT[p] = [v * s for v in BT[p]]
        G[p] = [v / s for v in G[p]]
    return (np.array([[float(v) for v in r] for r in AT]), np.array([[float(v) for v in r] for r in G]),
            np.array([[float(v) for v in r] for r in BT]))

def direct(x, f):
    N, H, W, C = x.shape; K = f.shape[3]
    xp = np.zeros((N, H + 2, W + 2, C)); xp[:, 1:-1, 1:-1] = x
    y = np.zeros((N, H, W, K))
    for ky in range(3):
        for kx in range(3):
            y += xp[:, ky:ky+H, kx:kx+W, :] @ f[ky, kx].astype(np.float64)
    return y

def wino_conv(x, f, m, AT, G, BT, stage64=(), seqsum=True, block=0):
    """float32 Winograd; stage64: stages done in float64 ('in', 'sum', 'out', 'filt')"""
    N, H, W, C = x.shape; K = f.shape[3]; n = m + 2
    TY, TX = -(-H // m), -(-W // m)
    xp = np.zeros((N, TY * m + 2, TX * m + 2, C), np.float64); xp[:, 1:H+1, 1:W+1] = x
    d = np.zeros((N, TY, TX, n, n, C))
    for i in range(n):
        for j in range(n):
            d[:, :, :, i, j] = xp[:, i:i + TY*m:m, j:j + TX*m:m]
    d = d.reshape(-1, n, n, C)
    dt = np.float64 if 'in' in stage64 else f32
    BTd = BT.astype(dt); ATd_out = AT.astype(np.float64 if 'out' in stage64 else f32)
    d = d.astype(dt)
    # two 1D passes, each in dt
    t = np.einsum('ij,tjkc->tikc', BTd, d).astype(dt)
    V = np.einsum('lk,tikc->tilc', BTd, t).astype(dt)
    V = V.astype(np.float64 if 'sum' in stage64 else f32)
    U = np.einsum('ij,jkcq,lk->ilcq', G, f.astype(np.float64), G)
    U = U.astype(np.float64 if 'filt' in stage64 else f32).astype(V.dtype)
    T = V.shape[0]
    if 'sum' in stage64:
        M = np.einsum('tijc,ijck->tijk', V, U)
    elif seqsum:
        M = np.zeros((T, n, n, K), f32)
        b = block or C
        for c0 in range(0, C, b):
            P = np.zeros((T, n, n, K), f32)
            for c in range(c0, min(C, c0 + b)):
                P = (P + V[:, :, :, c, None] * U[None, :, :, c, :]).astype(f32)
            M = (M + P).astype(f32)
    else:
        M = np.einsum('tijc,ijck->tijk', V, U).astype(f32)
    M = M.astype(ATd_out.dtype)
    t = np.einsum('ij,tjkq->tikq', ATd_out, M).astype(ATd_out.dtype)
    Y = np.einsum('lk,tikq->tilq', ATd_out, t).astype(ATd_out.dtype)
    Y = Y.reshape(N, TY, TX, m, m, K).transpose(0, 1, 3, 2, 4, 5).reshape(N, TY*m, TX*m, K)[:, :H, :W]
    return Y.astype(np.float64)

def data(kind, N, H, W, C, K, rng):
    if kind == 'pattern':
        e = np.arange(N*H*W*C); x = ((e*37) % 101) / 101.0 - 0.5
        e = np.arange(9*C*K); fl = ((e*53) % 97) / 97.0 - 0.5
        return x.reshape(N, H, W, C).astype(f32), fl.reshape(3, 3, C, K).astype(f32)
    if kind == 'uniform':
        return rng.uniform(-.5, .5, (N, H, W, C)).astype(f32), rng.uniform(-.5, .5, (3, 3, C, K)).astype(f32)
    if kind == 'relu_bn':
        cs = np.exp(rng.normal(0, 1, C))
        x = np.maximum(rng.normal(0.2, 1, (N, H, W, C)), 0) * cs
        f = rng.normal(0, math.sqrt(2 / (9 * C)), (3, 3, C, K)) * np.exp(rng.normal(0, 1.5, K))
        return x.astype(f32), f.astype(f32)


def _search():
    import itertools
    vals = [Fr(0)]
    for v in [Fr(1), Fr(2), Fr(1, 2), Fr(3), Fr(1, 3), Fr(3, 2), Fr(2, 3), Fr(4), Fr(1, 4), Fr(3, 4), Fr(4, 3)]:
        vals += [v, -v]
    for m in (2, 3, 4):
        res = []
        for pts in itertools.combinations(vals, m + 1):
            try:
                AT, G, BT = wino(list(pts), m)
            except Exception:
                continue
            res.append((float(amp(AT, G, BT, m, m + 2)) ** 2 / 9, [str(p) for p in pts]))
        res.sort()
        for r in res[:5]:
            print("F(%d): bound %.1f x the direct sum's, points %s + infinity" % (m, r[0], r[1]))


def _simulate(block):
    rng = np.random.default_rng(2)
    sets = [(2, [0, 1, -1]), (3, ['3/2', '-3/2', '1/4', '-1/4']), (3, [0, 1, -1, '1/2']),
            (4, [0, 1, -1, 2, -2]), (4, [0, 2, -2, '1/2', '-1/2'])]
    for (N, H, W, C, K) in [(2, 8, 8, 256, 32), (2, 16, 16, 64, 32)]:
        for kind in ('pattern', 'uniform', 'relu_bn'):
            x, f = data(kind, N, H, W, C, K, rng)
            ref = direct(x.astype(np.float64), f)
            r = np.abs(ref).max()
            out = []
            for m, pts in sets:
                AT, G, BT = mats(pts, m)
                e = np.abs(wino_conv(x, f, m, AT, G, BT, (), True, block) - ref).max() / r
                out.append("F(%d) %s: %.1e" % (m, ",".join(str(p) for p in pts), e))
            print((N, H, W, C, K), kind, " | ".join(out), flush=True)


if __name__ == "__main__":
    import sys
    cmd = sys.argv[1] if len(sys.argv) > 1 else "search"
    if cmd == "matrices":
        pts = [Fr(a) for a in sys.argv[2:]]
        AT, G, BT = wino(pts, len(pts) - 1)
        m = len(pts) - 1
        for p in range(m + 2):
            den = 1
            for v in BT[p]:
                den = den * v.denominator // math.gcd(den, v.denominator)
            g = 0
            for v in BT[p]:
                g = math.gcd(g, int(v * den))
            s = Fr(den, g if g else 1)
            BT[p] = [v * s for v in BT[p]]
            G[p] = [v / s for v in G[p]]
        for name, M in (("A^T", AT), ("G", G), ("B^T", BT)):
            print(name)
            for row in M:
                print("  " + "  ".join("%6s" % str(v) for v in row))
        print("bound: %.1f x the direct sum's" % (float(amp(AT, G, BT, m, m + 2)) ** 2 / 9))
    elif cmd == "search":
        _search()
    else:
        import numpy as np  # noqa: F811
        blk = int(sys.argv[sys.argv.index("--block") + 1]) if "--block" in sys.argv else 0
        _simulate(blk)
