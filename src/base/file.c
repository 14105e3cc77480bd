/* file.c - reading files (regular files only, O_NONBLOCK + fstat, size limits), mapping them, and
 * writing them atomically; staging trees (removal, stale ones of dead processes). */
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens path for reading only when it is a regular file: O_NONBLOCK so that opening a FIFO (or a
 * device) cannot block, then fstat; anything else is refused before a byte is read. The size must
 * be at most max_bytes. */
sm_status *sm__file_open_regular(const char *path, uint64_t max_bytes, int *fd_out, uint64_t *size) {
  *fd_out = -1;
  *size = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return sm_status_new(errno == ENOENT ? SM_NOT_FOUND : SM_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return sm_status_new(SM_IO, "%s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    const char *what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: not a regular file (%s); only regular files are read", path, what);
  }
  if (st.st_size < 0 || (uint64_t)st.st_size > max_bytes) {
    close(fd);
    return sm_status_new(SM_OUT_OF_RANGE, "%s: %lld bytes, more than the %llu-byte limit for this file", path,
                         (long long)st.st_size, (unsigned long long)max_bytes);
  }
  /* reads block as usual from here: a regular file never blocks on O_NONBLOCK anyway */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *fd_out = fd;
  *size = (uint64_t)st.st_size;
  return NULL;
}

static sm_status *read_fd(const char *path, int fd, uint64_t size, uint64_t max_bytes, char **out, size_t *len);

sm_status *sm__file_map_open_max(const char *path, uint64_t max_bytes, sm_file_map *m) {
  memset(m, 0, sizeof *m);
  int fd;
  uint64_t size;
  sm_status *s = sm__file_open_regular(path, max_bytes, &fd, &size);
  if (s) return s;
  if (size == 0 || size > SIZE_MAX) {
    /* mmap of length 0 fails; an empty file is a valid (if useless) input for the caller to judge. */
    close(fd);
    if (size) return sm_status_new(SM_OUT_OF_RANGE, "%s: too large to map", path);
    m->data = calloc(1, 1);
    if (!m->data) return sm_status_new(SM_NO_MEMORY, "out of memory");
    m->size = 0;
    return NULL;
  }
  void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    /* Fall back to reading: some file systems cannot map. */
    char *buf;
    size_t len;
    s = read_fd(path, fd, size, max_bytes, &buf, &len);
    close(fd);
    if (s) return s;
    m->data = (const uint8_t *)buf;
    m->size = len;
    return NULL;
  }
  close(fd);
  m->data = p;
  m->size = (size_t)size;
  m->mapped = 1;
  return NULL;
}

void sm__file_map_drop_pages(const void *p, size_t n) {
  long ps = sysconf(_SC_PAGESIZE);
  if (!p || ps <= 0) return;
  uintptr_t a = (uintptr_t)p, e = a + n, page = (uintptr_t)ps;
  uintptr_t b = (a + page - 1) & ~(page - 1), f = e & ~(page - 1);
  /* MADV_DONTNEED on a private read-only file mapping drops the page table entries only; the
   * pages were never written (PROT_READ), so nothing but residency is lost */
  if (f > b) (void)madvise((void *)b, f - b, MADV_DONTNEED);
}

sm_status *sm__file_map_open(const char *path, sm_file_map *m) {
  return sm__file_map_open_max(path, UINT64_MAX, m);
}

void sm__file_map_close(sm_file_map *m) {
  if (!m || !m->data) return;
  if (m->mapped)
    munmap((void *)m->data, m->size);
  else
    free((void *)m->data);
  memset(m, 0, sizeof *m);
}

/* Reads an open regular file of `size` bytes (it may grow or shrink meanwhile: never past
 * max_bytes). */
static sm_status *read_fd(const char *path, int fd, uint64_t size, uint64_t max_bytes, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  size_t cap = size < 4096 ? 4096 : (size_t)size + 1, n = 0;
  char *buf = malloc(cap);
  if (!buf) return sm_status_new(SM_NO_MEMORY, "out of memory reading %s", path);
  for (;;) {
    if (n + 1 >= cap) {
      if (n >= max_bytes) {
        free(buf);
        return sm_status_new(SM_OUT_OF_RANGE, "%s: more than the %llu-byte limit for this file", path,
                             (unsigned long long)max_bytes);
      }
      char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        return sm_status_new(SM_NO_MEMORY, "out of memory reading %s", path);
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + n, cap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      return sm_status_new(SM_IO, "%s: read error (%s)", path, strerror(e));
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  if (n > max_bytes) {
    free(buf);
    return sm_status_new(SM_OUT_OF_RANGE, "%s: more than the %llu-byte limit for this file", path,
                         (unsigned long long)max_bytes);
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  return NULL;
}

sm_status *sm__file_read_max(const char *path, uint64_t max_bytes, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  int fd;
  uint64_t size;
  sm_status *s = sm__file_open_regular(path, max_bytes, &fd, &size);
  if (s) return s;
  s = read_fd(path, fd, size, max_bytes, out, len);
  close(fd);
  return s;
}

sm_status *sm__file_read_all(const char *path, char **out, size_t *len) {
  return sm__file_read_max(path, SM_FILE_READ_MAX, out, len);
}

sm_status *sm__file_write_atomic(const char *path, const void *data, size_t len) {
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 32);
  if (!tmp) return sm_status_new(SM_NO_MEMORY, "out of memory");
  snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    sm_status *s = sm_status_new(SM_IO, "%s: %s", tmp, strerror(errno));
    free(tmp);
    return s;
  }
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      sm_status *s = sm_status_new(SM_IO, "writing %s: %s", path, strerror(errno));
      close(fd);
      unlink(tmp);
      free(tmp);
      return s;
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    sm_status *s = sm_status_new(SM_IO, "writing %s: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return s;
  }
  if (rename(tmp, path) != 0) {
    sm_status *s = sm_status_new(SM_IO, "renaming %s to %s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return s;
  }
  free(tmp);
  return NULL;
}

int sm__path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int sm__is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *sm__path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  while (la > 1 && a[la - 1] == '/') la--;
  char *r = malloc(la + 1 + lb + 1);
  if (!r) return NULL;
  memcpy(r, a, la);
  size_t k = la;
  if (la && a[la - 1] != '/') r[k++] = '/';
  memcpy(r + k, b, lb + 1);
  return r;
}

void sm__remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *p = sm__path_join(path, e->d_name);
      if (!p) continue;
      struct stat st;
      if (!lstat(p, &st) && S_ISDIR(st.st_mode))
        sm__remove_tree(p);
      else
        unlink(p);
      free(p);
    }
    closedir(d);
  }
  rmdir(path);
}

void sm__remove_stale_staging(const char *parent, const char *prefix) {
  size_t pl = strlen(prefix);
  DIR *d = opendir(parent);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, pl)) continue;
    const char *digits = e->d_name + pl;
    char *end;
    errno = 0;
    long long pid = strtoll(digits, &end, 10);
    if (*digits < '1' || *digits > '9' || *end || errno || pid > INT32_MAX || pid == (long long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char *path = sm__path_join(parent, e->d_name);
    struct stat st;
    if (path && !lstat(path, &st) && S_ISDIR(st.st_mode)) sm__remove_tree(path);
    free(path);
  }
  closedir(d);
}

sm_status *sm__make_parents(const char *path) {
  char *p = strdup(path);
  if (!p) return sm_status_new(SM_NO_MEMORY, "%s: out of memory", path);
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0; /* trailing slashes name the same directory */
  char *last = strrchr(p, '/');
  sm_status *s = NULL;
  if (last && last != p) {
    *last = 0; /* p is now the dirname; create it component by component */
    for (char *c = p + 1;; c++) {
      if (*c != '/' && *c != 0) continue;
      char keep = *c;
      *c = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        s = sm_status_new(SM_IO, "%s: cannot create directory %s (%s)", path, p, strerror(errno));
        break;
      }
      if (!sm__is_dir(p)) {
        s = sm_status_new(SM_IO, "%s: %s exists and is not a directory", path, p);
        break;
      }
      *c = keep;
      if (!keep) break;
    }
  }
  free(p);
  return s;
}
