/* pbtxt.c - placeholder until the text format lands (being written now). */
#include "savedmodel/pbtxt.h"

sm_status *sm_pbtxt_print(const ProtobufCMessage *msg, char **out, size_t *len) {
  (void)msg;
  *out = NULL;
  *len = 0;
  return sm_status_new(SM_UNIMPLEMENTED, "pbtxt printing is not implemented yet");
}

sm_status *sm_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                          const char *what, ProtobufCMessage **out) {
  (void)desc;
  (void)text;
  (void)len;
  *out = NULL;
  return sm_status_new(SM_UNIMPLEMENTED, "%s: pbtxt parsing is not implemented yet", what);
}
