/* vmath_lanes.h - the bodies of vmath.c's functions, for one vector width: included by vmath.c
 * once per width (8 lanes: the baseline and AVX2+FMA builds; 16 lanes: the AVX-512 build), with
 * VF / VI the float / int32 vector types, VM_FN(name) the width's name of a function, and SPLAT,
 * ISPLAT, SEL, VABS, ALWAYS defined for them. Deliberately no include guard. The operations are
 * the same at every width, element by element, so an element's result does not depend on the width
 * that computed it beyond FMA contraction (every width with FMA contracts the same expressions). */
/* In place through a pointer: a vector passed or returned by value changes the baseline ABI.
 * VM_SCALE(p, nf), where defined (the AVX-512 width): p 2^nf rounded once. */
/* exp of x clamped to [-104, 88.73] (vexp) and of x <= 0 (or NaN), whose upper clamp would never
 * act (vexp_neg: sigmoid's exp(-|x|)); the same bits. */
ALWAYS void VM_FN(vexp_clamped)(VF *v) {
  VF x = *v;
  const VF magic = SPLAT(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
  VF t = x * SPLAT(1.44269504088896341f) + magic;
  VI n = (VI)t - (VI)magic;
  VF nf = t - magic;
  VF r = x - nf * SPLAT(0.693359375f);
  r = r - nf * SPLAT(-2.12194440e-4f);
  VF p = SPLAT(1.9875691500e-4f);
  p = p * r + SPLAT(1.3981999507e-3f);
  p = p * r + SPLAT(8.3334519073e-3f);
  p = p * r + SPLAT(4.1665795894e-2f);
  p = p * r + SPLAT(1.6666665459e-1f);
  p = p * r + SPLAT(5.0000001201e-1f);
  p = p * (r * r) + r + SPLAT(1.0f);
#ifdef VM_SCALE
  /* p 2^n rounded once (AVX-512's scalef): what the two factors below give, in one instruction */
  (void)n;
  *v = VM_SCALE(p, nf);
#else
  VI n1 = n >> 1, n2 = n - n1;
  VF s1 = (VF)((n1 + ISPLAT(127)) << 23), s2 = (VF)((n2 + ISPLAT(127)) << 23);
  *v = p * s1 * s2;
#endif
}

ALWAYS void VM_FN(vexp)(VF *v) {
  VF x = *v;
  x = SEL(x < SPLAT(-104.0f), SPLAT(-104.0f), x);
  *v = SEL(x > SPLAT(88.73f), SPLAT(88.73f), x);
  VM_FN(vexp_clamped)(v);
}

ALWAYS void VM_FN(vexp_neg)(VF *v) {
  *v = SEL(*v < SPLAT(-104.0f), SPLAT(-104.0f), *v);
  VM_FN(vexp_clamped)(v);
}

ALWAYS void VM_FN(vsigmoid)(VF *v) {
  VF x = *v, e = -VABS(x);
  VM_FN(vexp_neg)(&e);
  VF d = SPLAT(1.0f) + e;
  /* one division: the numerator picked first gives each lane the quotient it had (1/d or e/d) */
  *v = SEL(x >= SPLAT(0.0f), SPLAT(1.0f), e) / d;
}

/* swish(x) = x * sigmoid(x): the product after the same sigmoid, so a fused swish epilogue and the
 * unfused Sigmoid then Mul agree to the bit. */
ALWAYS void VM_FN(vswish)(VF *v) {
  VF x = *v;
  VM_FN(vsigmoid)(v);
  *v = x * *v;
}

ALWAYS void VM_FN(vtanh)(VF *v) {
  VF x = *v, a = VABS(x);
  VF z = x * x;
  VF p = SPLAT(-5.70498872745e-3f);
  p = p * z + SPLAT(2.06390887954e-2f);
  p = p * z + SPLAT(-5.37397155531e-2f);
  p = p * z + SPLAT(1.33314422036e-1f);
  p = p * z + SPLAT(-3.33332819422e-1f);
  VF small = p * z * a + a;
  VF e = a + a;
  VM_FN(vexp)(&e);
  VF big = SPLAT(1.0f) - SPLAT(2.0f) / (e + SPLAT(1.0f));
  /* both are tanh(|x|) >= 0: x's sign goes on after (so tanh(-0) is -0) */
  *v = (VF)((VI)SEL(a < SPLAT(0.625f), small, big) | ((VI)x & ISPLAT((int32_t)0x80000000u)));
}

/* erf(x) on |x| (the sign put back after): below 1, |x| P(x^2), P of degree 6; from 1 on,
 * 1 - exp(-x^2) R(1/|x|), R of degree 9 fitting erfc(a) exp(a^2) on [1, 4] (least squares in double,
 * relative error 1.6e-9 and 3.1e-8); past 4 the result is 1 to float precision (|x| is clamped
 * there, NaN passes the clamp and comes out NaN). */
ALWAYS void VM_FN(verf)(VF *v) {
  VF x = *v, a = VABS(x);
  a = SEL(a > SPLAT(4.0f), SPLAT(4.0f), a);
  VF z = a * a;
  VF p = SPLAT(7.933422394239024e-05f);
  p = p * z + SPLAT(-8.034827976001666e-04f);
  p = p * z + SPLAT(5.191216606600586e-03f);
  p = p * z + SPLAT(-2.685539872166895e-02f);
  p = p * z + SPLAT(1.1283625713183888e-01f);
  p = p * z + SPLAT(-3.7612629877299e-01f);
  p = p * z + SPLAT(1.1283791665933636f);
  VF small = p * a;
  VF t = SPLAT(1.0f) / a, r = SPLAT(2.6025723169407704e-02f);
  r = r * t + SPLAT(-1.5350190423742768e-01f);
  r = r * t + SPLAT(3.7459802510617185e-01f);
  r = r * t + SPLAT(-4.490048277815535e-01f);
  r = r * t + SPLAT(1.6223747939795985e-01f);
  r = r * t + SPLAT(2.730871098525699e-01f);
  r = r * t + SPLAT(-3.913706321600456e-01f);
  r = r * t + SPLAT(2.40486702964793e-02f);
  r = r * t + SPLAT(5.613180419318146e-01f);
  r = r * t + SPLAT(1.4589363945522528e-04f);
  VF e = -z;
  VM_FN(vexp)(&e);
  VF big = SPLAT(1.0f) - e * r;
  *v = (VF)((VI)SEL(a < SPLAT(1.0f), small, big) | ((VI)x & ISPLAT((int32_t)0x80000000u)));
}

/* 0.5 x (1 + erf(x / sqrt 2)) as the graph spells it (nn_fuse_norm.c's _SmGeluErf): with c =
 * {c0, c1, c2}, (c0 v) (c2 + erf(v c1)); the same float operations as the unfused Mul, Erf,
 * AddV2, Mul kernels, so the fused result is theirs to the bit. */
ALWAYS void VM_FN(vgelu)(VF *v, const float *c) {
  VF x = *v, e = x * SPLAT(c[1]);
  VM_FN(verf)(&e);
  *v = (SPLAT(c[0]) * x) * (SPLAT(c[2]) + e);
}
