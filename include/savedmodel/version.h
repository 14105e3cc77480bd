/* version.h - the version of the libsavedmodel a program runs against.
 *
 * The number is the CMake project's (CMakeLists.txt `project(savedmodel VERSION ...)`), the same
 * that `savedmodel --version`, the .so's version and savedmodel.pc give. Bindings that load the
 * shared library at run time (the Python package's savedmodel.__version__) read it here. */
#ifndef SAVEDMODEL_VERSION_H
#define SAVEDMODEL_VERSION_H

#include "savedmodel/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH", a static string. */
SM_API const char *sm_version(void);

#ifdef __cplusplus
}
#endif
#endif
