/* test_malformed.c - the malformed-model corpus (tests/fixtures/malformed, made by
 * tools/make_malformed.py): every case fails sm_model_load, and `savedmodel validate`, with its own
 * message, one per class of TensorFlow's SavedModel advisories, and never crashes (this test runs
 * under ASan in `make asan`). The case "ok" is the template every other case breaks: it must load,
 * run and validate. Each case must be listed here, so a new one cannot go untested. Then every
 * single-byte change and every truncation of the ok case's variables bundle (index and data): each
 * one validate must report, and none may crash a load. validate runs in-process (its CLI file is
 * compiled into this test) so the few hundred damaged bundles take a second, not minutes. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/cli/args.c"
#include "../../src/cli/pyfmt.c" /* sm__json_str, for validate --json */
#include "../../src/cli/validate.c"
#include "savedmodel/model.h"
#include "test.h"

static const struct {
  const char *name;
  const char *expect; /* a substring of sm_model_load's error */
} cases[] = {
    {"tensor_content_size", "TensorProto: tensor_content has 8 bytes, a DT_FLOAT tensor of 3 elements needs 12"},
    {"negative_dim", "TensorProto: dimension 0 is -5"},
    {"huge_dim", "TensorProto: tensor of 4611686018427387904 elements is larger than the"},
    {"overflowing_dims", "TensorProto: tensor element count overflows"},
    {"attr_dtype_mismatch", "Type mismatch between value (float) and dtype (int32)"},
    {"const_broadcast_huge", "4294967296 bytes would pass the load budget (max_load_bytes 134217728"},
    {"inline_bomb", "nodes after inlining functions, the load budget (max_graph_nodes 131072"},
    {"inline_long_names", "bytes more would pass the load budget (max_load_bytes 134217728"},
    {"input_missing_node", "input 'nosuch' names no node in the graph"},
    {"input_out_of_range", "input 'read:3' is out of range"},
    {"cycle", "the graph has a cycle through node"},
    {"recursive_function", "function 'f' calls itself"},
    {"mutually_recursive_functions", "inlining 'g' into 'fy/call': node 'fy/call/call': function 'f' calls itself"},
    {"deep_call_chain", "function 'f_with_a_rather_long_name_24' calls itself"},
    {"missing_required_attr", "node 'x' (Placeholder): required attr 'dtype' is missing"},
    {"negative_placeholder_dim",
     "node 'x' (Placeholder): attr 'shape': Shape [-7,2] has dimensions with values below -1 (where -1 means unknown)"},
    {"asset_dotdot", "asset '../../secret.txt': file name has a '..' component"},
    {"asset_absolute", "asset '/etc/passwd': file name is an absolute path"},
    {"table_file_outside", "/etc/passwd resolves to /etc/passwd, outside the export directory"},
    {"table_file_proc", "/proc/self/environ resolves to /proc/"},
    {"variable_shape_mismatch", "variable 'v' has shape [2] in the checkpoint but [3] in the graph"},
    {"variable_dtype_mismatch", "variable 'v' is DT_FLOAT in the checkpoint but restore op 'save/RestoreV2' expects DT_DOUBLE"},
    {"variable_missing_key", "restores 'v', which is not in the variables bundle"},
    {"bundle_offset_past_end", "entry v: offset/size past the end of shard 0"},
    {"bundle_checksum_mismatch", "checksum mismatch on entry v in"},
    {"bundle_truncated_data", "0 + 8 > 5"},
    {"bundle_index_block_crc", "block checksum mismatch at offset 0 (data block)"},
};
#define NCASES (sizeof cases / sizeof cases[0])

static char dirbuf[4096];
static const char *case_dir(const char *name) {
  snprintf(dirbuf, sizeof dirbuf, "%s/tests/fixtures/malformed/%s", SM_SOURCE_DIR, name);
  return dirbuf;
}

/* Runs `savedmodel validate --dir dir` in-process; its report goes to a temporary file whose text
 * (up to cap bytes) lands in out. */
static int run_validate(const char *dir, char *out, size_t cap) {
  char *argv[] = {"validate", "--dir", (char *)dir, NULL};
  FILE *tf = tmpfile();
  if (!tf) return -1;
  fflush(stdout);
  int saved = dup(1);
  dup2(fileno(tf), 1);
  int rc = sm__cli_validate(3, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  rewind(tf);
  size_t n = fread(out, 1, cap - 1, tf);
  out[n] = 0;
  fclose(tf);
  return rc;
}

static void test_ok_loads(void) {
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(case_dir("ok"), tags, 1, NULL, &m));
  if (!m) return;
  int64_t d[2] = {1, 2};
  sm_tensor *x = NULL, *y = NULL;
  CHECK_OK(sm_tensor_new(SM_FLOAT, 2, d, &x));
  if (x) {
    float *p = sm_tensor_data(x);
    p[0] = 10, p[1] = 20;
    const char *in[] = {"x"}, *out[] = {"y"};
    CHECK_OK(sm_model_run(m, "serving_default", in, &x, 1, out, 1, &y));
    if (y) {
      const float *q = sm_tensor_data(y);
      CHECK(q[0] == 11.0f && q[1] == 22.0f); /* x + v, v = [1, 2] from the bundle */
    }
  }
  sm_tensor_free(x);
  sm_tensor_free(y);
  sm_model_free(m);
}

/* 1 when two adjacent ": "-separated parts of msg are the same ("node 'c' (Const): node 'c'
 * (Const): ...", "--resume: : x"). */
static int repeats_context(const char *msg) {
  const char *prev = NULL;
  size_t plen = 0;
  for (const char *p = msg;;) {
    const char *e = strstr(p, ": ");
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if ((prev && len == plen && !memcmp(prev, p, len)) || (e && len == 0 && p != msg)) return 1;
    if (!e) return 0;
    prev = p, plen = len;
    p = e + 2;
  }
}

static void test_each_case_fails(void) {
  const char *tags[] = {"serve"};
  for (size_t i = 0; i < NCASES; i++) {
    sm_model *m = NULL;
    sm_status *s = sm_model_load(case_dir(cases[i].name), tags, 1, NULL, &m);
    const char *msg = s ? sm_status_message(s) : "(loaded)";
    /* one message, of bounded length (a fault 24 calls deep included), its context not repeated */
    int ok = s && !m && strstr(msg, cases[i].expect) && strlen(msg) <= 1100 && !repeats_context(msg);
    if (!ok) printf("case %s: expected '%s', got: %s\n", cases[i].name, cases[i].expect, msg);
    CHECK(ok);
    sm_status_free(s);
    sm_model_free(m);
    static char text[16384];
    int rc = run_validate(case_dir(cases[i].name), text, sizeof text);
    ok = rc == 1 && strstr(text, cases[i].expect) && strstr(text, "fault: ");
    if (!ok) printf("case %s: validate exit %d, expected '%s' in:\n%s\n", cases[i].name, rc, cases[i].expect, text);
    CHECK(ok);
  }
  static char text[16384];
  int rc = run_validate(case_dir("ok"), text, sizeof text);
  if (rc != 0) printf("validate of the ok case:\n%s\n", text);
  CHECK(rc == 0 && strstr(text, "sound"));
}

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = malloc(1 << 16);
  *n = b ? fread(b, 1, 1 << 16, f) : 0;
  fclose(f);
  return b;
}

static void write_all(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(b, 1, n, f) == n || n == 0);
  fclose(f);
}

/* Every byte of the ok case's index and data file changed (xor 0x20: a bit flip that keeps
 * ASCII keys printable, so the damage is not just an unparseable varint), and every truncation:
 * validate reports each; load fails or succeeds but never crashes. The one kind of damage a load
 * may miss is the footer's zero padding, which nothing reads; validate checks it. */
static void test_bundle_damage_always_detected(void) {
  char tmpl[] = "/tmp/sm-malformed-XXXXXX";
  char *dir = mkdtemp(tmpl);
  CHECK(dir != NULL);
  if (!dir) return;
  char p[8200], vdir[4200];
  snprintf(vdir, sizeof vdir, "%s/variables", dir);
  CHECK(mkdir(vdir, 0755) == 0);
  size_t n;
  uint8_t *b;
  const char *files[] = {"saved_model.pbtxt", "variables/variables.index", "variables/variables.data-00000-of-00001"};
  uint8_t *orig[3];
  size_t olen[3];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", case_dir("ok"), files[i]);
    orig[i] = read_all(p, &olen[i]);
    CHECK(orig[i] != NULL);
    if (!orig[i]) return;
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    write_all(p, orig[i], olen[i]);
  }
  const char *tags[] = {"serve"};
  static char text[16384];
  int runs = 0, missed = 0;
  for (int fi = 1; fi < 3; fi++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[fi]);
    n = olen[fi];
    b = malloc(n);
    for (size_t pos = 0; b && pos < 2 * n; pos++) {
      memcpy(b, orig[fi], n);
      size_t len = n;
      if (pos < n)
        b[pos] ^= 0x20;
      else
        len = pos - n; /* truncated to 0 .. n-1 bytes */
      write_all(p, b, len);
      int rc = run_validate(dir, text, sizeof text);
      runs++;
      if (rc != 1) {
        missed++;
        printf("%s %s %zu: validate exit %d:\n%s\n", files[fi], pos < n ? "byte flipped at" : "truncated to",
               pos < n ? pos : len, rc, text);
      }
      sm_model *m = NULL;
      sm_status_free(sm_model_load(dir, tags, 1, NULL, &m));
      sm_model_free(m);
    }
    free(b);
    write_all(p, orig[fi], olen[fi]);
  }
  printf("bundle damage: %d damaged bundles, %d missed by validate\n", runs, missed);
  CHECK(missed == 0);
  CHECK(runs > 200);
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
    free(orig[i]);
  }
  rmdir(vdir);
  rmdir(dir);
}

/* Every directory of the corpus is in the table (or is "ok"). */
static void test_table_complete(void) {
  char d[4096];
  snprintf(d, sizeof d, "%s/tests/fixtures/malformed", SM_SOURCE_DIR);
  DIR *dh = opendir(d);
  CHECK(dh != NULL);
  struct dirent *de;
  int n = 0;
  while (dh && (de = readdir(dh))) {
    if (de->d_name[0] == '.' || !strcmp(de->d_name, "ok") || !strcmp(de->d_name, "README.md")) continue;
    int found = 0;
    for (size_t i = 0; i < NCASES; i++) found |= !strcmp(cases[i].name, de->d_name);
    if (!found) printf("case %s is not in test_malformed's table\n", de->d_name);
    CHECK(found);
    n++;
  }
  if (dh) closedir(dh);
  CHECK(n == (int)NCASES);
}

/* The fault 24 calls deep keeps its outermost frames and the fault, the frames between elided. */
static void test_deep_chain_summarised(void) {
  const char *tags[] = {"serve"};
  sm_model *m = NULL;
  sm_status *s = sm_model_load(case_dir("deep_call_chain"), tags, 1, NULL, &m);
  const char *msg = sm_status_message(s);
  CHECK(s && strstr(msg, "inlining 'f' into 'fy': inlining 'f_with_a_rather_long_name_1' into 'fy/call': "));
  CHECK(s && strstr(msg, " [... inner call frames elided ...] "));
  CHECK(s && strlen(msg) <= 1100);
  sm_status_free(s);
  sm_model_free(m);
}

/* The confinement is the caller's to lift: with allow_external_files the same model loads (its
 * table read from /etc/passwd, as TensorFlow would) and runs. */
static void test_allow_external_files(void) {
  if (access("/etc/passwd", R_OK) != 0) return;
  const char *tags[] = {"serve"};
  sm_load_options o = {0};
  o.allow_external_files = 1;
  sm_model *m = NULL;
  CHECK_OK(sm_model_load(case_dir("table_file_outside"), tags, 1, &o, &m));
  sm_model_free(m);
  o.allow_external_files = 0;
  m = NULL;
  CHECK_ERR(sm_model_load(case_dir("table_file_outside"), tags, 1, &o, &m), "allow_external_files");
  CHECK(m == NULL);
}

int main(void) {
  test_ok_loads();
  test_allow_external_files();
  test_deep_chain_summarised();
  test_each_case_fails();
  test_table_complete();
  test_bundle_damage_always_detected();
  TEST_MAIN_END();
}
