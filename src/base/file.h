/* file.h - whole-file access for the format layer: map read-only, or write atomically. */
#ifndef SM_BASE_FILE_H
#define SM_BASE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"

/* A read-only view of a whole file: mmap'ed when possible (zero copies for large tensors). */
typedef struct sm_file_map {
  const uint8_t *data;
  size_t size;
  int mapped; /* 1: munmap on close; 0: malloc'ed (empty files, or mmap unavailable) */
} sm_file_map;

sm_status *sm__file_map_open(const char *path, sm_file_map *m);
void sm__file_map_close(sm_file_map *m);

/* Reads a whole file into a malloc'ed buffer (NUL-terminated for convenience; *len excludes it). */
sm_status *sm__file_read_all(const char *path, char **out, size_t *len);

/* Writes `len` bytes to path via a temporary file in the same directory, fsync, rename: readers
 * never see a half-written file. */
sm_status *sm__file_write_atomic(const char *path, const void *data, size_t len);

/* 1 if path exists (any type), 0 otherwise. */
int sm__path_exists(const char *path);
int sm__is_dir(const char *path);

/* Creates every missing parent directory of path (`mkdir -p` of its dirname), as Keras and TF do
 * for an export directory; path itself is not created. Fails naming the directory it could not
 * create, or the component that exists but is not a directory. */
sm_status *sm__make_parents(const char *path);

/* malloc'ed "a/b" (one slash between, none doubled); NULL on out of memory. */
char *sm__path_join(const char *a, const char *b);

/* Deletes a directory tree this library created (a staging dir of an export that failed), best
 * effort: symlinks are removed, never followed. */
void sm__remove_tree(const char *path);

#endif
