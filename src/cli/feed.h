/* feed.h - turning `savedmodel run` inputs into tensors of the signature's dtypes.
 *
 * saved_model_cli hands every value to Session.run, which converts it with
 * np.asarray(value, dtype=placeholder dtype): Python literals go through int()/float() element by
 * element (out-of-range ints are errors, floats truncate, strings are parsed), while numpy arrays
 * from .npy files are cast as ndarray.astype does (wrapping, C-style truncation). Both are here. */
#ifndef SM_CLI_FEED_H
#define SM_CLI_FEED_H

#include "cli/pyliteral.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

/* np.asarray(literal, dtype): nested lists/tuples become dimensions (ragged ones are an error).
 * `what` names the input in messages. The caller owns *out. */
sm_status *sm__cli_literal_to_tensor(const py_value *v, int dtype, const char *what, sm_tensor **out);

/* np.asarray(array, dtype) for an array read from a file: *out is a new reference to t when the
 * dtype already matches, else a converted copy. The caller owns *out. */
sm_status *sm__cli_cast_tensor(sm_tensor *t, int dtype, const char *what, sm_tensor **out);

/* --input_examples: a list of dicts {feature: [values]} -> 1-D DT_STRING tensor of serialized
 * tf.Example, typed by each list's first element as _create_example_string does. */
sm_status *sm__cli_examples_to_tensor(const py_value *v, const char *what, sm_tensor **out);

#endif
