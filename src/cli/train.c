/* train.c - `savedmodel train`: train the seeds' CNN, or a model from Keras's model.to_json()
 * (--model), on MNIST-format data and export it.
 *
 * What a Keras script does: load the IDX files (scaled to [0, 1]), build Conv2D(32, 3, relu),
 * MaxPooling2D(2), Flatten, Dense(64, relu), Dense(classes) (or read the model's JSON), compile
 * with Adam and sparse categorical cross-entropy from logits (or the JSON's compile_config, or
 * --optimizer / --loss / --lr_schedule), print summary(), fit with Keras's progress bar, export
 * (sm_seq_export), evaluate on the test split. Every input is read and checked before the first
 * step, so bad data, a bad labels file or an existing --out never costs a training run. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "savedmodel/idx.h"
#include "savedmodel/model.h"
#include "savedmodel/train.h"
/* For epochs_done only (how many epochs a resumed export already has); train.h has no getter. */
#include "train/seq.h"

enum { NCLASSES = 10 };

static const char usage[] =
    "usage: savedmodel train [--data DIR] --epochs N [--batch_size B] --out EXPORT_DIR\n"
    "                        [--labels FILE] [--resume EXPORT_DIR] [--seed S]\n"
    "                        [--validation_split F] [--learning_rate LR] [--limit N]\n"
    "                        [--num_threads T] [--probabilities] [--collective_timeout S]\n"
    "                        [--model MODEL_JSON] [--optimizer NAME[:KEY=VALUE,...]] [--loss LOSS]\n"
    "                        [--lr_schedule exponential:STEPS:RATE[:staircase] | cosine:STEPS[:ALPHA]]\n"
    "                        [--device cpu|gpu] [--timing]\n"
    "\n"
    "Trains the seeds' CNN - Conv2D(32, 3, relu), MaxPooling2D(2), Flatten, Dense(64, relu),\n"
    "Dense(10) - with Adam and sparse categorical cross-entropy on MNIST-format data (DIR holds\n"
    "train-* and t10k-* IDX files, gzipped or not; default " SM_FASHION_MNIST_DIR "),\n"
    "exports it as a SavedModel (serving_default and classify signatures, the label names as an\n"
    "asset, the optimizer state for --resume) and prints the test split's accuracy last:\n"
    "  savedmodel train --epochs 5 --batch_size 32 --out /tmp/fashion/1\n"
    "--resume continues an export's training (weights and optimizer state) for N more epochs,\n"
    "numbered on from the epochs it already has, as Keras's initial_epoch does.\n"
    "--batch_size defaults to 32 (Keras's default); missing parent directories of --out are created.\n"
    "Under `mpirun -np N` the ranks train one model data-parallel: --batch_size is the global batch,\n"
    "each rank takes its shard of it, gradients are averaged over the ranks, rank 0 prints and exports.\n"
    "--model trains the model a Keras model.to_json() file describes instead (Sequential, or a\n"
    "Functional chain; input (height, width, 1), (height, width) or (pixels,), 10 outputs), with its compile_config's optimizer and\n"
    "loss when it has one. --optimizer sgd|adam|adamw|rmsprop with Keras's defaults, changed by KEY=VALUE\n"
    "(learning_rate, momentum, nesterov, beta_1, beta_2, epsilon, weight_decay, rho, centered), e.g.\n"
    "  --optimizer sgd:momentum=0.9,nesterov=1\n"
    "--loss sparse_categorical_crossentropy (default), categorical_crossentropy (one-hot labels) or mse\n"
    "(against one-hot labels); from logits unless the model ends in a softmax.\n";

/* ---- flags -------------------------------------------------------------------------------------- */
static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < lo || x > hi)
    return sm__cli_error(2, "--%s: expected an integer in [%lld, %lld], got '%s'", flag, lo, hi, v);
  *out = x;
  return 0;
}

static int parse_float(const char *flag, const char *v, double lo, double hi, int hi_open, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !(x >= lo) || (hi_open ? !(x < hi) : !(x <= hi)))
    return sm__cli_error(2, "--%s: expected a number in [%g, %g%s, got '%s'", flag, lo, hi, hi_open ? ")" : "]", v);
  *out = x;
  return 0;
}

/* NAME[:KEY=VALUE,...] -> Keras's defaults for NAME with the KEYs changed. */
static int parse_optimizer(const char *spec, sm_optimizer *o) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec);
  char *kv = strchr(buf, ':');
  if (kv) *kv++ = 0;
  *o = sm_optimizer_defaults(buf);
  if (o->kind < 0) return sm__cli_error(2, "--optimizer: unknown optimizer '%s' (sgd, adam, adamw, rmsprop)", buf);
  static const char *const names[] = {"learning_rate", "momentum", "beta_1", "beta_2", "epsilon", "weight_decay", "rho"};
  float *fields[] = {&o->learning_rate, &o->momentum, &o->beta_1, &o->beta_2, &o->epsilon, &o->weight_decay, &o->rho};
  for (char *tok = kv, *next; tok && *tok; tok = next) {
    next = strchr(tok, ',');
    if (next) *next++ = 0;
    char *eq = strchr(tok, '=');
    if (!eq) return sm__cli_error(2, "--optimizer: expected KEY=VALUE, got '%s'", tok);
    *eq++ = 0;
    double v = 0;
    size_t i = 0;
    while (i < sizeof names / sizeof *names && strcmp(tok, names[i])) i++;
    if (i < sizeof names / sizeof *names) {
      if (parse_float(tok, eq, 0, 1e6, 0, &v)) return 2;
      *fields[i] = (float)v;
    } else if (!strcmp(tok, "nesterov") || !strcmp(tok, "centered")) {
      long long b = 0;
      if (parse_int(tok, eq, 0, 1, &b)) return 2;
      *(tok[0] == 'n' ? &o->nesterov : &o->centered) = (int)b;
    } else {
      return sm__cli_error(2, "--optimizer: unknown setting '%s'", tok);
    }
  }
  return 0;
}

/* ---- labels ------------------------------------------------------------------------------------- */
typedef struct {
  char *text;    /* the file, split in place */
  const char *names[NCLASSES];
} labels;

/* One label per line ('\r\n' accepted; a final newline is optional); exactly NCLASSES non-empty lines. */
static sm_status *read_labels(const char *path, labels *out) {
  size_t len;
  sm_status *s = sm__file_read_max(path, 1 << 20, &out->text, &len); /* the message names the path */
  if (s) return s;
  if (memchr(out->text, 0, len)) return sm_status_new(SM_INVALID_ARGUMENT, "%s: labels file holds a NUL byte", path);
  int n = 0;
  char *p = out->text;
  while (*p) {
    char *nl = strchr(p, '\n');
    char *next = nl ? nl + 1 : p + strlen(p);
    if (nl) *nl = 0;
    size_t l = strlen(p);
    if (l && p[l - 1] == '\r') p[--l] = 0;
    if (!l) return sm_status_new(SM_INVALID_ARGUMENT, "%s: line %d is empty (one label per line)", path, n + 1);
    if (n < NCLASSES) out->names[n] = p;
    n++;
    p = next;
  }
  if (n != NCLASSES)
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: %d label(s), one per line; the model has %d classes", path, n,
                         NCLASSES);
  return NULL;
}

/* ---- data --------------------------------------------------------------------------------------- */
/* The first n rows of t (a copy). */
static sm_status *head(sm_tensor *t, int64_t n, sm_tensor **out) {
  int64_t dims[SM_MAX_RANK];
  int rank = sm_tensor_rank(t);
  memcpy(dims, sm_tensor_dims(t), (size_t)rank * sizeof *dims);
  size_t row = dims[0] ? sm_tensor_nbytes(t) / (size_t)dims[0] : 0;
  dims[0] = n;
  sm_status *s = sm_tensor_new(sm_tensor_dtype(t), rank, dims, out);
  if (!s) memcpy(sm_tensor_data(*out), sm_tensor_data(t), row * (size_t)n);
  return s;
}

/* ---- Keras's progress bar (keras.utils.Progbar, verbose=1) --------------------------------------- */
typedef struct {
  int tty;
  int64_t initial_epoch;
  int last_epoch;     /* epoch of the last report */
  int64_t last_step;  /* its step */
  size_t last_width;  /* of the line on screen (tty) */
  double last_draw;
} progress;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fmt_metric(char *buf, size_t cap, const char *name, double v) {
  if (fabs(v) > 1e-3)
    snprintf(buf, cap, " - %s: %.4f", name, v);
  else
    snprintf(buf, cap, " - %s: %.4e", name, v);
}

/* "1875/1875 [==============================] - 12s 6ms/step - loss: 0.4512 - accuracy: 0.8385" */
static size_t format_bar(const sm_fit_progress *p, int final, char *line, size_t cap) {
  char digits[32];
  int nd = snprintf(digits, sizeof digits, "%lld", (long long)p->steps);
  size_t k = 0;
  k += (size_t)snprintf(line + k, cap - k, "%*lld/%lld [", nd, (long long)p->step, (long long)p->steps);
  const int width = 30;
  int prog = (int)((double)width * (double)p->step / (double)p->steps);
  for (int i = 0; i < prog - 1; i++) line[k++] = '=';
  if (prog > 0) line[k++] = p->step < p->steps ? '>' : '=';
  for (int i = prog; i < width; i++) line[k++] = '.';
  line[k++] = ']';
  line[k] = 0;
  double per_step = p->step ? p->elapsed_s / (double)p->step : 0;
  if (p->step < p->steps) {
    long eta = (long)(per_step * (double)(p->steps - p->step));
    if (eta > 3600)
      k += (size_t)snprintf(line + k, cap - k, " - ETA: %ld:%02ld:%02ld", eta / 3600, eta % 3600 / 60, eta % 60);
    else if (eta > 60)
      k += (size_t)snprintf(line + k, cap - k, " - ETA: %ld:%02ld", eta / 60, eta % 60);
    else
      k += (size_t)snprintf(line + k, cap - k, " - ETA: %lds", eta);
  } else {
    k += (size_t)snprintf(line + k, cap - k, " - %.0fs", p->elapsed_s);
    if (per_step >= 1 || per_step == 0)
      k += (size_t)snprintf(line + k, cap - k, " %.0fs/step", per_step);
    else if (per_step >= 1e-3)
      k += (size_t)snprintf(line + k, cap - k, " %.0fms/step", per_step * 1e3);
    else
      k += (size_t)snprintf(line + k, cap - k, " %.0fus/step", per_step * 1e6);
  }
  char m[64];
  fmt_metric(m, sizeof m, "loss", p->loss);
  k += (size_t)snprintf(line + k, cap - k, "%s", m);
  if (!isnan(p->accuracy)) {
    fmt_metric(m, sizeof m, "accuracy", p->accuracy);
    k += (size_t)snprintf(line + k, cap - k, "%s", m);
  }
  if (final && !isnan(p->val_loss)) {
    fmt_metric(m, sizeof m, "val_loss", p->val_loss);
    k += (size_t)snprintf(line + k, cap - k, "%s", m);
    if (!isnan(p->val_accuracy)) {
      fmt_metric(m, sizeof m, "val_accuracy", p->val_accuracy);
      k += (size_t)snprintf(line + k, cap - k, "%s", m);
    }
  }
  return k < cap ? k : cap - 1;
}

/* The trainer reports after every step and once more at the end of the epoch (same step, with
 * the validation metrics): that second report is the epoch's final line. */
static void epoch_header(progress *pr, int epoch, int epochs) {
  printf("Epoch %lld/%lld\n", (long long)(pr->initial_epoch + epoch), (long long)(pr->initial_epoch + epochs));
  fflush(stdout);
  pr->last_width = 0;
  pr->last_draw = 0;
}

/* "Epoch k/N" comes before the epoch's first step, as in Keras: the first one is printed before
 * fit, each next one after the previous epoch's final line. */
static int on_progress(const sm_fit_progress *p, void *ctx) {
  progress *pr = ctx;
  int first = p->epoch != pr->last_epoch;
  int final = !first && p->step == p->steps && pr->last_step == p->steps;
  pr->last_epoch = p->epoch;
  pr->last_step = p->step;
  if (!pr->tty && !final) return 0;
  double t = now_s();
  /* Keras redraws at most every 0.05 s; the last step and the final line always. */
  if (pr->tty && !final && p->step != p->steps && t - pr->last_draw < 0.05) return 0;
  pr->last_draw = t;
  char line[512];
  size_t w = format_bar(p, final, line, sizeof line);
  if (pr->tty) {
    printf("\r%s", line);
    for (size_t i = w; i < pr->last_width; i++) putchar(' ');
    pr->last_width = w;
    if (final) putchar('\n');
  } else {
    printf("%s\n", line);
  }
  if (final && p->epoch < p->epochs) epoch_header(pr, p->epoch + 1, p->epochs);
  fflush(stdout);
  return 0;
}

/* *t [n, h, w, 1] viewed as [n, the model's input shape...]. */
static sm_status *as_input(sm_tensor **t, const sm_seq *m) {
  int64_t dims[4] = {sm_tensor_dims(*t)[0]};
  memcpy(dims + 1, m->in_shape, (size_t)m->in_rank * sizeof *dims);
  sm_tensor *v = NULL;
  sm_status *st = sm_tensor_view(*t, m->in_rank + 1, dims, &v);
  if (st) return st;
  sm_tensor_free(*t);
  *t = v;
  return NULL;
}

/* Class ids (uint8 or int32 [n]) -> float32 one-hot [n, NCLASSES], replacing *y. */
static sm_status *one_hot(sm_tensor **y) {
  int64_t n = sm_tensor_dims(*y)[0], dims[2] = {n, NCLASSES};
  sm_tensor *t = NULL;
  sm_status *st = sm_tensor_new(SM_FLOAT, 2, dims, &t);
  if (st) return st;
  float *o = sm_tensor_data(t);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = sm_tensor_dtype(*y) == SM_INT64 ? ((const int64_t *)sm_tensor_data(*y))[i]
                                                : ((const int32_t *)sm_tensor_data(*y))[i];
    if (c >= 0 && c < NCLASSES) o[i * NCLASSES + c] = 1.0f;
  }
  sm_tensor_free(*y);
  *y = t;
  return NULL;
}

/* ---- the command -------------------------------------------------------------------------------- */
typedef struct {
  const char *data, *out, *labels_file, *resume, *model, *optimizer, *loss, *lr_schedule;
  long long epochs, batch_size, seed, limit, threads;
  double validation_split, learning_rate, collective_timeout;
  int timing;
  int lr_given, probabilities;
  int device; /* SM_DEVICE_CPU / SM_DEVICE_GPU (sm_fit_options.device) */
} train_args;

/* Threads per rank when --num_threads is not given: the cores shared by the ranks on this host. */
static long long default_threads(int size) {
  const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  long local = v ? strtol(v, NULL, 10) : size, cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (local < 1) local = 1;
  return cores / local > 1 ? cores / local : 1;
}

/* --timing: rank 0 prints every rank's last-epoch step time, one line per rank (bench/bench_train_mpi.py
 * reads them): "timing: rank R: S steps, I images, step U us = compute C us + wait W us (CPU: step
 * Uc us = compute Cc us + wait Wc us)", means per step. */
static sm_status *print_timing(const sm_seq *m, int rank, int size) {
  sm_fit_timing tm;
  sm_status *st = sm_seq_fit_timing(m, &tm);
  if (st) return st;
  enum { K = 6 };
  double mine[K] = {(double)tm.steps, (double)tm.images, tm.step_s, tm.wait_s, tm.step_cpu_s, tm.wait_cpu_s};
  double *all = calloc((size_t)size * K, sizeof *all);
  if (!all) return sm_status_new(SM_NO_MEMORY, "--timing: out of memory");
  if (!(st = sm_dist_gather(mine, K, all)) && rank == 0)
    for (int r = 0; r < size; r++) {
      const double *v = all + (size_t)r * K, n = v[0] > 0 ? v[0] : 1, us = 1e6 / n;
      printf("timing: rank %d: %.0f steps, %.0f images, step %.1f us = compute %.1f us + wait %.1f us (CPU: step "
             "%.1f us = compute %.1f us + wait %.1f us)\n", r, v[0], v[1], v[2] * us, (v[2] - v[3]) * us, v[3] * us,
             v[4] * us, (v[4] - v[5]) * us, v[5] * us);
    }
  free(all);
  return st;
}

static int train(const train_args *a) {
  sm_status *st = NULL;
  sm_tensor *x = NULL, *y = NULL, *xt = NULL, *yt = NULL;
  sm_seq *m = NULL;
  labels lab = {0};
  int rc = 1;
  int have_labels = 0;
  int rank = 0, size = 1;

  /* Under mpirun: one rank of a data-parallel job (every rank reads the data; rank 0 alone
   * checks and writes --out, prints and exports). */
  if ((st = sm_dist_init(a->collective_timeout, &rank, &size))) goto fail;
  if (rank > 0) {
    if (!freopen("/dev/null", "w", stdout)) {
      st = sm_status_new(SM_IO, "/dev/null: cannot reopen stdout on it");
      goto fail;
    }
  } else if (sm__path_exists(a->out)) {
    /* Everything that can be wrong with the inputs, before any training. */
    rc = sm__cli_error(1, "%s: already exists; refusing to overwrite (give a new --out)", a->out);
    goto done;
  }
  /* Keras and TF create the parents of an export directory; so do we (before training, so that
   * an --out that cannot be created never costs a run). */
  if (rank == 0 && (st = sm__make_parents(a->out))) goto fail;
  if (rank == 0) {
    char *parent = strdup(a->out);
    if (!parent) goto oom;
    char *slash = strrchr(parent, '/');
    while (slash && slash > parent && slash[1] == 0) { /* trailing slashes */
      *slash = 0;
      slash = strrchr(parent, '/');
    }
    const char *dir = !slash ? "." : slash == parent ? "/" : (*slash = 0, parent);
    int ok = sm__is_dir(dir) && access(dir, W_OK) == 0;
    if (!ok) rc = sm__cli_error(1, "--out %s: the directory %s does not exist or is not writable", a->out, dir);
    free(parent);
    if (!ok) goto done;
  }
  if (a->labels_file) {
    if ((st = read_labels(a->labels_file, &lab))) {
      st = sm_status_prefix(st, "--labels");
      goto fail;
    }
    have_labels = 1;
  } else if (a->resume) {
    /* Keep the names the resumed export was trained with: they must be there (never a silent
     * fallback to Fashion-MNIST's names; sm_seq_resume refuses an export without them too). */
    char *p = sm__path_join(a->resume, "assets/labels.txt");
    if (!p) goto oom;
    if (!sm__path_exists(p))
      st = sm_status_new(SM_NOT_FOUND, "%s is missing: the export's class names are gone (an incomplete export)", p);
    else
      st = read_labels(p, &lab);
    have_labels = !st;
    free(p);
    if (st) {
      st = sm_status_prefix(st, "--resume"); /* the message names the file */
      goto fail;
    }
  }
  if (a->resume) {
    if ((st = sm_seq_resume(a->resume, &m))) goto fail;
  }
  if ((st = sm_mnist_load(a->data, "train", NCLASSES, &x, &y))) goto fail;
  if ((st = sm_mnist_load(a->data, "t10k", NCLASSES, &xt, &yt))) goto fail;
  const int64_t *dx = sm_tensor_dims(x), *dt = sm_tensor_dims(xt);
  int64_t d[3] = {dx[0], dx[1], dx[2]}; /* x may be replaced below */
  if (d[1] != dt[1] || d[2] != dt[2]) {
    rc = sm__cli_error(1, "%s: training images are %lldx%lld but test images %lldx%lld", a->data, (long long)d[1],
                      (long long)d[2], (long long)dt[1], (long long)dt[2]);
    goto done;
  }
  if (d[0] == 0) {
    rc = sm__cli_error(1, "%s: no training images", a->data);
    goto done;
  }
  if (a->limit > 0 && a->limit < d[0]) {
    sm_tensor *x2 = NULL, *y2 = NULL;
    if ((st = head(x, a->limit, &x2)) || (st = head(y, a->limit, &y2))) {
      sm_tensor_free(x2);
      goto fail;
    }
    sm_tensor_free(x);
    sm_tensor_free(y);
    x = x2;
    y = y2;
  }

  /* The model: built here, or the resumed one (whose input must match the data). */
  int64_t initial_epoch = 0;
  if (m) {
    if (m->in_rank != 3 || m->in_shape[0] != d[1] || m->in_shape[1] != d[2] || m->in_shape[2] != 1) {
      rc = sm__cli_error(1, "--resume %s: the model takes other inputs than the %lldx%lld images in %s", a->resume,
                        (long long)d[1], (long long)d[2], a->data);
      goto done;
    }
    initial_epoch = m->epochs_done; /* at most SM_TRAIN_MAX_EPOCHS: sm_seq_resume checks */
    if (initial_epoch > INT64_MAX - a->epochs) {
      rc = sm__cli_error(1, "--resume %s: %lld epochs done; %lld more would overflow the count", a->resume,
                        (long long)initial_epoch, a->epochs);
      goto done;
    }
    printf("Resuming %s: %lld epoch(s), %lld step(s) done\n", a->resume, (long long)initial_epoch,
           (long long)sm_seq_iterations(m));
  } else {
    int64_t in[3] = {d[1], d[2], 1};
    sm_optimizer opt = sm_adam_defaults();
    sm_loss loss = {SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 1};
    int has_opt = 0, has_loss = 0;
    if (a->model) {
      if ((st = sm_seq_from_keras(a->model, &m)) ||
          (st = sm_keras_compile_config(a->model, &opt, &has_opt, &loss, &has_loss)))
        goto fail;
      const sm__layer *last = &m->layers[m->nlayers - 1];
      int64_t in_elems = 1;
      for (int i = 0; i < m->in_rank; i++) in_elems *= m->in_shape[i];
      if (in_elems != d[1] * d[2]) {
        rc = sm__cli_error(1, "--model %s: the model's input must hold the %lldx%lld pixels of the images in %s, "
                          "e.g. (%lld, %lld, 1)", a->model, (long long)d[1], (long long)d[2], a->data,
                          (long long)d[1], (long long)d[2]);
        goto done;
      }
      /* (28, 28) or (784,): the same pixels in the model's shape */
      if ((st = as_input(&x, m)) || (st = as_input(&xt, m))) goto fail;
      if (last->out_rank != 1 || last->out_shape[0] != NCLASSES) {
        rc = sm__cli_error(1, "--model %s: the last layer (%s) must give %d class scores", a->model, last->name, NCLASSES);
        goto done;
      }
      if (!has_opt) opt = sm_adam_defaults();
      if (!has_loss) loss.kind = SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
      /* from logits unless the model ends in a softmax (a loss from compile_config says itself) */
      if (!has_loss) loss.from_logits = last->activation != SM_ACT_SOFTMAX;
    } else if ((st = sm_seq_new(3, in, &m)) || (st = sm_seq_conv2d(m, 32, 3, 3, 1, 1, SM_PAD_VALID, SM_ACT_RELU)) ||
               (st = sm_seq_max_pool2d(m, 2, 2, 2, 2, SM_PAD_VALID)) || (st = sm_seq_flatten(m)) ||
               (st = sm_seq_dense(m, 64, SM_ACT_RELU)) || (st = sm_seq_dense(m, NCLASSES, SM_ACT_NONE))) {
      goto fail;
    }
    if (a->optimizer && parse_optimizer(a->optimizer, &opt)) {
      rc = 2;
      goto done;
    }
    if (a->lr_given) opt.learning_rate = (float)a->learning_rate;
    if (a->lr_schedule && (st = sm_optimizer_set_schedule(&opt, a->lr_schedule))) {
      st = sm_status_prefix(st, "--lr_schedule");
      goto fail;
    }
    if (a->loss) {
      const sm__layer *last = &m->layers[m->nlayers - 1];
      loss.from_logits = last->activation != SM_ACT_SOFTMAX;
      loss.kind = !strcmp(a->loss, "mse") ? SM_LOSS_MSE
                  : !strcmp(a->loss, "categorical_crossentropy") ? SM_LOSS_CATEGORICAL_CROSSENTROPY
                                                                 : SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    }
    if ((st = sm_seq_compile(m, &opt, &loss, (uint64_t)a->seed))) goto fail;
  }
  /* categorical cross-entropy and MSE train on one-hot labels */
  if (m->loss.kind != SM_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY && ((st = one_hot(&y)) || (st = one_hot(&yt)))) goto fail;
  char *summary = sm_seq_summary(m);
  if (summary) fputs(summary, stdout);
  free(summary);
  fflush(stdout);

  progress pr = {0};
  pr.tty = size == 1 && isatty(STDOUT_FILENO); /* mpirun hands ranks a pty: log lines there */
  pr.initial_epoch = initial_epoch;
  sm_fit_options fo = sm_fit_defaults();
  fo.epochs = (int)a->epochs;
  fo.batch_size = a->batch_size;
  /* A resumed run shuffles on from a different stream than the epochs it continues. */
  fo.seed = (uint64_t)a->seed + (uint64_t)initial_epoch;
  fo.validation_split = (float)a->validation_split;
  fo.num_threads = (int)(a->threads || size == 1 ? a->threads : default_threads(size));
  fo.device = a->device;
  fo.callback = on_progress;
  fo.callback_ctx = &pr;
  if (fo.epochs > 0) epoch_header(&pr, 1, fo.epochs);
  double fit_t0 = now_s();
  if ((st = sm_seq_fit(m, x, y, &fo))) goto fail;
  /* rank 0 exports only once every rank has finished its last step */
  if ((st = sm_dist_barrier())) goto fail;
  if (size > 1) {
    double fit_s = now_s() - fit_t0, wait_s = sm_dist_wait_seconds();
    printf("MPI: %d ranks%s; rank 0 waited for collectives %.2fs of %.2fs training (%.1f%%)\n", size,
           sm_dist_shared_weights() ? " (weights in shared memory)" : "", wait_s, fit_s,
           fit_s > 0 ? 100.0 * wait_s / fit_s : 0.0);
  }
  if (a->timing && (st = print_timing(m, rank, size))) goto fail;
  if (rank > 0) {
    rc = 0;
    goto done;
  }

  sm_export_options eo = {0};
  eo.labels = have_labels ? lab.names : sm_fashion_mnist_labels;
  eo.nlabels = NCLASSES;
  eo.probabilities = a->probabilities;
  if ((st = sm_seq_export(m, a->out, &eo))) goto fail;
  printf("Exported to %s (serving_default: %s; classify: labels and scores)\n", a->out,
         a->probabilities || m->layers[m->nlayers - 1].activation == SM_ACT_SOFTMAX ? "probabilities" : "logits");
  double tl, ta;
  if ((st = sm_seq_evaluate(m, xt, yt, a->batch_size, &tl, &ta))) goto fail;
  printf("test loss: %.4f\ntest accuracy: %.4f\n", tl, ta);
  rc = 0;
  goto done;
oom:
  st = sm_status_new(SM_NO_MEMORY, "out of memory");
fail:
  rc = sm__cli_fail(size > 1 ? sm_status_prefix(st, "rank %d", rank) : st);
done:
  fflush(stdout);
  if (size > 1 && rc) sm_dist_abort("savedmodel train: ending the MPI job");
  sm_dist_finalize();
  sm_seq_free(m);
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_tensor_free(xt);
  sm_tensor_free(yt);
  free(lab.text);
  return rc;
}

int sm__cli_train(int argc, char **argv) {
  sm_flag flags[] = {
      {"data", SM_FLAG_STRING, "MNIST-format directory: train-* and t10k-* IDX files, gzipped or not (default "
                               SM_FASHION_MNIST_DIR ").", NULL, 0},
      {"epochs", SM_FLAG_STRING, "Epochs to train (with --resume: epochs more).", NULL, 0},
      {"batch_size", SM_FLAG_STRING, "Samples per step (default 32, Keras's default).", NULL, 0},
      {"out", SM_FLAG_STRING, "The export directory to write (must not exist; missing parent directories are "
                              "created).", NULL, 0},
      {"labels", SM_FLAG_STRING, "File of class names, one per line, 10 lines (default: Fashion-MNIST's names; "
                                 "with --resume: the resumed export's).", NULL, 0},
      {"resume", SM_FLAG_STRING, "An export written by `savedmodel train` to continue training from.", NULL, 0},
      {"seed", SM_FLAG_STRING, "Seed for the initial weights and the shuffling (default 42).", NULL, 0},
      {"validation_split", SM_FLAG_STRING, "Fraction of the training data held out for validation, taken from the "
                                           "end as Keras does (default 0).", NULL, 0},
      {"learning_rate", SM_FLAG_STRING, "The optimizer's learning rate (Adam's default 0.001), the initial one under "
                                        "--lr_schedule.", NULL, 0},
      {"limit", SM_FLAG_STRING, "Train on the first N training images only (quick runs).", NULL, 0},
      {"num_threads", SM_FLAG_STRING, "Threads for training (default: one per core).", NULL, 0},
      {"probabilities", SM_FLAG_BOOL, "serving_default outputs softmax probabilities instead of logits.", NULL, 0},
      {"model", SM_FLAG_STRING, "A Keras model.to_json() file: the model to train instead of the seeds' CNN.", NULL, 0},
      {"optimizer", SM_FLAG_STRING, "NAME[:KEY=VALUE,...]: sgd, adam (default), adamw or rmsprop with Keras's "
                                    "defaults, changed by the KEYs.", NULL, 0},
      {"loss", SM_FLAG_STRING, "sparse_categorical_crossentropy (default), categorical_crossentropy or mse.", NULL, 0},
      {"lr_schedule", SM_FLAG_STRING, "exponential:DECAY_STEPS:DECAY_RATE[:staircase] or cosine:DECAY_STEPS[:ALPHA] "
                                      "(Keras's ExponentialDecay / CosineDecay from the learning rate).", NULL, 0},
      {"collective_timeout", SM_FLAG_STRING, "Under mpirun: seconds any rank waits for the others before the job "
                                             "fails naming the ranks that did not answer (default 60).", NULL, 0},
      {"timing", SM_FLAG_BOOL, "After training, print the last epoch's mean step time per rank in microseconds: "
                               "wall and CPU, split into compute and waiting in MPI collectives.", NULL, 0},
      {"device", SM_FLAG_STRING, "cpu (default) or gpu: the fit on the GPU (sparse cross-entropy; what it does "
                                 "not support is refused, named), the export as the CPU's.", NULL, 0},
  };
  size_t nflags = sizeof flags / sizeof *flags;
  int r = sm__cli_parse_flags(argc, argv, flags, nflags, usage);
  if (r == -1) return 0;
  if (r) return r;
  int device;
  if (sm__cli_parse_device("train", sm__cli_flag(flags, nflags, "device")->value, &device)) return 2;
  train_args a = {0};
  a.device = device;
  a.data = sm__cli_flag(flags, nflags, "data")->value;
  if (!a.data) a.data = SM_FASHION_MNIST_DIR;
  a.out = sm__cli_flag(flags, nflags, "out")->value;
  a.labels_file = sm__cli_flag(flags, nflags, "labels")->value;
  a.resume = sm__cli_flag(flags, nflags, "resume")->value;
  a.probabilities = sm__cli_flag(flags, nflags, "probabilities")->on;
  a.timing = sm__cli_flag(flags, nflags, "timing")->on;
  a.model = sm__cli_flag(flags, nflags, "model")->value;
  a.optimizer = sm__cli_flag(flags, nflags, "optimizer")->value;
  a.loss = sm__cli_flag(flags, nflags, "loss")->value;
  a.lr_schedule = sm__cli_flag(flags, nflags, "lr_schedule")->value;
  const char *model_flags[] = {"model", "optimizer", "loss", "lr_schedule"};
  for (int i = 0; i < 4 && a.resume; i++)
    if (sm__cli_flag(flags, nflags, model_flags[i])->value)
      return sm__cli_error(2, "--%s cannot be combined with --resume (the export's model and settings go on)",
                           model_flags[i]);
  if (a.loss && strcmp(a.loss, "sparse_categorical_crossentropy") && strcmp(a.loss, "categorical_crossentropy") &&
      strcmp(a.loss, "mse"))
    return sm__cli_error(2, "--loss: unknown loss '%s' (sparse_categorical_crossentropy, categorical_crossentropy, mse)",
                         a.loss);
  const char *required[] = {"epochs", "out"};
  for (int i = 0; i < 2; i++)
    if (!sm__cli_flag(flags, nflags, required[i])->value || !*sm__cli_flag(flags, nflags, required[i])->value) {
      fprintf(stderr, "savedmodel train: --%s is required\n%s", required[i], usage);
      return 2;
    }
  const char *v;
  a.batch_size = 32; /* Keras's default */
  if (parse_int("epochs", sm__cli_flag(flags, nflags, "epochs")->value, 0, 100000, &a.epochs) ||
      ((v = sm__cli_flag(flags, nflags, "batch_size")->value) && parse_int("batch_size", v, 1, 1 << 20, &a.batch_size)))
    return 2;
  a.seed = 42;
  if ((v = sm__cli_flag(flags, nflags, "seed")->value) && parse_int("seed", v, 0, INT64_MAX, &a.seed)) return 2;
  if ((v = sm__cli_flag(flags, nflags, "limit")->value) && parse_int("limit", v, 1, INT64_MAX, &a.limit)) return 2;
  if ((v = sm__cli_flag(flags, nflags, "num_threads")->value) && parse_int("num_threads", v, 0, 1024, &a.threads))
    return 2;
  if ((v = sm__cli_flag(flags, nflags, "validation_split")->value) &&
      parse_float("validation_split", v, 0, 1, 1, &a.validation_split))
    return 2;
  a.collective_timeout = 60;
  if ((v = sm__cli_flag(flags, nflags, "collective_timeout")->value) &&
      parse_float("collective_timeout", v, 0.001, 86400, 0, &a.collective_timeout))
    return 2;
  if ((v = sm__cli_flag(flags, nflags, "learning_rate")->value)) {
    if (parse_float("learning_rate", v, 0, 1e6, 0, &a.learning_rate)) return 2;
    if (!(a.learning_rate > 0)) return sm__cli_error(2, "--learning_rate must be > 0, got '%s'", v);
    if (a.resume)
      return sm__cli_error(2, "--learning_rate cannot be combined with --resume (the export's optimizer settings go on)");
    a.lr_given = 1;
  }
  return train(&a);
}
