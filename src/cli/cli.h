/* cli.h - what the savedmodel subcommands share: flag parsing, error exits, Python-style text.
 *
 * The CLI only uses the public headers in include/; anything a library user would also want
 * belongs in the library, not here. Exit codes: 0 ok, 1 failure (message on stderr), 2 usage. */
#ifndef SM_CLI_H
#define SM_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "savedmodel/status.h"

/* ---- subcommands (one file each) ---- */
int sm__cli_show(int argc, char **argv);
int sm__cli_vars(int argc, char **argv);
int sm__cli_convert(int argc, char **argv);
int sm__cli_run(int argc, char **argv);  /* run.c */
int sm__cli_scan(int argc, char **argv); /* scan.c */
int sm__cli_serve(int argc, char **argv); /* serve.c */
int sm__cli_train(int argc, char **argv); /* train.c */
int sm__cli_validate(int argc, char **argv); /* validate.c */

/* ---- flags (args.c) ----
 * Accepts what absl/argparse accept for saved_model_cli: --name=value, --name value, -name value;
 * booleans as --name, --noname, --name=true|false|1|0. */
typedef enum { SM_FLAG_STRING, SM_FLAG_BOOL } sm_flag_kind;
typedef struct sm_flag {
  const char *name;
  sm_flag_kind kind;
  const char *help;
  const char *value; /* string flags: NULL when not given */
  int on;            /* bool flags */
} sm_flag;

/* Parses argv[1..argc) into flags (argv[0] is the subcommand). Returns 0 when all is well, 2 after
 * printing a usage error, and -1 when --help was asked for (help is printed on stdout). */
int sm__cli_parse_flags(int argc, char **argv, sm_flag *flags, size_t nflags, const char *usage);
sm_flag *sm__cli_flag(sm_flag *flags, size_t nflags, const char *name);

/* A byte count flag: digits with an optional K, M, G or T suffix (powers of 1024: "256M"), up to
 * 2^50. 0 on success; else prints "<cmd>: --<name>=<v>: ..." and returns 2. */
int sm__cli_parse_bytes(const char *cmd, const char *name, const char *v, size_t *out);
/* --device cpu|gpu (v NULL: cpu) into *device (SM_DEVICE_*); 2 after the usage error otherwise. */
int sm__cli_parse_device(const char *cmd, const char *v, int *device);
#define SM_CLI_DEVICE_HELP                                                                                 \
  "Where the model runs: cpu (default) or gpu (CUDA kernels where there are some, the CPU for the rest; " \
  "fails naming what is missing where no GPU backend, driver or GPU is found)"
/* A number of seconds > 0 (fractions allowed) up to 1e9, as microseconds. 0 or 2 as above. */
int sm__cli_parse_seconds(const char *cmd, const char *name, const char *v, int64_t *us);

/* Prints "savedmodel: <message>" on stderr, frees s, returns 1. */
int sm__cli_fail(sm_status *s);
/* Prints "savedmodel: <formatted>" on stderr and returns code. */
int sm__cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Python-compatible text (pyfmt.c) ---- */
/* repr() of a str given as UTF-8: 'abc', "it's", with Python's escapes. */
void sm__py_repr_str(FILE *f, const char *s, size_t len);
/* repr() of bytes: b'abc', b'\x00'. */
void sm__py_repr_bytes(FILE *f, const char *s, size_t len);
/* Shortest digits that read back to the same value (Python repr of float, numpy unique).
 * single: 0 for float64, 1 for float32, 2 for float16 values. Writes "%.*e" style text into buf: returns the number of
 * significant digits used. */
int sm__shortest_e(double v, int single, char *buf, size_t cap);
/* Splits "%.*e" text into sign, significant digits (no point, no trailing zeros) and the decimal
 * exponent of the first digit. */
void sm__split_e(const char *e, int *neg, char *digits, size_t cap, int *exp10);
/* Python repr(float) ("0.5", "2.0", "1e-05", "inf", "nan"). */
void sm__py_repr_float(FILE *f, double v);
/* JSON string literal of text (bytes that are not UTF-8 become \u00XX: fine for names). */
void sm__json_str(FILE *f, const char *s, size_t len);
/* Bytes as JSON without loss: a string when they are UTF-8, else {"base64": "..."}. */
void sm__json_bytes(FILE *f, const char *s, size_t len);

/* ---- TensorFlow names ---- */
/* "float32", "string", "float32_ref", ... as tf.DType.name prints; NULL when unknown. */
const char *sm__cli_tf_dtype_name(int dtype);

#endif
