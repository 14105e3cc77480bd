/* test_tf_compat.c - libsavedmodel_tf without TensorFlow: a C program compiled against our own
 * declarations of TensorFlow's C API (src/compat/tf_c_api.h) and linked to libsavedmodel_tf.so.
 * Status, buffers, tensors and their deallocators, TF_TString (inline, long, view, offset
 * elements), loading with its errors, and runs of zoo models whose expected outputs TensorFlow
 * recorded (tests/fixtures/zoo/<m>/golden/outputs). The comparison with the real C API is
 * tests/interop/test_tf_c_api.py. */
#include <math.h>
#include <stdint.h>

#include "compat/tf_c_api.h"
#include "golden_io.h"
#include "test.h"

#define ZOO SM_SOURCE_DIR "/tests/fixtures/zoo/"

static int dealloc_calls;
static void count_dealloc(void *data, size_t len, void *arg) {
  (void)len;
  CHECK(arg == (void *)&dealloc_calls);
  free(data);
  dealloc_calls++;
}

static void test_status_and_buffer(void) {
  TF_Status *s = TF_NewStatus();
  CHECK_EQ_INT(TF_GetCode(s), TF_OK);
  CHECK_EQ_STR(TF_Message(s), "");
  TF_SetStatus(s, TF_NOT_FOUND, "no such thing");
  CHECK_EQ_INT(TF_GetCode(s), 5); /* TSL_Code numbering */
  CHECK_EQ_STR(TF_Message(s), "no such thing");
  TF_SetStatus(s, TF_OK, "ignored");
  CHECK_EQ_STR(TF_Message(s), "");
  TF_DeleteStatus(s);
  TF_DeleteStatus(NULL);

  TF_Buffer *b = TF_NewBufferFromString("abc", 3);
  CHECK(b && b->length == 3 && !memcmp(b->data, "abc", 3) && b->data_deallocator);
  TF_Buffer copy = TF_GetBuffer(b);
  CHECK(copy.data == b->data && copy.length == 3);
  TF_DeleteBuffer(b);
  b = TF_NewBuffer();
  CHECK(b && !b->data && !b->length);
  TF_DeleteBuffer(b);
  CHECK(strlen(TF_Version()) > 0);
  CHECK_EQ_INT(TF_DataTypeSize(TF_FLOAT), sm_dtype_size(SM_FLOAT));
  CHECK_EQ_INT(TF_DataTypeSize(TF_STRING), 0);
}

static void test_tensors(void) {
  int64_t dims[] = {2, 3};
  float *data = malloc(6 * sizeof(float));
  TF_Tensor *t = TF_NewTensor(TF_FLOAT, dims, 2, data, 6 * sizeof(float), count_dealloc, &dealloc_calls);
  CHECK(t && TF_TensorType(t) == TF_FLOAT && TF_NumDims(t) == 2 && TF_Dim(t, 1) == 3);
  CHECK(TF_TensorData(t) == data && TF_TensorByteSize(t) == 24 && TF_TensorElementCount(t) == 6);
  int64_t flat[] = {6};
  TF_SetShape(t, flat, 1);
  CHECK(TF_NumDims(t) == 1 && TF_Dim(t, 0) == 6);
  CHECK_EQ_INT(dealloc_calls, 0);
  TF_DeleteTensor(t);
  CHECK_EQ_INT(dealloc_calls, 1);
  /* A buffer shorter than the shape: NULL, and the buffer is released. */
  CHECK(!TF_NewTensor(TF_FLOAT, dims, 2, malloc(8), 8, count_dealloc, &dealloc_calls));
  CHECK_EQ_INT(dealloc_calls, 2);
  int64_t neg[] = {-1};
  CHECK(!TF_NewTensor(TF_FLOAT, neg, 1, malloc(8), 8, count_dealloc, &dealloc_calls));
  CHECK_EQ_INT(dealloc_calls, 3);

  t = TF_AllocateTensor(TF_INT64, dims, 2, 6 * sizeof(int64_t));
  CHECK(t && TF_TensorIsAligned(t) && TF_TensorByteSize(t) == 48 && TF_TensorElementCount(t) == 6);
  CHECK(((uintptr_t)TF_TensorData(t) % TF_TensorDefaultAlignment()) == 0);
  TF_DeleteTensor(t);
  CHECK(!TF_TensorMaybeMove(NULL));
  TF_DeleteTensor(NULL);
}

static void test_tstring(void) {
  TF_TString s;
  TF_StringInit(&s);
  CHECK(TF_StringGetType(&s) == TF_TSTR_SMALL && TF_StringGetSize(&s) == 0);
  TF_StringCopy(&s, "short", 5);
  CHECK(TF_StringGetType(&s) == TF_TSTR_SMALL && TF_StringGetSize(&s) == 5);
  CHECK(!memcmp(TF_StringGetDataPointer(&s), "short\0", 6));
  const char *lng = "a string well over twenty-two bytes long";
  TF_StringCopy(&s, lng, strlen(lng));
  CHECK(TF_StringGetType(&s) == TF_TSTR_LARGE && TF_StringGetSize(&s) == strlen(lng));
  CHECK(TF_StringGetCapacity(&s) >= strlen(lng) && (TF_StringGetCapacity(&s) + 1) % 16 == 0);
  CHECK_EQ_STR(TF_StringGetDataPointer(&s), lng);
  /* Copying a string's own bytes into it. */
  TF_StringCopy(&s, TF_StringGetDataPointer(&s) + 2, 6);
  CHECK(TF_StringGetSize(&s) == 6 && !memcmp(TF_StringGetDataPointer(&s), "string", 6));
  TF_StringCopy(&s, TF_StringGetDataPointer(&s) + 1, 3);
  CHECK(TF_StringGetSize(&s) == 3 && !memcmp(TF_StringGetDataPointer(&s), "tri", 3));
  TF_StringAssignView(&s, lng, 8);
  CHECK(TF_StringGetType(&s) == TF_TSTR_VIEW && TF_StringGetDataPointer(&s) == lng && TF_StringGetSize(&s) == 8);
  CHECK_EQ_INT(TF_StringGetCapacity(&s), 0);
  TF_StringDealloc(&s);
  /* An offset element: the bytes follow it in the same buffer. */
  struct {
    TF_TString t;
    char bytes[8];
  } off;
  memset(&off, 0, sizeof off);
  off.t.u.offset.size = 5u << 2 | TF_TSTR_OFFSET;
  off.t.u.offset.offset = (uint32_t)sizeof(TF_TString);
  memcpy(off.bytes, "hello", 5);
  CHECK(TF_StringGetType(&off.t) == TF_TSTR_OFFSET && TF_StringGetSize(&off.t) == 5);
  CHECK(!memcmp(TF_StringGetDataPointer(&off.t), "hello", 5));
}

static TF_Session *load(const char *dir, const char *tag, TF_Graph *g, TF_Buffer *meta, TF_Status *s) {
  TF_SessionOptions *o = TF_NewSessionOptions();
  TF_SetConfig(o, "\x10\x01", 2, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_OK);
  const char *tags[] = {tag};
  TF_Session *sess = TF_LoadSessionFromSavedModel(o, NULL, dir, tags, 1, g, meta, s);
  TF_DeleteSessionOptions(o);
  return sess;
}

static sm_tensor *golden(const char *path) {
  sm_tensor *t = NULL;
  CHECK_OK(read_value(path, &t));
  return t;
}

/* A golden sm_tensor as a feed: strings through TF_AllocateTensor + TF_StringCopy, numbers through
 * TF_NewTensor over a copy. */
static TF_Tensor *feed_of(const sm_tensor *g) {
  int dtype = sm_tensor_dtype(g);
  int64_t n = sm_tensor_num_elements(g);
  if (dtype == SM_STRING) {
    TF_Tensor *t = TF_AllocateTensor(TF_STRING, sm_tensor_dims(g), sm_tensor_rank(g), (size_t)n * sizeof(TF_TString));
    TF_TString *e = TF_TensorData(t);
    for (int64_t i = 0; i < n; i++) {
      size_t len;
      const char *p = sm_tensor_string(g, i, &len);
      TF_StringInit(&e[i]);
      TF_StringCopy(&e[i], p, len);
    }
    return t; /* its elements are deallocated by TF_DeleteTensor */
  }
  size_t nb = sm_tensor_nbytes(g);
  void *copy = malloc(nb ? nb : 1);
  memcpy(copy, sm_tensor_data(g), nb);
  return TF_NewTensor((TF_DataType)dtype, sm_tensor_dims(g), sm_tensor_rank(g), copy, nb, count_dealloc,
                      &dealloc_calls);
}

/* t (from a run) equals TensorFlow's recorded value: floats within 1e-5 relative. */
static void check_same(const TF_Tensor *t, const sm_tensor *want, const char *what) {
  int ok = t && (int)TF_TensorType(t) == sm_tensor_dtype(want) && TF_NumDims(t) == sm_tensor_rank(want);
  for (int d = 0; ok && d < TF_NumDims(t); d++) ok = TF_Dim(t, d) == sm_tensor_dims(want)[d];
  int64_t n = ok ? sm_tensor_num_elements(want) : 0;
  for (int64_t i = 0; ok && i < n; i++) {
    if (sm_tensor_dtype(want) == SM_STRING) {
      size_t len;
      const char *p = sm_tensor_string(want, i, &len);
      const TF_TString *e = (const TF_TString *)TF_TensorData(t) + i;
      ok = TF_StringGetSize(e) == len && !memcmp(TF_StringGetDataPointer(e), p, len);
    } else if (sm_tensor_dtype(want) == SM_FLOAT) {
      float a = ((const float *)TF_TensorData(t))[i], b = ((const float *)sm_tensor_data(want))[i];
      ok = fabsf(a - b) <= 1e-6f + 1e-5f * fabsf(b);
    } else {
      ok = TF_TensorByteSize(t) == sm_tensor_nbytes(want) && !memcmp(TF_TensorData(t), sm_tensor_data(want), sm_tensor_nbytes(want));
    }
  }
  if (!ok) fprintf(stderr, "%s: not TensorFlow's value\n", what);
  CHECK(ok);
}

static void test_vocab(void) {
  TF_Status *s = TF_NewStatus();
  TF_Graph *g = TF_NewGraph();
  TF_Buffer *meta = TF_NewBuffer();
  TF_Session *sess = load(ZOO "tf1_vocab/model", "serve", g, meta, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_OK);
  if (!sess) {
    fprintf(stderr, "load: %s\n", TF_Message(s));
    goto out;
  }
  CHECK(meta->length > 0 && meta->data_deallocator);
  TF_Operation *tokens = TF_GraphOperationByName(g, "tokens"), *ids = TF_GraphOperationByName(g, "ids");
  TF_Operation *vectors = TF_GraphOperationByName(g, "vectors");
  CHECK(tokens && ids && vectors && !TF_GraphOperationByName(g, "no such op"));
  CHECK_EQ_STR(TF_OperationOpType(tokens), "Placeholder");
  CHECK_EQ_STR(TF_OperationName(ids), "ids");
  CHECK(TF_OperationNumOutputs(tokens) == 1 && TF_OperationNumInputs(tokens) == 0);
  CHECK(TF_OperationOutputType((TF_Output){tokens, 0}) == TF_STRING);
  CHECK(TF_GraphGetTensorNumDims(g, (TF_Output){tokens, 0}, s) == 1 && TF_GetCode(s) == TF_OK);
  int64_t d[2];
  TF_GraphGetTensorShape(g, (TF_Output){tokens, 0}, d, 1, s);
  CHECK(TF_GetCode(s) == TF_OK && d[0] == -1);
  TF_GraphGetTensorShape(g, (TF_Output){tokens, 0}, d, 2, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_INVALID_ARGUMENT);
  TF_GraphGetTensorNumDims(g, (TF_Output){tokens, 4}, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_OUT_OF_RANGE);
  size_t pos = 0, nops = 0;
  while (TF_GraphNextOperation(g, &pos)) nops++;
  CHECK(nops > 3 && pos == nops);
  TF_Buffer *gd = TF_NewBuffer();
  TF_GraphToGraphDef(g, gd, s);
  CHECK(TF_GetCode(s) == TF_OK && gd->length > 0 && gd->length < meta->length);
  TF_DeleteBuffer(gd);

  /* serving_default: tokens (strings) -> ids, vectors, as TensorFlow recorded. */
  sm_tensor *in = golden(ZOO "tf1_vocab/golden/outputs/serve__serving_default/inputs/tokens.json");
  sm_tensor *want_ids = golden(ZOO "tf1_vocab/golden/outputs/serve__serving_default/outputs/ids.npy");
  sm_tensor *want_vec = golden(ZOO "tf1_vocab/golden/outputs/serve__serving_default/outputs/vectors.npy");
  if (in && want_ids && want_vec) {
    TF_Output feeds[] = {{tokens, 0}}, fetches[] = {{ids, 0}, {vectors, 0}};
    TF_Tensor *fv[] = {feed_of(in)}, *out[2] = {NULL, NULL};
    TF_SessionRun(sess, NULL, feeds, fv, 1, fetches, out, 2, NULL, 0, NULL, s);
    CHECK_EQ_INT(TF_GetCode(s), TF_OK);
    check_same(out[0], want_ids, "ids");
    check_same(out[1], want_vec, "vectors");
    TF_DeleteTensor(out[0]);
    TF_DeleteTensor(out[1]);
    /* A feed of the wrong dtype, an output index past the op's, a NULL operation: errors, outputs NULL. */
    TF_Tensor *bad = TF_AllocateTensor(TF_INT64, NULL, 0, 8);
    out[0] = (TF_Tensor *)&out;
    TF_SessionRun(sess, NULL, feeds, &bad, 1, fetches, out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "Expects arg[0] to be string but int64"));
    CHECK(out[0] == NULL);
    TF_Output past[] = {{ids, 1}}, none[] = {{NULL, 0}};
    TF_SessionRun(sess, NULL, feeds, fv, 1, past, out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_OUT_OF_RANGE && strstr(TF_Message(s), "does not have output 1"));
    TF_SessionRun(sess, NULL, feeds, fv, 1, none, out, 1, NULL, 0, NULL, s);
    CHECK_EQ_INT(TF_GetCode(s), TF_INVALID_ARGUMENT);
    TF_SessionRun(sess, NULL, feeds, fv, 1, feeds, out, 1, NULL, 0, NULL, s);
    CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "both fed and fetched"));
    TF_DeleteTensor(bad);
    TF_DeleteTensor(fv[0]);
  }
  sm_tensor_free(in);
  sm_tensor_free(want_ids);
  sm_tensor_free(want_vec);

  /* to_words: ids -> strings out, as TF_TStrings. */
  in = golden(ZOO "tf1_vocab/golden/outputs/serve__to_words/inputs/ids.npy");
  sm_tensor *want = golden(ZOO "tf1_vocab/golden/outputs/serve__to_words/outputs/words.json");
  TF_Operation *qids = TF_GraphOperationByName(g, "qids"), *words = TF_GraphOperationByName(g, "words");
  if (in && want && qids && words) {
    TF_Output feeds[] = {{qids, 0}}, fetches[] = {{words, 0}};
    TF_Tensor *fv[] = {feed_of(in)}, *out[1] = {NULL};
    int before = dealloc_calls;
    TF_SessionRun(sess, NULL, feeds, fv, 1, fetches, out, 1, NULL, 0, NULL, s);
    CHECK_EQ_INT(TF_GetCode(s), TF_OK);
    check_same(out[0], want, "words");
    TF_DeleteTensor(out[0]);
    TF_DeleteTensor(fv[0]);
    CHECK_EQ_INT(dealloc_calls, before + 1);
  }
  sm_tensor_free(in);
  sm_tensor_free(want);

  /* The graph may go before the session; a closed session refuses runs. */
  TF_DeleteGraph(g);
  g = NULL;
  TF_CloseSession(sess, s);
  TF_SessionRun(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, 0, NULL, s);
  CHECK(TF_GetCode(s) == TF_CANCELLED && !strcmp(TF_Message(s), "Session has been closed."));
  TF_DeleteSession(sess, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_OK);
out:
  TF_DeleteGraph(g);
  TF_DeleteBuffer(meta);
  TF_DeleteStatus(s);
}

static void test_seed_cnn(void) {
  TF_Status *s = TF_NewStatus();
  TF_Graph *g = TF_NewGraph();
  TF_Session *sess = load(ZOO "keras_seed_cnn/model", "serve", g, NULL, s);
  CHECK_EQ_INT(TF_GetCode(s), TF_OK);
  sm_tensor *in = golden(ZOO "keras_seed_cnn/golden/outputs/serve__serving_default__b3/inputs/inputs.npy");
  sm_tensor *want = golden(ZOO "keras_seed_cnn/golden/outputs/serve__serving_default__b3/outputs/output_0.npy");
  TF_Operation *x = TF_GraphOperationByName(g, "serving_default_inputs");
  TF_Operation *y = TF_GraphOperationByName(g, "StatefulPartitionedCall");
  if (sess && in && want && x && y) {
    int64_t d[4];
    TF_GraphGetTensorShape(g, (TF_Output){x, 0}, d, 4, s);
    CHECK(TF_GetCode(s) == TF_OK && d[0] == -1 && d[1] == 28 && d[3] == 1);
    TF_Output feeds[] = {{x, 0}}, fetches[] = {{y, 0}};
    TF_Tensor *fv[] = {feed_of(in)}, *out[1] = {NULL};
    TF_SessionRun(sess, NULL, feeds, fv, 1, fetches, out, 1, NULL, 0, NULL, s);
    CHECK_EQ_INT(TF_GetCode(s), TF_OK);
    check_same(out[0], want, "keras_seed_cnn output_0");
    TF_DeleteTensor(out[0]);
    TF_DeleteTensor(fv[0]);
  }
  sm_tensor_free(in);
  sm_tensor_free(want);
  TF_DeleteSession(sess, s);
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

static void test_load_errors(void) {
  TF_Status *s = TF_NewStatus();
  TF_Graph *g = TF_NewGraph();
  CHECK(!load(ZOO "no_such_model", "serve", g, NULL, s));
  CHECK(TF_GetCode(s) == TF_NOT_FOUND && strstr(TF_Message(s), "Could not find SavedModel .pb or .pbtxt"));
  CHECK(!load(ZOO "tf1_vocab/model", "gpu", g, NULL, s));
  CHECK(TF_GetCode(s) == TF_NOT_FOUND && strstr(TF_Message(s), "matching supplied tags: { gpu }"));
  TF_Buffer *full = TF_NewBufferFromString("x", 1);
  CHECK(!load(ZOO "tf1_vocab/model", "serve", g, full, s));
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "non-empty TF_Buffer"));
  TF_DeleteBuffer(full);
  /* The graph was filled by that load: a second one into it is refused. */
  CHECK(!load(ZOO "tf1_vocab/model", "serve", g, NULL, s));
  CHECK(TF_GetCode(s) == TF_INVALID_ARGUMENT && strstr(TF_Message(s), "non-empty graph"));
  TF_DeleteGraph(g);
  TF_DeleteStatus(s);
}

int main(void) {
  test_status_and_buffer();
  test_tensors();
  test_tstring();
  test_load_errors();
  test_vocab();
  test_seed_cnn();
  TEST_MAIN_END();
}
