// tests/fs_shim.cpp — an LD_PRELOAD library that makes `attn run --out` meet filesystems and events
// this machine does not have on demand. Each behaviour is asked for by an environment variable:
//
//   ATTN_SHIM_NO_EXCHANGE=1   renameat2 with a flag fails with EINVAL, as on NFS, vfat and many
//                             FUSE filesystems (no RENAME_EXCHANGE, no RENAME_NOREPLACE)
//   ATTN_SHIM_NO_LINK=1       linkat fails with EPERM, as on vfat (no hard links)
//   ATTN_SHIM_WATCH=PATH      after every rename, check that PATH exists; if it does not, append a
//   ATTN_SHIM_LOG=FILE        line to FILE (a reader polling PATH would have found nothing)
//   ATTN_SHIM_FAIL_TO=NAME    a rename whose destination is named NAME fails with EACCES
//   ATTN_SHIM_SWAP_DIR=DIR    before the first rename, DIR is renamed to DIR.moved and replaced by
//                             a symlink to DIR.elsewhere (which the test made)
//
// Used by tests/test_cli_limits.cpp; built as a shared module by tests/meson.build.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

namespace {

template <class F>
F real(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

bool asked(const char* variable) {
    const char* v = getenv(variable);
    return v && *v;
}

const char* last_component(const char* path) {
    const char* slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// Before a rename: the directory swap, once. After it: the watch.
void before_rename() {
    static bool swapped = false;
    const char* dir = getenv("ATTN_SHIM_SWAP_DIR");
    if (swapped || !dir || !*dir) return;
    swapped = true;
    using Rename = int (*)(const char*, const char*);
    const std::string moved = std::string(dir) + ".moved", elsewhere = std::string(dir) + ".elsewhere";
    if (real<Rename>("rename")(dir, moved.c_str()) != 0 || symlink(elsewhere.c_str(), dir) != 0)
        fprintf(stderr, "fs_shim: could not swap %s for a symlink\n", dir);
}

int after_rename(int result) {
    const int saved = errno;
    const char* watched = getenv("ATTN_SHIM_WATCH");
    const char* log = getenv("ATTN_SHIM_LOG");
    if (watched && *watched && log && *log && access(watched, F_OK) != 0) {
        if (FILE* f = fopen(log, "a")) {
            fprintf(f, "%s was missing after a rename\n", watched);
            fclose(f);
        }
    }
    errno = saved;
    return result;
}

bool refused(const char* to) {
    const char* name = getenv("ATTN_SHIM_FAIL_TO");
    if (!name || !*name || strcmp(last_component(to), name) != 0) return false;
    errno = EACCES;
    return true;
}

}  // namespace

extern "C" {

int renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, unsigned int flags) {
    before_rename();
    if (flags != 0 && asked("ATTN_SHIM_NO_EXCHANGE")) {
        errno = EINVAL;
        return -1;
    }
    if (refused(newpath)) return -1;
    using Renameat2 = int (*)(int, const char*, int, const char*, unsigned int);
    return after_rename(real<Renameat2>("renameat2")(olddirfd, oldpath, newdirfd, newpath, flags));
}

int renameat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
    before_rename();
    if (refused(newpath)) return -1;
    using Renameat = int (*)(int, const char*, int, const char*);
    return after_rename(real<Renameat>("renameat")(olddirfd, oldpath, newdirfd, newpath));
}

int rename(const char* oldpath, const char* newpath) {
    before_rename();
    if (refused(newpath)) return -1;
    using Rename = int (*)(const char*, const char*);
    return after_rename(real<Rename>("rename")(oldpath, newpath));
}

int linkat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
    if (asked("ATTN_SHIM_NO_LINK")) {
        errno = EPERM;
        return -1;
    }
    using Linkat = int (*)(int, const char*, int, const char*, int);
    return real<Linkat>("linkat")(olddirfd, oldpath, newdirfd, newpath, flags);
}

}  // extern "C"
