/* print_value.h - tensor values printed the way Python prints numpy arrays. */
#ifndef SM_CLI_PRINT_VALUE_H
#define SM_CLI_PRINT_VALUE_H

#include <stdio.h>

#include "savedmodel/tensor.h"

/* print(np_array) with numpy's default print options (linewidth 75, precision 8, threshold 1000,
 * edgeitems 3): "[[1. 2.]\n [3. 4.]]", "0.5", "b'foo'". Ends with a newline. */
void sm__cli_print_numpy(FILE *f, const sm_tensor *t);

/* The value as JSON: nested arrays of numbers (shortest digits that read back to the same
 * value of the tensor's type; non-finite as "nan", "inf", "-inf"; complex as [re, im]), booleans,
 * or strings (UTF-8 ones as JSON strings, others as {"base64": ...}). A DT_VARIANT value (in memory
 * only) prints as a note naming it, in both printers: "<DT_VARIANT value of shape []: not printable>". */
void sm__cli_print_json_value(FILE *f, const sm_tensor *t);

#endif
