#ifndef MEDIAROUTE_CSBC_SHIM_H
#define MEDIAROUTE_CSBC_SHIM_H
#include <sys/types.h>
#include <sbc/sbc.h>
static const unsigned long MR_SBC_LE = SBC_LE;
#endif
