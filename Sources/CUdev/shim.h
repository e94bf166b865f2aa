#ifndef MEDIAROUTE_CUDEV_SHIM_H
#define MEDIAROUTE_CUDEV_SHIM_H

#include <libudev.h>

#endif
