/* compat_internal.h - what the files of src/compat share: the opaque TF_* structs and the helpers
 * that move errors and tensors between TensorFlow's C API and libsavedmodel's.
 *
 * tf_core.c owns TF_Status, TF_Buffer, TF_Tensor and TF_TString; tf_graph.c owns TF_Graph and
 * TF_Operation (a read-only view of the loaded MetaGraphDef's GraphDef); tf_session.c owns
 * TF_SessionOptions and TF_Session (an sm_model). */
#ifndef SM_COMPAT_INTERNAL_H
#define SM_COMPAT_INTERNAL_H
#include <pthread.h>

#include "compat/tf_c_api.h"
#include "savedmodel/format.h"
#include "savedmodel/model.h"

struct TSL_Status {
  TF_Code code;
  char *msg; /* NULL = "" */
};

/* How a TF_Tensor's buffer goes away. */
enum { SM_TFT_USER, SM_TFT_ALLOCATED, SM_TFT_MODEL };
struct TF_Tensor {
  TF_DataType dtype;
  int ndims;
  int64_t *dims;
  void *data;
  size_t len;
  int kind;
  void (*dealloc)(void *data, size_t len, void *arg); /* SM_TFT_USER: the caller's deallocator */
  void *arg;    /* SM_TFT_USER: its argument; SM_TFT_MODEL: the sm_tensor the data belongs to */
  void *block;  /* SM_TFT_ALLOCATED: the sm__alloc block data is aligned inside */
};

struct TF_Operation {
  TF_Graph *graph;
  const Tensorflow__NodeDef *node;
  int noutputs;
  int *out_types;  /* noutputs dtypes (TF's numbers, ref types as base + 100) */
  int ninputs;     /* data inputs (not "^control") */
  int *in_types;   /* ninputs dtypes, from the OpDef's input args (-1 when unknown) */
};

struct TF_Graph {
  pthread_mutex_t mu;
  Tensorflow__SavedModel *sm; /* owns every NodeDef the operations point to */
  const Tensorflow__MetaGraphDef *mg;
  TF_Operation *ops; /* in GraphDef order */
  size_t nops;
  size_t *by_name;   /* indices into ops, sorted by node name */
  int sessions;      /* sessions loaded into this graph and not deleted yet */
  int deleted;       /* TF_DeleteGraph was called: freed when the last session goes */
};

/* Sets s (NULL-safe) to code and a printf-style message. */
void sm__tf_set(TF_Status *s, TF_Code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sm__tf_ok(TF_Status *s);
/* Moves an sm_status into s (TensorFlow's code for it, the message as it is) and frees it.
 * Returns 1 when e was an error. */
int sm__tf_from_sm(TF_Status *s, sm_status *e);
/* TensorFlow's DataTypeString: "float", "int32", "string", "float_ref". */
const char *sm__tf_type_name(int dtype, char *buf, size_t cap);

/* A feed's sm_tensor: fixed-size elements are borrowed (the TF_Tensor must outlive it), string
 * elements copied out of their TF_TStrings. */
sm_status *sm__tf_to_sm(const TF_Tensor *t, sm_tensor **out);
/* A run's output as a TF_Tensor: fixed-size elements stay in the sm_tensor (which the TF_Tensor
 * takes over), strings become TF_TStrings. t is consumed, also on failure. */
sm_status *sm__tf_from_sm_tensor(sm_tensor *t, TF_Tensor **out);

/* tf_graph.c: fills an empty graph from a SavedModel (taking sm over, also on failure) and the
 * MetaGraphDef of it that was loaded. */
sm_status *sm__tf_graph_fill(TF_Graph *g, Tensorflow__SavedModel *sm, const Tensorflow__MetaGraphDef *mg);
/* TensorFlow's check of an output a call names: an operation, and an index below its output count
 * (OUT_OF_RANGE "Node 'y' (type: 'Identity', num of outputs: 1) does not have output 3"). 0 = refused. */
int sm__tf_check_output(TF_Output o, TF_Status *s);
/* A session was created on / deleted from g: the graph lives until the last of it and TF_DeleteGraph. */
void sm__tf_graph_attach(TF_Graph *g);
void sm__tf_graph_detach(TF_Graph *g);

#endif
