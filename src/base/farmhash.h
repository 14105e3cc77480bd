/* farmhash.h - FarmHash's Fingerprint64 and TensorFlow's FingerprintCat64 (farmhash.c): the
 * fingerprints fingerprint.pb stores and StringToHashBucketFast buckets strings by. */
#ifndef SM_BASE_FARMHASH_H
#define SM_BASE_FARMHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t sm__fingerprint64(const void *data, size_t len);
uint64_t sm__fingerprint_cat64(uint64_t a, uint64_t b);

#endif
