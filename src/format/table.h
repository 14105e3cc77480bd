/* table.h - the SSTable format of variables.index (spec §6): a reader over bytes in memory
 * (usually a mapped file) and a writer that produces the bytes TensorFlow's TableBuilder does.
 *
 * Keys and values are byte strings; keys are in unsigned bytewise order and unique. Every block
 * checksum is verified when the block is read; errors name the file and the block offset. */
#ifndef SM_FORMAT_TABLE_H
#define SM_FORMAT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"

typedef struct sm_table sm_table;

/* Parses the footer and the index block of the table in data[0..size). `name` (copied) is used
 * in error messages. The bytes are borrowed: they must outlive the table and its iterators. */
sm_status *sm__table_open(const char *name, const uint8_t *data, size_t size, sm_table **out);
void sm__table_free(sm_table *t); /* NULL-safe */
size_t sm__table_num_blocks(const sm_table *t);

/* A cursor over the entries. Key and value pointers stay valid until the cursor moves. Moving
 * past the last entry leaves it not valid; any damage found while moving is returned and also
 * leaves it not valid. */
typedef struct sm_table_iter sm_table_iter;
sm_status *sm__table_iter_new(const sm_table *t, sm_table_iter **out);
void sm__table_iter_free(sm_table_iter *it); /* NULL-safe */
sm_status *sm__table_iter_first(sm_table_iter *it);
/* Positions at the first entry whose key is >= key. */
sm_status *sm__table_iter_seek(sm_table_iter *it, const void *key, size_t klen);
sm_status *sm__table_iter_next(sm_table_iter *it);
int sm__table_iter_valid(const sm_table_iter *it);
const uint8_t *sm__table_iter_key(const sm_table_iter *it, size_t *len);
const uint8_t *sm__table_iter_value(const sm_table_iter *it, size_t *len);

/* The value of exactly `key`, copied into a malloc'ed buffer the caller frees (NUL-terminated
 * for convenience, *vlen excludes it). SM_NOT_FOUND when absent. */
sm_status *sm__table_get(const sm_table *t, const void *key, size_t klen, uint8_t **value, size_t *vlen);

/* ---- writer ---------------------------------------------------------------------------------- */

#define SM_TABLE_BLOCK_SIZE 262144
#define SM_TABLE_RESTART_INTERVAL 16

typedef struct sm_table_builder sm_table_builder;

/* A builder with TensorFlow's bundle options: block size 262144, restart interval 16 (1 in the
 * index block), no compression. The table is built in memory. */
sm_status *sm__table_builder_new(sm_table_builder **out);
/* For tests: smaller blocks and restart intervals exercise multi-block tables. */
void sm__table_builder_set_options(sm_table_builder *b, size_t block_size, int restart_interval);
/* Keys must be strictly increasing (bytewise). */
sm_status *sm__table_builder_add(sm_table_builder *b, const void *key, size_t klen, const void *value,
                                size_t vlen);
/* Finishes the table: *out (malloc'ed, caller frees) receives the whole file. The builder can only
 * be freed afterwards. */
sm_status *sm__table_builder_finish(sm_table_builder *b, uint8_t **out, size_t *len);
void sm__table_builder_free(sm_table_builder *b); /* NULL-safe */

/* Varint helpers shared with the bundle code. get_* return the byte after the varint, or NULL
 * when it is truncated or too long. */
const uint8_t *sm__get_varint32(const uint8_t *p, const uint8_t *limit, uint32_t *v);
const uint8_t *sm__get_varint64(const uint8_t *p, const uint8_t *limit, uint64_t *v);
/* Writes v as a varint into buf (at least 10 bytes); returns the number of bytes written. */
size_t sm__put_varint64(uint8_t *buf, uint64_t v);

#endif
