/* train_apply_impl.h - the element updates of the optimizer ops (train_apply.c), instantiated once
 * per working type: train_apply.c defines TA_T (float, double, float complex, double complex),
 * TA_SFX (the function suffix) and TA_REAL (1 for the real types: the ops that take a sign, an
 * absolute value, a max or a power exist for those only), then includes this file. The formulas
 * are those of TensorFlow's CPU functors (tensorflow/core/kernels/training_ops.cc), in its order
 * of operations; sqrt/exp/pow come from <tgmath.h> (so csqrt for the complex types).
 *
 * s[k] are the working copies of the variable and its slots (var first), g the gradient, c the
 * scalar inputs in the op's input order; rows NULL: a dense update of `inner` elements; else the
 * sparse form, grad row r updating variable row rows[r], in order (a repeated row is updated
 * again, as TensorFlow's loops do). */
#define TA_CAT2(a, b) a##b
#define TA_CAT(a, b) TA_CAT2(a, b)

#if TA_REAL
static TA_T TA_CAT(ta_sign_, TA_SFX)(TA_T x) { return x == 0 ? (TA_T)0 : x < 0 ? (TA_T)-1 : (TA_T)1; }
static TA_T TA_CAT(ta_max_, TA_SFX)(TA_T a, TA_T b) { return a < b ? b : a; }
#endif

static void TA_CAT(ta_run_, TA_SFX)(const ta_state *st, TA_T *const *s, const TA_T *gv, const TA_T *c, int64_t step,
                                    int64_t nrows, int64_t inner, const int64_t *rows) {
  typedef TA_T T;
  (void)step;
#if TA_REAL
#define SIGN(x) TA_CAT(ta_sign_, TA_SFX)(x)
#define MAX(a, b) TA_CAT(ta_max_, TA_SFX)(a, b)
#endif
  const T one = 1;
  T alpha = 0;
  if (st->kind == K_ADAM || st->kind == K_AMSGRAD) alpha = c[2] * sqrt(one - c[1]) / (one - c[0]);
  for (int64_t r = 0; r < nrows; r++) {
    int64_t vb = (rows ? rows[r] : r) * inner, gb = r * inner;
    for (int64_t j = 0; j < inner; j++) {
      int64_t i = vb + j;
      T g = gv[gb + j];
      T *var = &s[0][i];
      switch (st->kind) {
        case K_GD:
          *var -= g * c[0];
          break;
        case K_ADADELTA: {
          T *a = &s[1][i], *au = &s[2][i];
          *a = *a * c[1] + g * g * (one - c[1]);
          T upd = sqrt(*au + c[2]) * (one / sqrt(*a + c[2])) * g;
          *var -= upd * c[0];
          *au = *au * c[1] + upd * upd * (one - c[1]);
          break;
        }
        case K_ADAGRAD: {
          T *a = &s[1][i];
          if (st->update_slots) *a += g * g;
          *var -= g * c[0] * (one / sqrt(*a));
          break;
        }
        case K_ADAGRADV2: {
          T *a = &s[1][i];
          if (st->update_slots) *a += g * g;
          *var -= g * c[0] / (sqrt(*a) + c[1]);
          break;
        }
        case K_MOMENTUM: {
          T *a = &s[1][i];
          *a = *a * c[1] + g;
          if (st->nesterov)
            *var -= g * c[0] + *a * c[1] * c[0];
          else
            *var -= *a * c[0];
          break;
        }
        case K_KERAS_MOMENTUM: {
          T *a = &s[1][i];
          *a = *a * c[1] - g * c[0];
          if (st->nesterov)
            *var += *a * c[1] - g * c[0];
          else
            *var += *a;
          break;
        }
        case K_ADAM: {
          T *m = &s[1][i], *v = &s[2][i];
          *m += (g - *m) * (one - c[3]);
          *v += (g * g - *v) * (one - c[4]);
          if (st->nesterov)
            *var -= ((g * (one - c[3]) + c[3] * *m) * alpha) / (sqrt(*v) + c[5]);
          else
            *var -= (*m * alpha) / (sqrt(*v) + c[5]);
          break;
        }
        case K_RMSPROP: {
          T *ms = &s[1][i], *mom = &s[2][i];
          *ms += (g * g - *ms) * (one - c[1]);
          *mom = *mom * c[2] + (g * c[0]) / sqrt(*ms + c[3]);
          *var -= *mom;
          break;
        }
        case K_CENTERED_RMSPROP: {
          T *mg = &s[1][i], *ms = &s[2][i], *mom = &s[3][i];
          *ms += (g * g - *ms) * (one - c[1]);
          *mg += (g - *mg) * (one - c[1]);
          T denom = (*ms - *mg * *mg) + c[3];
          *mom = *mom * c[2] + (g * c[0]) / sqrt(denom);
          *var -= *mom;
          break;
        }
#if TA_REAL
        case K_PROXIMAL_GD: {
          T prox = *var - g * c[0];
          if (c[1] > 0)
            *var = SIGN(prox) * MAX(fabs(prox) - c[0] * c[1], (T)0) / (one + c[2] * c[0]);
          else
            *var = prox / (one + c[2] * c[0]);
          break;
        }
        case K_PROXIMAL_ADAGRAD: {
          T *a = &s[1][i];
          *a += g * g;
          T lr = c[0] * (one / sqrt(*a));
          T prox = *var - g * lr;
          if (c[1] > 0)
            *var = SIGN(prox) * MAX(fabs(prox) - lr * c[1], (T)0) / (one + c[2] * lr);
          else
            *var = prox / (one + c[2] * lr);
          break;
        }
        case K_ADAGRAD_DA: {
          T *ga = &s[1][i], *gsa = &s[2][i];
          *ga += g;
          *gsa += g * g;
          T gs = (T)(float)step;
          if (c[1] > 0)
            *var = c[0] * (T)-1 * SIGN(*ga) * MAX(fabs(*ga) - gs * c[1], (T)0) / (c[2] * (gs * c[0]) + sqrt(*gsa));
          else
            *var = c[0] * *ga * (T)-1 / (c[2] * (gs * c[0]) + sqrt(*gsa));
          break;
        }
        case K_FTRL:
        case K_FTRL_V2: {
          T *a = &s[1][i], *lin = &s[2][i];
          int v2 = st->kind == K_FTRL_V2;
          T lr = c[0], l1 = c[1], l2 = c[2], lp = v2 ? c[4] : c[3];
          T gws = v2 ? g + (T)2 * c[3] * *var : g;
          T na = *a + g * g;
          int half = lp == (T)-0.5;
          T pn = half ? sqrt(na) : pow(na, -lp), po = half ? sqrt(*a) : pow(*a, -lp);
          if (st->mul_lr) {
            *lin += gws * lr - (pn - po) * *var;
            T x = l1 * lr * SIGN(*lin) - *lin;
            T y = pn + (T)2 * l2 * lr;
            *var = fabs(*lin) > l1 * lr ? x / y : (T)0;
          } else {
            *lin += gws - (pn - po) / lr * *var;
            T x = l1 * SIGN(*lin) - *lin;
            T y = pn / lr + (T)2 * l2;
            *var = fabs(*lin) > l1 ? x / y : (T)0;
          }
          *a += g * g;
          break;
        }
        case K_AMSGRAD: {
          T *m = &s[1][i], *v = &s[2][i], *vh = &s[3][i];
          *m += (g - *m) * (one - c[3]);
          *v += (g * g - *v) * (one - c[4]);
          *vh = MAX(*vh, *v);
          *var -= (*m * alpha) / (sqrt(*vh) + c[5]);
          break;
        }
        case K_ADAMAX: {
          T *m = &s[1][i], *v = &s[2][i];
          *m += (g - *m) * (one - c[2]);
          *v = MAX(c[3] * *v, fabs(g));
          *var -= c[1] / (one - c[0]) * (*m / (*v + c[4]));
          break;
        }
        case K_ADD_SIGN:
        case K_POWER_SIGN: {
          T *m = &s[1][i];
          *m = *m * c[3] + g * (one - c[3]);
          T sgm = SIGN(g) * SIGN(*m);
          if (st->kind == K_ADD_SIGN)
            *var -= c[0] * (c[1] + c[2] * sgm) * g;
          else
            *var -= c[0] * exp(c[1] * c[2] * sgm) * g;
          break;
        }
#undef SIGN
#undef MAX
#endif
        default:
          break;
      }
    }
  }
}
