/* version.c - sm_version(): the library's version, given by CMake (SM_VERSION_STRING). */
#include "savedmodel/version.h"

#ifndef SM_VERSION_STRING
#error "SM_VERSION_STRING is defined by CMakeLists.txt (the project's VERSION)"
#endif

const char *sm_version(void) { return SM_VERSION_STRING; }
