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

/* Every file the library and the CLI read is opened through sm__file_open_regular: O_NONBLOCK (so
 * opening a FIFO or a device never blocks), then fstat, and only a regular file of at most
 * max_bytes is accepted (a FIFO, /dev/zero, a directory or a socket is refused with a message
 * naming what it is; a larger file with SM_OUT_OF_RANGE naming the limit). *fd is a blocking
 * descriptor the caller closes. */
sm_status *sm__file_open_regular(const char *path, uint64_t max_bytes, int *fd, uint64_t *size);

/* Maps a regular file (no size limit: a map costs address space, not memory). */
sm_status *sm__file_map_open(const char *path, sm_file_map *m);
/* The same, refusing a file larger than max_bytes. */
sm_status *sm__file_map_open_max(const char *path, uint64_t max_bytes, sm_file_map *m);
void sm__file_map_close(sm_file_map *m);
/* Gives back the resident pages wholly inside [p, p + n), memory of a read-only file mapping
 * (sm__file_map_open with mapped 1, never anything else): the process's resident set shrinks by
 * them, and the next read faults them in again from the file (the page cache), same bytes. A
 * checkpoint is read whole at load (its checksums), and a weight that a kernel only uses through
 * a folded or packed copy need not stay resident a second time. Best effort (madvise). */
void sm__file_map_drop_pages(const void *p, size_t n);

/* The most sm__file_read_all reads into memory (2 GiB, protobuf's own limit for a message). */
#define SM_FILE_READ_MAX ((uint64_t)2 << 30)

/* Reads a whole regular file into a malloc'ed buffer (NUL-terminated for convenience; *len
 * excludes it), refusing one of more than SM_FILE_READ_MAX bytes. */
sm_status *sm__file_read_all(const char *path, char **out, size_t *len);
/* The same with the caller's limit (e.g. a vocabulary file, a labels asset). */
sm_status *sm__file_read_max(const char *path, uint64_t max_bytes, char **out, size_t *len);

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

/* Staging directories are named PREFIX + the pid of the process writing them (".tmp-NAME-1234"),
 * next to their target in parent. Removes those a killed process left: PREFIX followed by a pid
 * only (digits, no other text) that is no process any more (kill(pid, 0) fails with ESRCH). A
 * live process's, this one's included, is never touched (EPERM: alive, someone else's). */
void sm__remove_stale_staging(const char *parent, const char *prefix);

#endif
