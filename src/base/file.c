/* file.c - mapping files for reading and writing them atomically. */
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

sm_status *sm__file_map_open(const char *path, sm_file_map *m) {
  memset(m, 0, sizeof *m);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sm_status_new(errno == ENOENT ? SM_NOT_FOUND : SM_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return sm_status_new(SM_IO, "%s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return sm_status_new(SM_INVALID_ARGUMENT, "%s: not a regular file", path);
  }
  if (st.st_size == 0) {
    /* mmap of length 0 fails; an empty file is a valid (if useless) input for the caller to judge. */
    close(fd);
    m->data = calloc(1, 1);
    if (!m->data) return sm_status_new(SM_NO_MEMORY, "out of memory");
    m->size = 0;
    return NULL;
  }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    /* Fall back to reading: some file systems cannot map. */
    close(fd);
    char *buf;
    size_t len;
    sm_status *s = sm__file_read_all(path, &buf, &len);
    if (s) return s;
    m->data = (const uint8_t *)buf;
    m->size = len;
    return NULL;
  }
  close(fd);
  m->data = p;
  m->size = (size_t)st.st_size;
  m->mapped = 1;
  return NULL;
}

void sm__file_map_close(sm_file_map *m) {
  if (!m || !m->data) return;
  if (m->mapped)
    munmap((void *)m->data, m->size);
  else
    free((void *)m->data);
  memset(m, 0, sizeof *m);
}

sm_status *sm__file_read_all(const char *path, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return sm_status_new(errno == ENOENT ? SM_NOT_FOUND : SM_IO, "%s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return sm_status_new(SM_NO_MEMORY, "out of memory reading %s", path);
  }
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > ((size_t)1 << 40)) {
        free(buf);
        fclose(f);
        return sm_status_new(SM_OUT_OF_RANGE, "%s: file too large", path);
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        fclose(f);
        return sm_status_new(SM_NO_MEMORY, "out of memory reading %s", path);
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return sm_status_new(SM_IO, "%s: read error", path);
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  return NULL;
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
