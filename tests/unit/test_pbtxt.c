/* test_pbtxt.c - the protobuf text format: TensorFlow's printing conventions byte for byte, every
 * syntax the protobuf parser accepts, hostile text, and print/parse/pack round trips over the
 * real TensorFlow-written SavedModels in the shared fixtures. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "any.pb-c.h"
#include "attr_value.pb-c.h"
#include "format/pbtxt_internal.h"
#include "meta_graph.pb-c.h"
#include "saved_model.pb-c.h"
#include "savedmodel/pbtxt.h"
#include "struct.pb-c.h"
#include "tensor.pb-c.h"
#include "test.h"

#define SM_DESC (&tensorflow__saved_model__descriptor)

static ProtobufCMessage *parse_ok(const ProtobufCMessageDescriptor *d, const char *text) {
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(d, text, strlen(text), "t.pbtxt", &m);
  if (s) {
    fprintf(stderr, "parse failed: %s\n--- text ---\n%s\n", sm_status_message(s), text);
    sm_status_free(s);
    sm_test_failures++;
    return NULL;
  }
  return m;
}

static char *print_ok(const ProtobufCMessage *m) {
  char *out = NULL;
  size_t len = 0;
  sm_status *s = sm_pbtxt_print(m, &out, &len);
  if (s) {
    fprintf(stderr, "print failed: %s\n", sm_status_message(s));
    sm_status_free(s);
    sm_test_failures++;
    return NULL;
  }
  CHECK(strlen(out) == len);
  return out;
}

/* Expects parsing to fail with a message containing needle (and a line:column). */
static void parse_err(const ProtobufCMessageDescriptor *d, const char *text, size_t len, const char *needle) {
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(d, text, len, "t.pbtxt", &m);
  if (!s) {
    fprintf(stderr, "parse of <<%.*s>> succeeded, expected \"%s\"\n", (int)(len > 200 ? 200 : len), text, needle);
    sm_test_failures++;
    protobuf_c_message_free_unpacked(m, NULL);
    return;
  }
  if (!strstr(sm_status_message(s), needle)) {
    fprintf(stderr, "error \"%s\" lacks \"%s\"\n", sm_status_message(s), needle);
    sm_test_failures++;
  }
  CHECK(m == NULL);
  sm_status_free(s);
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n ? *n : 1);
  protobuf_c_message_pack(m, b);
  return b;
}

static int same_packed(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  size_t na, nb;
  uint8_t *pa = pack(a, &na), *pb = pack(b, &nb);
  int same = na == nb && memcmp(pa, pb, na) == 0;
  free(pa);
  free(pb);
  return same;
}

/* ---- TensorFlow's saved_model.pbtxt conventions -------------------------------------------- */

/* Written in the form TF's Python prints (modelled on half_plus_two_pbtxt): printing what this
 * parses must give it back byte for byte. */
static const char tf_style[] =
    "saved_model_schema_version: 1\n"
    "meta_graphs {\n"
    "  meta_info_def {\n"
    "    tags: \"serve\"\n"
    "    tensorflow_version: \"0.12.head\"\n"
    "    tensorflow_git_version: \"unknown\"\n"
    "  }\n"
    "  graph_def {\n"
    "    node {\n"
    "      name: \"a/initial_value\"\n"
    "      op: \"Const\"\n"
    "      attr {\n"
    "        key: \"_output_shapes\"\n"
    "        value {\n"
    "          list {\n"
    "            shape {\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "      attr {\n"
    "        key: \"dtype\"\n"
    "        value {\n"
    "          type: DT_FLOAT\n"
    "        }\n"
    "      }\n"
    "      attr {\n"
    "        key: \"value\"\n"
    "        value {\n"
    "          tensor {\n"
    "            dtype: DT_FLOAT\n"
    "            tensor_shape {\n"
    "              dim {\n"
    "                size: 1\n"
    "              }\n"
    "            }\n"
    "            float_val: 0.5\n"
    "            float_val: 2.0\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    node {\n"
    "      name: \"save/restore_shard\"\n"
    "      op: \"NoOp\"\n"
    "      input: \"^save/Assign\"\n"
    "      input: \"^save/Assign_1\"\n"
    "      attr {\n"
    "        key: \"container\"\n"
    "        value {\n"
    "          s: \"\"\n"
    "        }\n"
    "      }\n"
    "      attr {\n"
    "        key: \"use_locking\"\n"
    "        value {\n"
    "          b: true\n"
    "        }\n"
    "      }\n"
    "      attr {\n"
    "        key: \"zero\"\n"
    "        value {\n"
    "          i: 0\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "    versions {\n"
    "      producer: 19\n"
    "    }\n"
    "  }\n"
    "  saver_def {\n"
    "    filename_tensor_name: \"save/Const:0\"\n"
    "    save_tensor_name: \"save/Identity:0\"\n"
    "    restore_op_name: \"save/restore_all\"\n"
    "    max_to_keep: 5\n"
    "    sharded: true\n"
    "    keep_checkpoint_every_n_hours: 10000.0\n"
    "    version: V2\n"
    "  }\n"
    "  collection_def {\n"
    "    key: \"legacy_init_op\"\n"
    "    value {\n"
    "      node_list {\n"
    "        value: \"group_deps\"\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  collection_def {\n"
    "    key: \"saved_model_assets\"\n"
    "    value {\n"
    "      any_list {\n"
    "        value {\n"
    "          type_url: \"type.googleapis.com/tensorflow.AssetFileDef\"\n"
    "          value: \"\\n\\t\\n\\007Const:0\\022\\007foo.txt\"\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  collection_def {\n"
    "    key: \"variables\"\n"
    "    value {\n"
    "      bytes_list {\n"
    "        value: \"\\n\\003a:0\\022\\010a/Assign\\032\\010a/read:0\"\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  signature_def {\n"
    "    key: \"serving_default\"\n"
    "    value {\n"
    "      inputs {\n"
    "        key: \"x\"\n"
    "        value {\n"
    "          name: \"x:0\"\n"
    "        }\n"
    "      }\n"
    "      outputs {\n"
    "        key: \"y\"\n"
    "        value {\n"
    "          name: \"y:0\"\n"
    "        }\n"
    "      }\n"
    "      method_name: \"tensorflow/serving/predict\"\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_tf_style(void) {
  Tensorflow__SavedModel *sm = (Tensorflow__SavedModel *)parse_ok(SM_DESC, tf_style);
  if (!sm) return;
  CHECK_EQ_INT(sm->saved_model_schema_version, 1);
  CHECK_EQ_INT(sm->n_meta_graphs, 1);
  Tensorflow__MetaGraphDef *mg = sm->meta_graphs[0];
  CHECK_EQ_INT(mg->meta_info_def->n_tags, 1);
  CHECK_EQ_STR(mg->meta_info_def->tags[0], "serve");
  CHECK_EQ_INT(mg->graph_def->n_node, 2);
  Tensorflow__NodeDef *n0 = mg->graph_def->node[0];
  CHECK_EQ_STR(n0->op, "Const");
  CHECK_EQ_INT(n0->n_attr, 3);
  CHECK_EQ_STR(n0->attr[1]->key, "dtype");
  CHECK_EQ_INT(n0->attr[1]->value->value_case, TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  CHECK_EQ_INT(n0->attr[1]->value->type, TENSORFLOW__DATA_TYPE__DT_FLOAT);
  Tensorflow__TensorProto *t = n0->attr[2]->value->tensor;
  CHECK(t && t->n_float_val == 2 && t->float_val[0] == 0.5f && t->float_val[1] == 2.0f);
  CHECK(t && t->tensor_shape && t->tensor_shape->n_dim == 1 && t->tensor_shape->dim[0]->size == 1);
  /* oneof members at their default value are still set */
  Tensorflow__NodeDef *n1 = mg->graph_def->node[1];
  CHECK_EQ_INT(n1->n_input, 2);
  CHECK_EQ_INT(n1->attr[0]->value->value_case, TENSORFLOW__ATTR_VALUE__VALUE_S);
  CHECK_EQ_INT(n1->attr[0]->value->s.len, 0);
  CHECK_EQ_INT(n1->attr[2]->value->value_case, TENSORFLOW__ATTR_VALUE__VALUE_I);
  CHECK(mg->saver_def->keep_checkpoint_every_n_hours == 10000.0f);
  CHECK_EQ_INT(mg->saver_def->version, TENSORFLOW__SAVER_DEF__CHECKPOINT_FORMAT_VERSION__V2);
  CHECK_EQ_INT(mg->n_collection_def, 3);
  Google__Protobuf__Any *any = mg->collection_def[1]->value->any_list->value[0];
  CHECK_EQ_STR(any->type_url, "type.googleapis.com/tensorflow.AssetFileDef");
  CHECK(any->value.len == 20 && memcmp(any->value.data, "\n\t\n\007Const:0\022\007foo.txt", 20) == 0);
  Tensorflow__AssetFileDef *afd = tensorflow__asset_file_def__unpack(NULL, any->value.len, any->value.data);
  CHECK(afd && strcmp(afd->filename, "foo.txt") == 0 && strcmp(afd->tensor_info->name, "Const:0") == 0);
  if (afd) tensorflow__asset_file_def__free_unpacked(afd, NULL);
  CHECK_EQ_STR(mg->signature_def[0]->value->inputs[0]->value->name, "x:0");

  char *out = print_ok(&sm->base);
  if (out && strcmp(out, tf_style) != 0) {
    fprintf(stderr, "printed text differs:\n%s\n", out);
    sm_test_failures++;
  }
  free(out);

  /* Map entries out of key order print sorted; the message itself is not touched. */
  Tensorflow__MetaGraphDef__CollectionDefEntry *e0 = mg->collection_def[0];
  mg->collection_def[0] = mg->collection_def[2];
  mg->collection_def[2] = e0;
  out = print_ok(&sm->base);
  CHECK(out && strcmp(out, tf_style) == 0);
  CHECK_EQ_STR(mg->collection_def[0]->key, "variables");
  free(out);
  CHECK_OK(sm__pb_sort_maps(&sm->base));
  CHECK_EQ_STR(mg->collection_def[0]->key, "legacy_init_op");
  CHECK_EQ_STR(mg->collection_def[2]->key, "variables");
  protobuf_c_message_free_unpacked(&sm->base, NULL);
}

/* ---- every syntax the protobuf parser accepts ------------------------------------------------ */

static void test_syntax(void) {
  /* The same message as tf_style's first lines, written every other legal way. */
  const char *alt =
      "# a comment\n"
      "saved_model_schema_version: 0x1 ;\n"
      "meta_graphs: <\n"
      "  meta_info_def { tags: ['ser' \"ve\"], tensorflow_version: '0.12.head' } # trailing\n"
      "  saver_def {\n"
      "    keep_checkpoint_every_n_hours: 1e4f, version: 2, sharded: t max_to_keep: 05\n"
      "  }\n"
      "  collection_def [{key: \"k\" value {int64_list {value: [-9223372036854775808, 0x7fffffffffffffff, 017]}}},\n"
      "                  {key: \"f\" value {float_list {value: [inf, -Infinity, nan, 1, .5, -2.5e-3F, 3.f]}}}]\n"
      ">";
  const char *canon =
      "saved_model_schema_version: 1\n"
      "meta_graphs {\n"
      "  meta_info_def { tags: \"serve\" tensorflow_version: \"0.12.head\" }\n"
      "  saver_def { max_to_keep: 5 sharded: true keep_checkpoint_every_n_hours: 10000.0 version: V2 }\n"
      "  collection_def { key: \"k\" value { int64_list { value: -9223372036854775808 value: 9223372036854775807 value: 15 } } }\n"
      "  collection_def { key: \"f\" value { float_list { value: inf value: -inf value: nan value: 1.0 value: 0.5 value: -0.0025 value: 3.0 } } }\n"
      "}\n";
  ProtobufCMessage *a = parse_ok(SM_DESC, alt), *b = parse_ok(SM_DESC, canon);
  if (a && b) CHECK(same_packed(a, b));
  if (a) {
    Tensorflow__SavedModel *sm = (Tensorflow__SavedModel *)a;
    Tensorflow__CollectionDef__FloatList *fl = sm->meta_graphs[0]->collection_def[1]->value->float_list;
    CHECK(fl->n_value == 7 && isinf(fl->value[0]) && fl->value[1] < 0 && isinf(fl->value[1]) && isnan(fl->value[2]));
    char *out = print_ok(a);
    CHECK(out && strstr(out, "        value: inf\n        value: -inf\n        value: nan\n        value: 1.0\n"
                             "        value: 0.5\n        value: -0.0025\n        value: 3.0\n"));
    CHECK(out && strstr(out, "    key: \"f\"") < strstr(out, "    key: \"k\"")); /* sorted keys */
    free(out);
  }
  protobuf_c_message_free_unpacked(a, NULL);
  protobuf_c_message_free_unpacked(b, NULL);

  /* String escapes, including \u, \U and surrogate pairs; printing escapes back to octal. */
  const char *badx = "string_val: \"\\x41\\xg\"";
  parse_err(&tensorflow__tensor_proto__descriptor, badx, strlen(badx), "1:18: Expected hex digits");
  Tensorflow__TensorProto *t;
  t = (Tensorflow__TensorProto *)parse_ok(&tensorflow__tensor_proto__descriptor,
                                          "string_val: '\\a\\b\\f\\n\\r\\t\\v\\\\\\?\\'\\\"'\n"
                                          "string_val: \"\\x41\\x4a\\101\\0\\7z\\xff\\377\"\n"
                                          "string_val: \"\\u00e9\\U0001F600\\ud83d\\ude00\"\n"
                                          "string_val: \"caf\xc3\xa9\" \"\\177\" ''\n"
                                          "dtype: DT_STRING version_number: -0x80000000\n");
  if (t) {
    CHECK(t->n_string_val == 4);
    CHECK(t->string_val[0].len == 11 && memcmp(t->string_val[0].data, "\a\b\f\n\r\t\v\\?'\"", 11) == 0);
    CHECK(t->string_val[1].len == 8 && memcmp(t->string_val[1].data, "AJA\0\007z\xff\xff", 8) == 0);
    CHECK(t->string_val[2].len == 10 &&
          memcmp(t->string_val[2].data, "\xc3\xa9\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 10) == 0);
    CHECK(t->string_val[3].len == 6 && memcmp(t->string_val[3].data, "caf\xc3\xa9\x7f", 6) == 0);
    CHECK_EQ_INT(t->version_number, INT32_MIN);
    char *out = print_ok(&t->base);
    CHECK_EQ_STR(out,
                 "dtype: DT_STRING\n"
                 "version_number: -2147483648\n"
                 "string_val: \"\\007\\010\\014\\n\\r\\t\\013\\\\?\\'\\\"\"\n"
                 "string_val: \"AJA\\000\\007z\\377\\377\"\n"
                 "string_val: \"\\303\\251\\360\\237\\230\\200\\360\\237\\230\\200\"\n"
                 "string_val: \"caf\\303\\251\\177\"\n");
    free(out);
  }
  protobuf_c_message_free_unpacked(&t->base, NULL);

  /* Bools in every spelling; enum by number when it has no name; empty lists. */
  Tensorflow__TensorProto *b2 = (Tensorflow__TensorProto *)parse_ok(
      &tensorflow__tensor_proto__descriptor,
      "bool_val: [true, True, t, 1, false, False, f, 0] dtype: 1234 int_val: [] uint64_val: 18446744073709551615");
  if (b2) {
    CHECK(b2->n_bool_val == 8 && b2->bool_val[0] && b2->bool_val[3] && !b2->bool_val[4] && !b2->bool_val[7]);
    CHECK_EQ_INT(b2->dtype, 1234);
    CHECK(b2->n_uint64_val == 1 && b2->uint64_val[0] == UINT64_MAX);
    char *out = print_ok(&b2->base);
    CHECK(out && strncmp(out, "dtype: 1234\n", 12) == 0 && strstr(out, "uint64_val: 18446744073709551615\n"));
    free(out);
  }
  protobuf_c_message_free_unpacked(&b2->base, NULL);

  /* Empty text is an empty message; an empty message prints as nothing. */
  ProtobufCMessage *e = parse_ok(SM_DESC, "  # nothing\n");
  char *out = e ? print_ok(e) : NULL;
  CHECK_EQ_STR(out, "");
  free(out);
  protobuf_c_message_free_unpacked(e, NULL);
  /* Not NUL-terminated: the parser must stop at len. */
  char buf[8] = {'s', 'a', 'v', 'e', 'd', '_', 'm', 'o'};
  parse_err(SM_DESC, buf, sizeof buf, "no field named");
}

/* ---- expanded Any ---------------------------------------------------------------------------- */

static void test_any(void) {
  const char *expanded =
      "meta_graphs { collection_def { key: \"saved_model_assets\" value { any_list {\n"
      "  value { [type.googleapis.com/tensorflow.AssetFileDef] {\n"
      "    tensor_info { name: \"Const:0\" } filename: \"foo.txt\" } }\n"
      "} } } }\n";
  const char *raw =
      "meta_graphs { collection_def { key: \"saved_model_assets\" value { any_list {\n"
      "  value { type_url: \"type.googleapis.com/tensorflow.AssetFileDef\"\n"
      "          value: \"\\n\\t\\n\\007Const:0\\022\\007foo.txt\" }\n"
      "} } } }\n";
  ProtobufCMessage *a = parse_ok(SM_DESC, expanded), *b = parse_ok(SM_DESC, raw);
  if (a && b) CHECK(same_packed(a, b));
  protobuf_c_message_free_unpacked(a, NULL);
  protobuf_c_message_free_unpacked(b, NULL);
  /* Types not reachable from the root need registering. */
  const char *dict = "[type.googleapis.com/tensorflow.DictValue]: < fields { key: \"a\" value { bool_value: true } } >";
  parse_err(&google__protobuf__any__descriptor, dict, strlen(dict), "Could not find type \"tensorflow.DictValue\"");
  CHECK_OK(sm__pbtxt_register_type(&tensorflow__dict_value__descriptor));
  Google__Protobuf__Any *any = (Google__Protobuf__Any *)parse_ok(&google__protobuf__any__descriptor, dict);
  if (any) {
    CHECK_EQ_STR(any->type_url, "type.googleapis.com/tensorflow.DictValue");
    Tensorflow__DictValue *dv = tensorflow__dict_value__unpack(NULL, any->value.len, any->value.data);
    CHECK(dv && dv->n_fields == 1 && dv->fields[0]->value->bool_value);
    if (dv) tensorflow__dict_value__free_unpacked(dv, NULL);
  }
  protobuf_c_message_free_unpacked(&any->base, NULL);
  const char *twice = "type_url: \"x/y\" [type.googleapis.com/tensorflow.DictValue] {}";
  parse_err(&google__protobuf__any__descriptor, twice, strlen(twice), "Expected only one");
  const char *ext = "meta_graphs { [foo.bar] { } }";
  parse_err(SM_DESC, ext, strlen(ext), "t.pbtxt:1:15: Extension \"foo.bar\" is not defined");
}

/* ---- Python's number formatting -------------------------------------------------------------- */

static void test_numbers(void) {
  static const struct {
    float f;
    const char *want;
  } floats[] = {
      {0.5f, "0.5"},          {2.0f, "2.0"},        {0.1f, "0.1"},         {1e-05f, "1e-05"},
      {10000.0f, "10000.0"},  {1e16f, "1e+16"},     {3.14159f, "3.14159"}, {-0.0f, "-0.0"},
      {123456789.0f, "123456790.0"}, {0.0001f, "0.0001"}, {1.17549435e-38f, "1.1754944e-38"},
      {3.4028235e38f, "3.4028235e+38"}, {1e15f, "1000000000000000.0"}, {16777216.0f, "16777216.0"},
      {0.3f, "0.3"},          {2.5e-3f, "0.0025"},  {-7.0f, "-7.0"},
  };
  static const struct {
    double d;
    const char *want;
  } doubles[] = {
      {0.1, "0.1"},           {1e100, "1e+100"},    {1.5e-7, "1.5e-07"},   {123.0, "123.0"},
      {1e22, "1e+22"},        {0.0001, "0.0001"},   {0.00001, "1e-05"},    {1234567890123456789.0, "1.2345678901234568e+18"},
      {9007199254740993.0, "9007199254740992.0"},   {1e16, "1e+16"},       {0.30000000000000004, "0.30000000000000004"},
      {5e-324, "5e-324"},     {-2.5, "-2.5"},
  };
  for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
    Tensorflow__TensorProto t = TENSORFLOW__TENSOR_PROTO__INIT;
    float v = floats[i].f;
    t.n_float_val = 1;
    t.float_val = &v;
    char *out = print_ok(&t.base), want[80];
    snprintf(want, sizeof want, "float_val: %s\n", floats[i].want);
    CHECK_EQ_STR(out, want);
    /* and it reads back as the same float */
    Tensorflow__TensorProto *back = out ? (Tensorflow__TensorProto *)parse_ok(&tensorflow__tensor_proto__descriptor, out) : NULL;
    CHECK(back && back->n_float_val == 1 && memcmp(&back->float_val[0], &v, sizeof v) == 0);
    protobuf_c_message_free_unpacked(&back->base, NULL);
    free(out);
  }
  for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
    Tensorflow__TensorProto t = TENSORFLOW__TENSOR_PROTO__INIT;
    double v = doubles[i].d;
    t.n_double_val = 1;
    t.double_val = &v;
    char *out = print_ok(&t.base), want[80];
    snprintf(want, sizeof want, "double_val: %s\n", doubles[i].want);
    CHECK_EQ_STR(out, want);
    Tensorflow__TensorProto *back = out ? (Tensorflow__TensorProto *)parse_ok(&tensorflow__tensor_proto__descriptor, out) : NULL;
    CHECK(back && back->n_double_val == 1 && back->double_val[0] == v);
    protobuf_c_message_free_unpacked(&back->base, NULL);
    free(out);
  }
  /* proto3 scalars at their default are not printed; -0.0 is (its bits are not zero). */
  Tensorflow__SaverDef sd = TENSORFLOW__SAVER_DEF__INIT;
  char *out = print_ok(&sd.base);
  CHECK_EQ_STR(out, "");
  free(out);
  sd.keep_checkpoint_every_n_hours = -0.0f;
  out = print_ok(&sd.base);
  CHECK_EQ_STR(out, "keep_checkpoint_every_n_hours: -0.0\n");
  free(out);
}

/* ---- errors and hostile text ----------------------------------------------------------------- */

static void test_errors(void) {
#define E(text, needle) parse_err(SM_DESC, text, strlen(text), needle)
#define T(text, needle) parse_err(&tensorflow__tensor_proto__descriptor, text, strlen(text), needle)
  E("saved_model_schema_version: 1\nmeta_graphs {\n  bogus: 3\n}", "t.pbtxt:3:3: Message type \"tensorflow.MetaGraphDef\" has no field named \"bogus\".");
  E("saved_model_schema_version: 1 saved_model_schema_version: 2", "1:31: Non-repeated field \"saved_model_schema_version\" is specified multiple times.");
  E("meta_graphs { saver_def {} saver_def {} }", "Non-repeated field \"saver_def\" is specified multiple times.");
  E("meta_graphs { graph_def { node { attr { key: \"a\" value { s: \"x\" i: 3 } } } } }",
    "Field \"i\" is specified along with field \"s\", another member of the same oneof");
  E("meta_graphs { graph_def { node { attr { key: \"a\" value { i: 0 i: 3 } } } } }", "\"i\" is specified multiple times");
  E("saved_model_schema_version: 9223372036854775808", "1:29: Integer out of range");
  E("saved_model_schema_version: 99999999999999999999999", "Integer out of range");
  E("saved_model_schema_version: 1.5", "Expected integer, got: 1.5");
  /* Invalid UTF-8 in a proto3 string field: refused, as by the binary parser; fine in bytes. */
  E("meta_graphs { meta_info_def { tags: \"\\377serve\" } }", "1:31: String field \"tags\" is not valid UTF-8.");
  E("meta_graphs { meta_info_def { tags: \"\\300\\200\" } }", "is not valid UTF-8");
  E("saved_model_schema_version: \"1\"", "Expected integer");
  E("saved_model_schema_version 1", "1:28: Expected \":\", found \"1\".");
  E("saved_model_schema_version: 08", "Expected integer");
  E("meta_graphs { saver_def { max_to_keep: 2147483648 } }", "Integer out of range");
  E("meta_graphs { saver_def { max_to_keep: -2147483649 } }", "Integer out of range");
  E("meta_graphs { saver_def { sharded: yes } }", "Invalid value for boolean field \"sharded\". Value: \"yes\".");
  E("meta_graphs { saver_def { sharded: 2 } }", "Invalid value for boolean field");
  E("meta_graphs { saver_def { version: V9 } }", "Unknown enumeration value of \"V9\" for field \"version\".");
  E("meta_graphs { saver_def { keep_checkpoint_every_n_hours: 0x10 } }", "Expect a decimal number");
  E("meta_graphs { saver_def { keep_checkpoint_every_n_hours: 1e } }", "Expected double");
  E("meta_graphs { saver_def { keep_checkpoint_every_n_hours: infinite } }", "Expected double");
  E("meta_graphs { meta_info_def { tags: \"abc } }", "1:37: Unexpected end of string.");
  E("meta_graphs { meta_info_def { tags: \"ab\nc\" } }", "String literals cannot cross line boundaries.");
  E("meta_graphs { meta_info_def { tags: \"a\\qb\" } }", "1:39: Invalid escape sequence in string literal.");
  E("meta_graphs { meta_info_def { tags: \"a\\u12\" } }", "Expected four hex digits");
  E("meta_graphs { meta_info_def { tags: \"a\\U00110000\" } }", "Expected eight hex digits");
  E("meta_graphs { meta_info_def { tags: \"a\\000b\" } }", "contains a NUL byte");
  E("meta_graphs { meta_info_def { tags: \"a\\", "Unexpected end of string.");
  E("meta_graphs { meta_info_def { tags: 3 } }", "Expected string, got: 3");
  E("meta_graphs { meta_info_def { tags: [\"a\" \"b\" } }", "Expected \"]\", found \"}\".");
  E("meta_graphs { meta_info_def { tags: [\"a\", ] } }", "Expected string, got: ]");
  E("meta_graphs { meta_info_def { ", "Unexpected end of input: expected \"}\".");
  E("meta_graphs { meta_info_def > }", "Expected \"{\", found \">\".");
  E("meta_graphs < meta_info_def { } }", "Expected identifier, got: }");
  E("}", "1:1: Expected identifier, got: }");
  E("meta_graphs: 3", "Expected \"{\", found \"3\".");
  E("saved_model_schema_version: \x01", "Invalid character 0x01");
  E("saved_model_schema_version: 1 \xc3\xa9", "Invalid character 0xc3");
  T("float_val: [1, 2", "Expected \"]\"");
  T("uint32_val: -1", "Expected integer, got: -");
  T("uint32_val: 4294967296", "Integer out of range");
  T("dtype: -2147483649", "Integer out of range");
  T("int_val: 0x", "Expected integer");
  T("half_val: 1 2", "Expected identifier, got: 2");
#undef E
#undef T
}

static void test_hostile(void) {
  /* Deep nesting through a recursive type: refused at the depth limit, no stack overflow. */
  const char *unit = "list_value { values { ";
  size_t levels = 100000, ul = strlen(unit);
  char *deep = malloc(levels * ul + 1);
  for (size_t i = 0; i < levels; i++) memcpy(deep + i * ul, unit, ul);
  deep[levels * ul] = '\0';
  parse_err(&tensorflow__structured_value__descriptor, deep, levels * ul, "recursion limit of 100");
  /* Just inside the limit is fine. */
  size_t ok_levels = 49;
  char *ok = malloc(ok_levels * (ul + 4) + 1);
  size_t n = 0;
  for (size_t i = 0; i < ok_levels; i++) {
    memcpy(ok + n, unit, ul);
    n += ul;
  }
  for (size_t i = 0; i < ok_levels; i++) {
    memcpy(ok + n, "} } ", 4);
    n += 4;
  }
  ok[n] = '\0';
  ProtobufCMessage *m = parse_ok(&tensorflow__structured_value__descriptor, ok);
  char *out = m ? print_ok(m) : NULL;
  free(out);
  protobuf_c_message_free_unpacked(m, NULL);
  free(ok);
  /* 100000 `a {` at the top level */
  for (size_t i = 0; i < levels; i++) memcpy(deep + i * 3, "a {", 3);
  parse_err(SM_DESC, deep, levels * 3, "no field named \"a\"");
  free(deep);

  /* Every prefix of a valid text: parses or fails with a position, never crashes or leaks. */
  size_t len = strlen(tf_style);
  int failures = 0;
  for (size_t i = 0; i < len; i++) {
    char *copy = malloc(i ? i : 1); /* exact size: ASan catches any read past len */
    memcpy(copy, tf_style, i);
    ProtobufCMessage *pm = NULL;
    sm_status *s = sm_pbtxt_parse(SM_DESC, copy, i, "t.pbtxt", &pm);
    if (s) {
      if (!strstr(sm_status_message(s), "t.pbtxt:")) failures++;
      sm_status_free(s);
    }
    protobuf_c_message_free_unpacked(pm, NULL);
    free(copy);
  }
  CHECK_EQ_INT(failures, 0);
  /* Single-byte corruptions everywhere. */
  static const char subst[] = {'{', '}', '"', '\\', ':', '[', '<', '#', '\n', '-', '0', 'x', '\0', '\x80'};
  for (size_t i = 0; i < len; i++) {
    for (size_t k = 0; k < sizeof subst; k++) {
      char *copy = malloc(len);
      memcpy(copy, tf_style, len);
      copy[i] = subst[k];
      ProtobufCMessage *pm = NULL;
      sm_status *s = sm_pbtxt_parse(SM_DESC, copy, len, "t.pbtxt", &pm);
      if (!s) {
        char *o = print_ok(pm); /* whatever parsed must print */
        free(o);
      }
      sm_status_free(s);
      protobuf_c_message_free_unpacked(pm, NULL);
      free(copy);
    }
  }
  /* A message built in memory deeper than the limit: the printer and map sorter refuse it. */
  Tensorflow__StructuredValue *top = NULL;
  for (int i = 0; i < 150; i++) {
    Tensorflow__StructuredValue *v = malloc(sizeof *v);
    tensorflow__structured_value__init(v);
    Tensorflow__ListValue *l = malloc(sizeof *l);
    tensorflow__list_value__init(l);
    if (top) {
      l->n_values = 1;
      l->values = malloc(sizeof *l->values);
      l->values[0] = top;
    }
    v->kind_case = TENSORFLOW__STRUCTURED_VALUE__KIND_LIST_VALUE;
    v->list_value = l;
    top = v;
  }
  CHECK_ERR(sm_pbtxt_print(&top->base, &out, NULL), "deeper than 100");
  CHECK(out == NULL);
  CHECK_ERR(sm__pb_sort_maps(&top->base), "deeper than 100");
  protobuf_c_message_free_unpacked(&top->base, NULL);
  /* Bad arguments */
  CHECK_ERR(sm_pbtxt_parse(NULL, "", 0, "x", &m), "bad arguments");
  CHECK_ERR(sm_pbtxt_print(NULL, &out, NULL), "no message");
}

/* ---- round trips over real TensorFlow SavedModels -------------------------------------------- */

static int round_trip_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return 0;
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
  size_t got = fread(data, 1, (size_t)size, fp);
  fclose(fp);
  Tensorflow__SavedModel *orig = tensorflow__saved_model__unpack(NULL, got, data);
  free(data);
  if (!orig) {
    fprintf(stderr, "%s: protobuf-c cannot unpack it\n", path);
    sm_test_failures++;
    return 0;
  }
  char *text = print_ok(&orig->base);
  ProtobufCMessage *back = text ? parse_ok(SM_DESC, text) : NULL;
  if (back) {
    char *again = print_ok(back);
    if (!again || strcmp(again, text) != 0) {
      fprintf(stderr, "%s: print(parse(print(m))) differs from print(m)\n", path);
      sm_test_failures++;
    }
    free(again);
    /* The text has map entries sorted by key; sort the original the same way, then both must
     * serialize to the same bytes. */
    CHECK_OK(sm__pb_sort_maps(&orig->base));
    if (!same_packed(&orig->base, back)) {
      fprintf(stderr, "%s: packed bytes differ after the text round trip\n", path);
      sm_test_failures++;
    }
  }
  protobuf_c_message_free_unpacked(back, NULL);
  free(text);
  tensorflow__saved_model__free_unpacked(orig, NULL);
  return 1;
}

static int walk(const char *dir, int depth) {
  if (depth > 6) return 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) n += walk(path, depth + 1);
    else if (strcmp(e->d_name, "saved_model.pb") == 0) n += round_trip_file(path);
  }
  closedir(d);
  return n;
}

static int test_fixtures(void) {
  const char *dir = SM_SHARED_DIR "/fixtures/tf-serving";
  struct stat st;
  if (stat(dir, &st) != 0) return 0;
  int n = walk(dir, 0);
  CHECK(n >= 10);
  fprintf(stderr, "round-tripped %d SavedModels through text\n", n);
  return 1;
}

int main(void) {
  test_tf_style();
  test_syntax();
  test_any();
  test_numbers();
  test_errors();
  test_hostile();
  if (!test_fixtures()) {
    printf("skipped: " SM_SHARED_DIR "/fixtures/tf-serving absent (fixture round trips)\n");
    if (sm_test_failures == 0) return SM_TEST_SKIP;
  }
  TEST_MAIN_END();
}
