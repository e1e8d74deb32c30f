/*
 * Base64 (RFC 4648), the one implementation: the github plugin encodes
 * blobs and files with it, the worker decodes what GitHub's contents API
 * returns, and the fake GitHub server and its tests use both. libc only.
 */
#ifndef SL_BASE64_H
#define SL_BASE64_H

#include <stddef.h>

/*
 * `n` bytes as base64 (caller frees), a newline after every `wrap`
 * characters and at the end when `wrap` > 0 (GitHub wraps at 60); NULL
 * when out of memory.
 */
char *sl_b64_encode(const unsigned char *p, size_t n, int wrap);

/*
 * Decode `s`, skipping whitespace and accepting the URL-safe alphabet
 * too ('-', '_'). The bytes (caller frees, NUL-terminated, *n of them),
 * or NULL when `s` is not base64 (a stray character, data after the
 * padding) or memory ran out.
 */
unsigned char *sl_b64_decode(const char *s, size_t *n);

#endif
