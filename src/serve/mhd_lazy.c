/* mhd_lazy.c - the libmicrohttpd functions the server calls, bound with dlopen when the first
 * daemon starts. Why: Debian's libmicrohttpd pulls in GnuTLS (with p11-kit, nettle, gmp, libidn2,
 * libunistring, libtasn1), whose constructors and relocations cost every run of the CLI - `show`
 * and `run` included - over 2 MiB of resident memory and much of its start-up, though only
 * `savedmodel serve` listens.
 *
 * The forwarders carry microhttpd.h's names and prototypes (the compiler checks them against the
 * header), hidden so that a host program's own libmicrohttpd is not interposed. The server
 * calls MHD_start_daemon first: without the library (a broken install) it returns NULL, which
 * the server reports as unable to listen; nothing else can be reached without a daemon. A new
 * MHD_* call in src/serve needs its forwarder here (the link fails until it has one). */
#include <dlfcn.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

#include "base/lazylib.h"

#ifndef SM_MHD_SONAME
#define SM_MHD_SONAME "libmicrohttpd.so.12"
#endif

static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static struct {
  struct MHD_Daemon *(*start_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                 MHD_AccessHandlerCallback, void *, va_list);
  MHD_socket (*quiesce)(struct MHD_Daemon *);
  void (*stop)(struct MHD_Daemon *);
  const union MHD_DaemonInfo *(*info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
  const char *(*lookup)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
  enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
  struct MHD_Response *(*from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
  void (*destroy)(struct MHD_Response *);
  enum MHD_Result (*add_header)(struct MHD_Response *, const char *, const char *);
  const union MHD_ConnectionInfo *(*conn_info)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
  int (*values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);
  void (*suspend)(struct MHD_Connection *);
  void (*resume)(struct MHD_Connection *);
} mhd;

#define BIND(h, field, name) SM_BIND(h, mhd.field, name)

static void mhd_load(void) {
  void *h = dlopen(SM_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
  BIND(h, start_va, "MHD_start_daemon_va");
  BIND(h, quiesce, "MHD_quiesce_daemon");
  BIND(h, stop, "MHD_stop_daemon");
  BIND(h, info, "MHD_get_daemon_info");
  BIND(h, lookup, "MHD_lookup_connection_value");
  BIND(h, queue, "MHD_queue_response");
  BIND(h, from_buffer, "MHD_create_response_from_buffer");
  BIND(h, destroy, "MHD_destroy_response");
  BIND(h, add_header, "MHD_add_response_header");
  BIND(h, conn_info, "MHD_get_connection_info");
  BIND(h, values, "MHD_get_connection_values");
  BIND(h, suspend, "MHD_suspend_connection");
  BIND(h, resume, "MHD_resume_connection");
  /* All or nothing: a daemon must not start if a later call would find no function. */
  if (!mhd.quiesce || !mhd.stop || !mhd.info || !mhd.lookup || !mhd.queue || !mhd.from_buffer || !mhd.destroy ||
      !mhd.add_header || !mhd.conn_info || !mhd.values ||
      !mhd.suspend || !mhd.resume)
    mhd.start_va = NULL;
}

SM_HIDDEN struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                              void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...) {
  pthread_once(&mhd_once, mhd_load);
  if (!mhd.start_va) return NULL;
  va_list ap;
  va_start(ap, dh_cls);
  struct MHD_Daemon *d = mhd.start_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
  va_end(ap);
  return d;
}

/* The calls below only happen with a daemon, so after a successful load. */
SM_HIDDEN MHD_socket MHD_quiesce_daemon(struct MHD_Daemon *daemon) { return mhd.quiesce(daemon); }
SM_HIDDEN void MHD_stop_daemon(struct MHD_Daemon *daemon) {
  if (mhd.stop) mhd.stop(daemon);
}

/* The info types the server asks for take no further arguments. */
SM_HIDDEN const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                          enum MHD_DaemonInfoType info_type, ...) {
  return mhd.info(daemon, info_type);
}

SM_HIDDEN const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                                  const char *key) {
  return mhd.lookup(connection, kind, key);
}

SM_HIDDEN enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                             struct MHD_Response *response) {
  return mhd.queue(connection, status_code, response);
}

SM_HIDDEN struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                               enum MHD_ResponseMemoryMode mode) {
  return mhd.from_buffer(size, buffer, mode);
}

SM_HIDDEN void MHD_destroy_response(struct MHD_Response *response) { mhd.destroy(response); }

SM_HIDDEN enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                                  const char *content) {
  return mhd.add_header(response, header, content);
}

/* The connection info types the server asks for take no further arguments. */
SM_HIDDEN const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                                  enum MHD_ConnectionInfoType info_type, ...) {
  return mhd.conn_info(connection, info_type);
}

SM_HIDDEN int MHD_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        MHD_KeyValueIterator iterator, void *iterator_cls) {
  return mhd.values(connection, kind, iterator, iterator_cls);
}

SM_HIDDEN void MHD_suspend_connection(struct MHD_Connection *connection) { mhd.suspend(connection); }

SM_HIDDEN void MHD_resume_connection(struct MHD_Connection *connection) { mhd.resume(connection); }
