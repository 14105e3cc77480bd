/* args.c - flag parsing and error exits shared by every subcommand.
 *
 * saved_model_cli parses with absl flags behind argparse, so `--dir=D`, `--dir D`, `-dir D`,
 * `--all`, `--noall` and `--all=false` all work there; they work the same here. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "savedmodel/model.h"

sm_flag *sm__cli_flag(sm_flag *flags, size_t nflags, const char *name) {
  for (size_t i = 0; i < nflags; i++)
    if (strcmp(flags[i].name, name) == 0) return &flags[i];
  return NULL;
}

static sm_flag *find_n(sm_flag *flags, size_t nflags, const char *name, size_t len) {
  for (size_t i = 0; i < nflags; i++)
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) return &flags[i];
  return NULL;
}

static int parse_bool(const char *v, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "1", "t", "yes"};
  static const char *const no[] = {"false", "False", "FALSE", "0", "f", "no"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (strcmp(v, yes[i]) == 0) return *out = 1, 0;
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (strcmp(v, no[i]) == 0) return *out = 0, 0;
  return -1;
}

static void print_help(const char *usage, const sm_flag *flags, size_t nflags) {
  fputs(usage, stdout);
  printf("\nflags:\n");
  for (size_t i = 0; i < nflags; i++)
    printf("  --%s%s\n      %s\n", flags[i].name, flags[i].kind == SM_FLAG_STRING ? " VALUE" : "",
           flags[i].help);
}

int sm__cli_parse_flags(int argc, char **argv, sm_flag *flags, size_t nflags, const char *usage) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "-help") == 0) {
      print_help(usage, flags, nflags);
      return -1;
    }
    if (a[0] != '-' || a[1] == 0) {
      fprintf(stderr, "savedmodel %s: unexpected argument '%s'\n%s", argv[0], a, usage);
      return 2;
    }
    const char *name = a + (a[1] == '-' ? 2 : 1);
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    sm_flag *f = find_n(flags, nflags, name, len);
    int negated = 0;
    if (!f && len > 2 && strncmp(name, "no", 2) == 0 && !eq) {
      f = find_n(flags, nflags, name + 2, len - 2);
      if (f && f->kind != SM_FLAG_BOOL) f = NULL;
      negated = f != NULL;
    }
    if (!f) {
      fprintf(stderr, "savedmodel %s: unknown flag '%s'\n%s", argv[0], a, usage);
      return 2;
    }
    if (f->kind == SM_FLAG_BOOL) {
      if (negated) f->on = 0;
      else if (!eq) f->on = 1;
      else if (parse_bool(eq + 1, &f->on) != 0) {
        fprintf(stderr, "savedmodel %s: flag --%s expects true or false, not '%s'\n", argv[0],
                f->name, eq + 1);
        return 2;
      }
    } else if (eq) {
      f->value = eq + 1;
    } else if (i + 1 < argc) {
      f->value = argv[++i];
    } else {
      fprintf(stderr, "savedmodel %s: flag --%s needs a value\n%s", argv[0], f->name, usage);
      return 2;
    }
  }
  return 0;
}

int sm__cli_fail(sm_status *s) {
  fprintf(stderr, "savedmodel: %s\n", sm_status_message(s));
  sm_status_free(s);
  return 1;
}

int sm__cli_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("savedmodel: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

int sm__cli_parse_device(const char *cmd, const char *v, int *device) {
  *device = SM_DEVICE_CPU;
  if (!v || !strcmp(v, "cpu")) return 0;
  if (!strcmp(v, "gpu")) {
    *device = SM_DEVICE_GPU;
    return 0;
  }
  return sm__cli_error(2, "%s: --device=%s: expected cpu or gpu", cmd, v);
}

int sm__cli_parse_bytes(const char *cmd, const char *name, const char *v, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  int shift = 0;
  if (v[0] >= '0' && v[0] <= '9' && !errno && end[0] && !end[1]) {
    const char *units = "KMGT", *u = strchr(units, end[0] & ~0x20);
    if (u) shift = 10 * (int)(u - units + 1), end++;
  }
  if (v[0] < '0' || v[0] > '9' || errno || *end || x > (1ull << 50) >> shift)
    return sm__cli_error(2, "%s: --%s=%s: expected a byte count (digits, optionally with K, M, G or T) up to 2^50",
                         cmd, name, v);
  *out = (size_t)(x << shift);
  return 0;
}

int sm__cli_parse_seconds(const char *cmd, const char *name, const char *v, int64_t *us) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || *end || end == v || !(x > 0) || x > 1e9)
    return sm__cli_error(2, "%s: --%s=%s: expected a number of seconds > 0", cmd, name, v);
  *us = (int64_t)(x * 1e6) > 0 ? (int64_t)(x * 1e6) : 1;
  return 0;
}
