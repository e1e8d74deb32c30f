/*
 * Relaying one byte stream each way between two connected sockets until
 * both directions end: the local provider's egress proxy (host threads)
 * and sbxloop-worker's bridge (in the sandbox) share it. Libc only.
 */
#ifndef SBXLOOP_RELAY_H
#define SBXLOOP_RELAY_H

#include <stddef.h>

/*
 * Copy a -> b and b -> a until each side has sent its end of stream
 * (passed on as a shutdown(SHUT_WR) of the other) or either fails.
 * `a_head` (may be NULL) is written to b first: bytes already read from
 * a. Both fds are made non-blocking and stay open (the caller closes
 * them). Another thread may shutdown(fd, SHUT_RDWR) either to end the
 * relay early. Returns 0 when both directions ended cleanly, else -1.
 * `bytes` (may be NULL) gets the bytes moved a -> b and b -> a.
 */
int sl_relay(int a, int b, const char *a_head, size_t a_head_len,
	     unsigned long long bytes[2]);

#endif
