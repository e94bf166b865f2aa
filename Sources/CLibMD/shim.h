#ifndef MEDIAROUTE_CLIBMD_SHIM_H
#define MEDIAROUTE_CLIBMD_SHIM_H
/* libmd's MD5 (RFC 1321), for the digest authentication AirPlay receivers ask for, and
   SHA-256 (FIPS 180-4), for the HMAC that authenticates boxes of one household. */
#include <sys/types.h>
#include <stdint.h>
#include <md5.h>
#include <sha2.h>
#endif
