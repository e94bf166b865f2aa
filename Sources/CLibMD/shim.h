#ifndef MEDIAROUTE_CLIBMD_SHIM_H
#define MEDIAROUTE_CLIBMD_SHIM_H
/* libmd's MD5 (RFC 1321), for the digest authentication AirPlay receivers ask for. */
#include <sys/types.h>
#include <stdint.h>
#include <md5.h>
#endif
