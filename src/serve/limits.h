/* limits.h - every limit of `savedmodel serve` in one place: the defaults of its flags and the
 * fixed bounds that have no flag. README "Serving: limits" lists them; keep the two in step. */
#ifndef SM_SERVE_LIMITS_H
#define SM_SERVE_LIMITS_H

/* ---- requests ---- */
/* --max_body_bytes: a larger body is answered 413 before it is read. */
#define SM_SERVE_MAX_BODY_BYTES ((size_t)64 << 20)
/* The JSON DOM of one request: at most FACTOR x its body + FLOOR bytes, or 400 naming the limit.
 * A number in an all-number array costs 9 bytes, any other value 16 (each takes at least 2 bytes
 * of body), a non-empty container 4 more, a level of nesting 16 more while it is read: "[]," costs
 * 5.3 bytes a byte, "0," 4.5, "[0]," 9; only deep nesting comes near the limit (TF Serving's
 * 500,000-deep test body of 1 MB needs 18 MB). */
#define SM_JSON_DOM_FACTOR 12
#define SM_JSON_DOM_FLOOR ((size_t)32 << 20)
/* The DOMs of all requests being decoded at once, together: a request that would take the total
 * past this (and is not alone) is answered 429 RESOURCE_EXHAUSTED, to be retried. */
#define SM_JSON_DOM_BUDGET ((size_t)1 << 30)
/* After a request whose body was at least this large, freed memory goes back to the system
 * (malloc_trim), so RSS does not stay at the peak of one big request. */
#define SM_SERVE_TRIM_AFTER_BYTES ((size_t)1 << 20)

/* ---- connections ---- */
/* --max_connections: open connections in all. When full, a new connection closes the oldest idle
 * keep-alive connection, else the oldest still sending its request header, else is refused. */
#define SM_SERVE_MAX_CONNECTIONS 4096
/* --max_connections_per_client: open connections from one client address (same eviction). */
#define SM_SERVE_MAX_CONNECTIONS_PER_CLIENT 512
/* --header_timeout_seconds: a connection must deliver a whole request header within this many
 * seconds of opening (or of its previous request's end, for a keep-alive connection). */
#define SM_SERVE_HEADER_TIMEOUT_SECONDS 10
/* --idle_timeout_seconds: a connection that does nothing for this long is closed. */
#define SM_SERVE_IDLE_TIMEOUT_SECONDS 60

/* ---- reload ---- */
/* A version directory is loaded only once its files (names, sizes, mtimes) have not changed for
 * this long (seen unchanged by two polls this far apart, or every mtime older than this). */
#define SM_SERVE_SETTLE_SECONDS 1.0
/* A version that failed to load is tried again this many times while its files stay the same
 * (TF Serving's --max_num_load_retries); a change to its files starts it afresh. */
#define SM_SERVE_LOAD_RETRIES 5

#endif
