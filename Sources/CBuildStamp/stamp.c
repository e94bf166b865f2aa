// The commit is compiled in, never read at run time: scripts/build-stamp.sh writes
// generated/commit.h (ignored by git) before every build of the Makefile, and touches this
// file when it does, so the object is rebuilt even where the header first appeared after it.
#include "CBuildStamp.h"

#if __has_include("generated/commit.h")
#include "generated/commit.h"
#endif

#ifndef MEDIAROUTE_COMMIT
#define MEDIAROUTE_COMMIT "unknown"
#endif

const char *mediaroute_build_commit(void) { return MEDIAROUTE_COMMIT; }
