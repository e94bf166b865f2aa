#ifndef MEDIAROUTE_CEXPAT_SHIM_H
#define MEDIAROUTE_CEXPAT_SHIM_H
#include <expat.h>
#endif
