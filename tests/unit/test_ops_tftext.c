/* test_ops_tftext.c - TensorFlow Text's kernels (src/ops/tftext.c) by hand, for what the zoo's
 * tftext_bert model (TF Text's own outputs, tests/fixtures/zoo) cannot show: the raw ops' edges and
 * refusals - a delimiter pattern that matches the empty string (TF Text loops forever), a group 1
 * that takes no part, a pattern without a group (no split, as RE2 returns false), an element with
 * a NUL (read as a C string), an unknown normalization form, ill-formed UTF-8 copied through, a
 * vocabulary that is not a string -> int64 table or not a table at all, and the word-piece rules
 * (suffix pieces, whole-word fallback, row splits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "savedmodel/graph_builder.h"
#include "savedmodel/tensor.h"
#include "test.h"

static sm_tensor *strings(int64_t n, const char *const *v, const size_t *lens) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 1, &n, &t));
  for (int64_t i = 0; i < n; i++) CHECK_OK(sm_tensor_set_string(t, i, v[i], lens ? lens[i] : strlen(v[i])));
  return t;
}

static sm_tensor *string_scalar(const char *s) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_STRING, 0, NULL, &t));
  CHECK_OK(sm_tensor_set_string(t, 0, s, strlen(s)));
  return t;
}

static void konst(sm_graph *g, const char *name, sm_tensor *t) {
  CHECK_OK(sm_graph_const(g, name, t, NULL));
  sm_tensor_free(t);
}

/* Runs the graph (targets first, then the fetches); the status, outputs in out. */
static sm_status *run(sm_graph *g, const char *target, const char *const *fetch, int nf, sm_tensor **out) {
  Tensorflow__MetaGraphDef mg = TENSORFLOW__META_GRAPH_DEF__INIT;
  mg.graph_def = (Tensorflow__GraphDef *)sm_graph_def(g);
  sm_session *s = NULL;
  CHECK_OK(sm__session_new(&mg, NULL, 1, &s));
  sm_status *st = target ? sm__session_run(s, NULL, NULL, 0, NULL, 0, &target, 1, NULL) : NULL;
  if (!st) st = sm__session_run(s, NULL, NULL, 0, fetch, nf, NULL, 0, out);
  sm__session_free(s);
  return st;
}

static void check_strings(const sm_tensor *t, int64_t n, const char *const *want) {
  CHECK(t && sm_tensor_num_elements(t) == n);
  for (int64_t i = 0; t && i < n && i < sm_tensor_num_elements(t); i++) {
    size_t len;
    const char *p = sm_tensor_string(t, i, &len);
    if (len != strlen(want[i]) || memcmp(p, want[i], len)) {
      fprintf(stderr, "string %lld: got \"%.*s\", want \"%s\"\n", (long long)i, (int)len, p, want[i]);
      CHECK(0);
    }
  }
}

static void check_ints(const sm_tensor *t, int64_t n, const int64_t *want) {
  CHECK(t && sm_tensor_dtype(t) == SM_INT64 && sm_tensor_num_elements(t) == n);
  if (t && sm_tensor_num_elements(t) == n) CHECK(!memcmp(sm_tensor_data(t), want, (size_t)n * 8));
}

/* RegexSplitWithOffsets(x, delim, keep): the status; outputs (tokens, begins, ends, splits) in out. */
static sm_status *split(const char *const *x, const size_t *lens, int64_t n, const char *delim, const char *keep,
                        sm_tensor **out) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  konst(g, "x", strings(n, x, lens));
  konst(g, "d", string_scalar(delim));
  konst(g, "k", string_scalar(keep));
  sm_op *op = sm_op_begin(g, "RegexSplitWithOffsets", "op");
  sm_op_input(op, "x");
  sm_op_input(op, "d");
  sm_op_input(op, "k");
  CHECK_OK(sm_op_finish(op, NULL));
  const char *f[4] = {"op:0", "op:1", "op:2", "op:3"};
  sm_status *s = run(g, NULL, f, 4, out);
  sm_graph_free(g);
  return s;
}

static void free4(sm_tensor **o) {
  for (int i = 0; i < 4; i++) sm_tensor_free(o[i]), o[i] = NULL;
}

static void test_regex_split(void) {
  sm_tensor *o[4] = {0};
  const char *x[] = {"ab,c", "", ",,x"};
  CHECK_OK(split(x, NULL, 3, "(,)", "(,)", o));
  check_strings(o[0], 6, (const char *[]){"ab", ",", "c", ",", ",", "x"});
  check_ints(o[1], 6, (const int64_t[]){0, 2, 3, 0, 1, 2});
  check_ints(o[2], 6, (const int64_t[]){2, 3, 4, 1, 2, 3});
  check_ints(o[3], 4, (const int64_t[]){0, 3, 3, 6});
  free4(o);
  /* an empty keep pattern: no delimiter kept */
  CHECK_OK(split(x, NULL, 3, "(,)", "", o));
  check_strings(o[0], 3, (const char *[]){"ab", "c", "x"});
  check_ints(o[3], 4, (const int64_t[]){0, 2, 2, 3});
  free4(o);
  /* no group in the pattern: RE2's FindAndConsume returns false, nothing is split */
  CHECK_OK(split(x, NULL, 1, ",", "", o));
  check_strings(o[0], 1, (const char *[]){"ab,c"});
  free4(o);
  /* an element is read up to its first NUL, as TF Text reads it */
  const char *nul[] = {"a,b\0,c"};
  const size_t nl[] = {6};
  CHECK_OK(split(nul, nl, 1, "(,)", "", o));
  check_strings(o[0], 2, (const char *[]){"a", "b"});
  check_ints(o[2], 2, (const int64_t[]){1, 3});
  free4(o);
  CHECK_ERR(split(x, NULL, 3, "(x*)", "", o), "matches the empty string");
  free4(o);
  CHECK_ERR(split(x, NULL, 3, "(,)?b", "", o), "without its group 1");
  free4(o);
  CHECK_ERR(split(x, NULL, 3, "(", "", o), "Invalid pattern");
  free4(o);
}

static sm_status *normalize(const char *op_name, const char *form, const char *const *x, int64_t n, sm_tensor **out) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  konst(g, "x", strings(n, x, NULL));
  sm_op *op = sm_op_begin(g, op_name, "op");
  sm_op_input(op, "x");
  if (form) sm_op_attr_string(op, "normalization_form", form, strlen(form));
  CHECK_OK(sm_op_finish(op, NULL));
  const char *f = "op:0";
  sm_status *s = run(g, NULL, &f, 1, out);
  sm_graph_free(g);
  return s;
}

static void test_normalize(void) {
  sm_tensor *o = NULL;
  const char *x[] = {"\xc3\x85" "B\xef\xac\x81", "e\xcc\x81", "a\xff" "B\xe2\x82", ""};
  sm_status *st = normalize("CaseFoldUTF8", NULL, x, 4, &o);
  if (st && sm_status_code(st) == SM_UNIMPLEMENTED) { /* no libicuuc on this machine */
    printf("test_ops_tftext: normalizers skipped: %s\n", sm_status_message(st));
    sm_status_free(st);
    return;
  }
  CHECK_OK(st);
  check_strings(o, 4, (const char *[]){"\xc3\xa5" "bfi", "\xc3\xa9", "a\xff" "b\xe2\x82", ""});
  sm_tensor_free(o), o = NULL;
  CHECK_OK(normalize("NormalizeUTF8", "nfc", x, 4, &o)); /* the form's case does not matter */
  check_strings(o, 4, (const char *[]){"\xc3\x85" "B\xef\xac\x81", "\xc3\xa9", "a\xff" "B\xe2\x82", ""});
  sm_tensor_free(o), o = NULL;
  CHECK_OK(normalize("NormalizeUTF8", "NFKD", x, 4, &o));
  check_strings(o, 4, (const char *[]){"A\xcc\x8a" "Bfi", "e\xcc\x81", "a\xff" "B\xe2\x82", ""});
  sm_tensor_free(o), o = NULL;
  CHECK_ERR(normalize("NormalizeUTF8", "nfx", x, 4, &o), "Unknown normalization form requrested: NFX");
  sm_tensor_free(o);
}

/* WordpieceTokenizeWithOffsets over a table made by `table` ("strings", "ints" or "var"). */
static sm_status *wordpiece(const char *table, const char *const *words, int64_t n, int use_unk, const char *parts,
                            sm_tensor **out) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  konst(g, "w", strings(n, words, NULL));
  const char *init = NULL;
  sm_op *op;
  if (!strcmp(table, "var")) {
    op = sm_op_begin(g, "VarHandleOp", "t");
    sm_op_attr_type(op, "dtype", SM_FLOAT);
    sm_op_attr_shape(op, "shape", 0, NULL);
    CHECK_OK(sm_op_finish(op, NULL));
  } else {
    int str = !strcmp(table, "strings");
    op = sm_op_begin(g, "HashTableV2", "t");
    sm_op_attr_type(op, "key_dtype", str ? SM_STRING : SM_INT64);
    sm_op_attr_type(op, "value_dtype", SM_INT64);
    CHECK_OK(sm_op_finish(op, NULL));
    const char *vocab[] = {"un", "##aff", "##able", "a", "##b"};
    int64_t nv = 5;
    sm_tensor *k = NULL, *v = NULL;
    if (str) {
      k = strings(nv, vocab, NULL);
    } else {
      CHECK_OK(sm_tensor_new(SM_INT64, 1, &nv, &k));
      for (int i = 0; i < 5; i++) ((int64_t *)sm_tensor_data(k))[i] = i;
    }
    CHECK_OK(sm_tensor_new(SM_INT64, 1, &nv, &v));
    for (int i = 0; i < 5; i++) ((int64_t *)sm_tensor_data(v))[i] = i;
    konst(g, "keys", k);
    konst(g, "vals", v);
    op = sm_op_begin(g, "InitializeTableV2", "init");
    sm_op_input(op, "t");
    sm_op_input(op, "keys");
    sm_op_input(op, "vals");
    CHECK_OK(sm_op_finish(op, NULL));
    init = "init";
  }
  op = sm_op_begin(g, "WordpieceTokenizeWithOffsets", "op");
  sm_op_input(op, "w");
  sm_op_input(op, "t");
  sm_op_attr_string(op, "suffix_indicator", "##", 2);
  sm_op_attr_int(op, "max_bytes_per_word", 100);
  sm_op_attr_bool(op, "use_unknown_token", use_unk);
  sm_op_attr_string(op, "unknown_token", "[UNK]", 5);
  sm_op_attr_string(op, "output_row_partition_type", parts, strlen(parts));
  CHECK_OK(sm_op_finish(op, NULL));
  const char *f[4] = {"op:0", "op:1", "op:2", "op:3"};
  sm_status *s = run(g, init, f, 4, out);
  sm_graph_free(g);
  return s;
}

static void test_wordpiece(void) {
  sm_tensor *o[4] = {0};
  const char *w[] = {"unaffable", "abbb", "unx", ""};
  /* "unx": no piece for "x" after "un": the unknown token for the whole word, ending at its length */
  CHECK_OK(wordpiece("strings", w, 4, 1, "row_lengths", o));
  check_strings(o[0], 8, (const char *[]){"un", "##aff", "##able", "a", "##b", "##b", "##b", "[UNK]"});
  check_ints(o[1], 4, (const int64_t[]){3, 4, 1, 0});
  check_ints(o[2], 8, (const int64_t[]){0, 2, 5, 0, 1, 2, 3, 0});
  check_ints(o[3], 8, (const int64_t[]){2, 5, 9, 1, 2, 3, 4, 3});
  free4(o);
  CHECK_OK(wordpiece("strings", w, 4, 0, "row_splits", o));
  check_strings(o[0], 8, (const char *[]){"un", "##aff", "##able", "a", "##b", "##b", "##b", "unx"});
  check_ints(o[1], 5, (const int64_t[]){0, 3, 7, 8, 8});
  free4(o);
  CHECK_ERR(wordpiece("ints", w, 4, 1, "row_lengths", o), "needs string to int64");
  free4(o);
  CHECK_ERR(wordpiece("var", w, 4, 1, "row_lengths", o), "not to a lookup table");
  free4(o);
}

/* UnicodeScriptTokenizeWithOffsets / WhitespaceTokenizeWithOffsets over code points cp[0..n) in rows
 * split by splits[0..ns) (int64); outputs in out[0..5). */
static sm_status *cp_tok(const char *op_name, const int32_t *cp, int64_t n, const int64_t *splits, int64_t ns, int keep,
                         sm_tensor **out) {
  sm_graph *g = NULL;
  CHECK_OK(sm_graph_new(&g));
  sm_tensor *v = NULL, *sp = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 1, &n, &v));
  if (n) memcpy(sm_tensor_data(v), cp, (size_t)n * 4);
  CHECK_OK(sm_tensor_new(SM_INT64, 1, &ns, &sp));
  if (ns) memcpy(sm_tensor_data(sp), splits, (size_t)ns * 8);
  konst(g, "v", v);
  konst(g, "s", sp);
  sm_op *op = sm_op_begin(g, op_name, "op");
  sm_op_input(op, "v");
  sm_op_input(op, "s");
  sm_op_attr_type(op, "Tsplits", SM_INT64);
  if (keep >= 0) sm_op_attr_bool(op, "keep_whitespace", keep);
  CHECK_OK(sm_op_finish(op, NULL));
  const char *f[5] = {"op:0", "op:1", "op:2", "op:3", "op:4"};
  sm_status *s = run(g, NULL, f, 5, out);
  sm_graph_free(g);
  return s;
}

static void test_cp_tokenizers(void) {
  sm_tensor *o[5] = {0};
  /* "ab  \u65e5x" + "" + " c": script changes Latin -> Han -> Latin, spaces dropped */
  const int32_t cp[] = {'a', 'b', ' ', ' ', 0x65e5, 'x', ' ', 'c'};
  const int64_t sp[] = {0, 6, 6, 8};
  sm_status *st = cp_tok("UnicodeScriptTokenizeWithOffsets", cp, 8, sp, 4, 0, o);
  if (st && sm_status_code(st) == SM_UNIMPLEMENTED) {
    printf("test_ops_tftext: code-point tokenizers skipped: %s\n", sm_status_message(st));
    sm_status_free(st);
    return;
  }
  CHECK_OK(st);
  check_ints(o[2], 4, (const int64_t[]){0, 4, 5, 1}); /* starts */
  check_ints(o[3], 4, (const int64_t[]){2, 5, 6, 2}); /* limits */
  check_ints(o[4], 4, (const int64_t[]){0, 3, 3, 4}); /* outer splits */
  for (int i = 0; i < 5; i++) sm_tensor_free(o[i]), o[i] = NULL;
  CHECK_OK(cp_tok("WhitespaceTokenizeWithOffsets", cp, 8, sp, 4, -1, o));
  check_ints(o[1], 4, (const int64_t[]){0, 2, 4, 5}); /* inner splits: "ab", "\u65e5x", "c" */
  check_ints(o[3], 3, (const int64_t[]){2, 6, 2});
  for (int i = 0; i < 5; i++) sm_tensor_free(o[i]), o[i] = NULL;
  /* splits TF Text reads without a check (past the values, backwards, none): refused here */
  CHECK_ERR(cp_tok("UnicodeScriptTokenizeWithOffsets", cp, 8, (const int64_t[]){0, 9}, 2, 0, o), "outside [0, 8]");
  CHECK_ERR(cp_tok("UnicodeScriptTokenizeWithOffsets", cp, 8, (const int64_t[]){0, 5, 3}, 3, 0, o), "out of order");
  CHECK_ERR(cp_tok("WhitespaceTokenizeWithOffsets", cp, 8, NULL, 0, -1, o), "at least one element");
  for (int i = 0; i < 5; i++) sm_tensor_free(o[i]);
}

static sm_tensor *i64s(int64_t n, const int64_t *v) {
  sm_tensor *t = NULL;
  CHECK_OK(sm_tensor_new(SM_INT64, 1, &n, &t));
  if (n) memcpy(sm_tensor_data(t), v, (size_t)n * 8);
  return t;
}

/* RoundRobinTrim of two int64 segments (values a/b, splits sa/sb) to maxlen, fed through placeholders of a
 * graph written as text (the builder takes one list input per node); outputs in out[0..4). */
static sm_status *rr_trim(int32_t maxlen, const int64_t *a, int64_t na, const int64_t *sa, int64_t nsa, const int64_t *b,
                          int64_t nb, const int64_t *sb, int64_t nsb, sm_tensor **out) {
  static const char g[] =
      "graph_def {\n"
      "node { name: \"m\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT32 } } }\n"
      "node { name: \"a\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
      "node { name: \"b\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
      "node { name: \"sa\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
      "node { name: \"sb\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_INT64 } } }\n"
      "node { name: \"op\" op: \"TFText>RoundRobinTrim\" input: \"m\" input: \"a\" input: \"b\" input: \"sa\" "
      "input: \"sb\" attr { key: \"N\" value { i: 2 } } attr { key: \"T\" value { type: DT_INT64 } } "
      "attr { key: \"Tsplits\" value { type: DT_INT64 } } }\n"
      "}\n";
  sm_session *ss = NULL;
  CHECK_OK(sm__session_from_pbtxt(g, &ss));
  if (!ss) return sm_status_new(SM_INTERNAL, "no session");
  sm_tensor *m = NULL;
  CHECK_OK(sm_tensor_new(SM_INT32, 0, NULL, &m));
  *(int32_t *)sm_tensor_data(m) = maxlen;
  sm_tensor *in[5] = {m, i64s(na, a), i64s(nb, b), i64s(nsa, sa), i64s(nsb, sb)};
  const char *feeds[5] = {"m", "a", "b", "sa", "sb"}, *f[4] = {"op:0", "op:1", "op:2", "op:3"};
  sm_status *s = sm__session_run(ss, feeds, in, 5, f, 4, NULL, 0, out);
  for (int i = 0; i < 5; i++) sm_tensor_free(in[i]);
  sm__session_free(ss);
  return s;
}

static void test_trim_ngrams(void) {
  sm_tensor *o[4] = {0};
  /* rows of 5+1 and 2+4 tokens to 4: row 0 keeps 3+1 (the short one whole, then the rest), row 1 2+2 */
  const int64_t a[] = {1, 2, 3, 4, 5, 6, 7}, sa[] = {0, 5, 7}, b[] = {10, 20, 21, 22, 23}, sb[] = {0, 1, 5};
  CHECK_OK(rr_trim(4, a, 7, sa, 3, b, 5, sb, 3, o));
  check_ints(o[0], 5, (const int64_t[]){1, 2, 3, 6, 7});
  check_ints(o[1], 3, (const int64_t[]){10, 20, 21});
  check_ints(o[2], 3, (const int64_t[]){0, 3, 5});
  check_ints(o[3], 3, (const int64_t[]){0, 1, 3});
  free4(o);
  CHECK_OK(rr_trim(-3, a, 7, sa, 3, b, 5, sb, 3, o)); /* a negative length keeps nothing */
  check_ints(o[2], 3, (const int64_t[]){0, 0, 0});
  free4(o);
  /* what TF Text reads without a check: a second segment of another batch size, splits past the values */
  CHECK_ERR(rr_trim(4, a, 7, sa, 3, b, 5, (const int64_t[]){0, 5}, 2, o), "has 1 rows, segment 0 has 2");
  free4(o);
  CHECK_ERR(rr_trim(4, a, 7, (const int64_t[]){0, 9, 9}, 3, b, 5, sb, 3, o), "row splits are not");
  free4(o);
  /* NgramsStringJoin over a ragged row, and width 0 refused */
  for (int w = 2; w >= 0; w -= 2) {
    sm_graph *g = NULL;
    CHECK_OK(sm_graph_new(&g));
    konst(g, "v", strings(4, (const char *[]){"a", "b", "c", "d"}, NULL));
    konst(g, "s", i64s(3, (const int64_t[]){0, 3, 4}));
    sm_op *op = sm_op_begin(g, "TFText>NgramsStringJoin", "op");
    sm_op_input(op, "v");
    sm_op_input(op, "s");
    sm_op_attr_int(op, "width", w);
    sm_op_attr_int(op, "axis", -1);
    sm_op_attr_string(op, "string_separator", "-", 1);
    sm_op_attr_int(op, "RAGGED_RANK", 1);
    CHECK_OK(sm_op_finish(op, NULL));
    const char *f[2] = {"op:0", "op:1"};
    sm_status *st = run(g, NULL, f, 2, o);
    if (w == 2) {
      CHECK_OK(st);
      check_strings(o[0], 2, (const char *[]){"a-b", "b-c"});
      check_ints(o[1], 3, (const int64_t[]){0, 2, 2});
    } else {
      CHECK_ERR(st, "width must be at least 1");
    }
    free4(o);
    sm_graph_free(g);
  }
}

int main(void) {
  test_regex_split();
  test_trim_ngrams();
  test_cp_tokenizers();
  test_normalize();
  test_wordpiece();
  TEST_MAIN_END();
}
