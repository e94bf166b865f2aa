#ifndef MEDIAROUTE_BUILD_STAMP_H
#define MEDIAROUTE_BUILD_STAMP_H

/// The git commit this binary was built from ("unknown" when built outside a git checkout
/// without MEDIAROUTE_COMMIT), stamped at build time by scripts/build-stamp.sh.
const char *mediaroute_build_commit(void);

#endif
