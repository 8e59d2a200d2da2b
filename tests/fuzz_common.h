/* fuzz_common.h: shared by the libFuzzer harnesses (tests/fuzz_*.c).
 *
 * The loaders read files, and scenarios name their model and profile by paths relative
 * to their own directory.  fuzz_setup() makes a private work directory holding links to
 * the repository's models/ and calib/ and a subdirectory s/, so that a scenario written
 * to s/in.yaml finds ../models/... and ../calib/... like one in scenarios/ does.
 * fuzz_write() stores one input there and returns its path.  Run from the repository
 * root (after make has created build/fuzz). */
#ifndef PACESIM_FUZZ_COMMON_H
#define PACESIM_FUZZ_COMMON_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[PATH_MAX];

/* name: the harness's work directory, build/fuzz/work-NAME under the repository root
 * (the current directory); reused from run to run. */
static void fuzz_setup(const char *name)
{
    char cwd[PATH_MAX], p[PATH_MAX + 64], t[PATH_MAX + 32];
    if (!getcwd(cwd, sizeof cwd)) abort();
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/build/fuzz/work-%s", cwd, name);
    snprintf(p, sizeof p, "%s/s", fuzz_dir);
    mkdir(fuzz_dir, 0700);
    mkdir(p, 0700);
    static const char *const links[] = { "models", "calib" };
    for (int i = 0; i < 2; i++) {
        snprintf(t, sizeof t, "%s/%s", cwd, links[i]);
        snprintf(p, sizeof p, "%s/%s", fuzz_dir, links[i]);
        unlink(p);
        if (symlink(t, p)) abort();
    }
}

static const char *fuzz_write(const char *name, const unsigned char *data, size_t size)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/s/%s", fuzz_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}

#endif
