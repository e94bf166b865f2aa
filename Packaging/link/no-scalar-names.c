/*
 * The Swift runtime keeps the name of every Unicode scalar ("LATIN SMALL LETTER A",
 * 550 KB of tables: 168 KB of squashfs-xz) for `Unicode.Scalar.Properties.name` and
 * `.nameAlias`. Nothing in MediaRoute asks for a scalar's name (no regex uses \N{…}, and
 * the daemon's text is never analysed by character name); the stdlib's own code reaches the
 * tables only through these two functions. The link wraps them (--wrap) to these answers,
 * "no name", as the runtime gives for a scalar that has none: the originals and their
 * tables are then unreferenced and dropped by --gc-sections (scripts/release-smoke.sh checks
 * that they are gone). Should code ever ask, it gets nil, which the API allows for any scalar.
 */
#include <stdint.h>

intptr_t __wrap__swift_stdlib_getScalarName(uint32_t scalar, uint8_t *name, intptr_t capacity)
{
    (void)scalar;
    (void)name;
    (void)capacity;
    return 0;
}

const uint8_t *__wrap__swift_stdlib_getNameAlias(uint32_t scalar)
{
    (void)scalar;
    return 0;
}
