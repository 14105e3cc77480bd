/* api.h - SM_API, the mark of what libsavedmodel.so exports.
 *
 * The library is compiled with -fvisibility=hidden: a function or object is exported from the
 * shared library only when its declaration says SM_API, and every declaration in
 * include/savedmodel/ says it (internal functions, sm__* and layer-private sm_*, and protobuf-c's
 * generated tensorflow__* code stay inside). tests/cli/exports.sh checks that the .so exports
 * exactly the names these headers declare. The static library is unaffected. */
#ifndef SAVEDMODEL_API_H
#define SAVEDMODEL_API_H

#if defined(__GNUC__) || defined(__clang__)
#define SM_API __attribute__((visibility("default")))
#else
#define SM_API
#endif

#endif
