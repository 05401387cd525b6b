// io/files.cpp — choosing a reader by extension, and writing output files so that a failure
// (a full disk, a rename refused, Ctrl-C) never leaves a partial, new or foreign file behind.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "io/checks.hpp"

namespace attn {

using namespace io_checks;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

// ---- temporaries a signal handler may delete ----------------------------------------------------
//
// A handler may only call async-signal-safe functions (unlink, signal, raise) and read plain data,
// so the names of the files in flight live in fixed slots; an empty slot starts with '\0'.
// (One write at a time: the slots are not shared safely between threads.)
constexpr int slots = 8;
constexpr std::size_t max_path = 4096;
char pending_paths[slots][max_path];

// The signals that end a program and that a user can send it from a terminal or the shell: Ctrl-C,
// Ctrl-\ (quit), kill, a closed terminal.
constexpr int ending_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

void on_signal(int sig) {
    for (auto& path : pending_paths)
        if (path[0] != '\0') ::unlink(path);
    std::signal(sig, SIG_DFL);  // then die of the signal, so the parent sees what happened
    std::raise(sig);
}

// A file this write created: deleted when the object goes, unless keep() said it is in place.
// While it exists, its name sits in a slot for the signal handler.
class PendingFile {
public:
    explicit PendingFile(std::string path) : path_(std::move(path)) {
        for (int k = 0; k < slots && slot_ < 0; ++k) {
            if (pending_paths[k][0] == '\0' && path_.size() < max_path) {
                std::memcpy(pending_paths[k], path_.c_str(), path_.size() + 1);
                slot_ = k;
            }
        }
    }
    PendingFile(const PendingFile&) = delete;
    PendingFile& operator=(const PendingFile&) = delete;
    ~PendingFile() {
        if (slot_ >= 0) pending_paths[slot_][0] = '\0';
        if (!kept_) ::unlink(path_.c_str());
    }
    const std::string& path() const { return path_; }
    void keep() { kept_ = true; }  // renamed into place: no longer ours to delete

private:
    std::string path_;
    int slot_ = -1;
    bool kept_ = false;
};

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string file_name_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// While it lives, the ending signals wait: used where a file exists but is not yet registered for
// the handler, and around the renames, which must not be cut in half.
class SignalsHeld {
public:
    SignalsHeld() {
        sigset_t held;
        sigemptyset(&held);
        for (int sig : ending_signals) sigaddset(&held, sig);
        pthread_sigmask(SIG_BLOCK, &held, &before_);
    }
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;
    ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }

private:
    sigset_t before_;
};

// A new, empty file "<dir>/.<name>.<tag>-XXXXXX" (mkstemp: O_CREAT|O_EXCL, mode 0600), registered
// for the signal handler before any signal can see it; nullptr (errno set) when it cannot be made.
std::unique_ptr<PendingFile> create_unique(const std::string& target, const char* tag, int& fd) {
    std::string pattern = directory_of(target) + "/." + file_name_of(target) + "." + tag + "-XXXXXX";
    const SignalsHeld held;
    fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    return fd < 0 ? nullptr : std::make_unique<PendingFile>(pattern);
}

std::string reason() { return std::strerror(errno); }

// The permissions the new file at `path` gets: those of the file it replaces (mode, and owner and
// group where this process may set them), so a replaced 0600 file stays 0600; for a new file, what
// a plain fopen would give: 0666 less the umask.
bool give_permissions(int fd, const std::string& path) {
    struct stat old {};
    if (::lstat(path.c_str(), &old) == 0) {
        if (::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) return false;  // not ours to give: keep ours
        return ::fchmod(fd, old.st_mode & 0777) == 0;
    }
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return ::fchmod(fd, 0666 & ~mask) == 0;
}

// Writes the .npy bytes of `m` to `fd`, all of them, and makes them durable.
bool write_npy(int fd, const Matrix& m) {
    const std::string header = npy_header(m);
    const auto write_all = [fd](const char* p, std::size_t n) {
        while (n > 0) {
            const ssize_t done = ::write(fd, p, n);
            if (done < 0 && errno == EINTR) continue;
            if (done <= 0) return false;
            p += done;
            n -= static_cast<std::size_t>(done);
        }
        return true;
    };
    return write_all(header.data(), header.size()) &&
           write_all(reinterpret_cast<const char*>(m.data()), m.size() * sizeof(float)) && ::fsync(fd) == 0;
}

// The target may be replaced only if it is absent or a regular file.
void check_replaceable(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        fail(path, "cannot write: " + reason());
    }
    if (S_ISDIR(st.st_mode)) fail(path, "cannot write: a directory of that name is in the way");
    if (!S_ISREG(st.st_mode)) fail(path, "cannot write: it exists and is not a regular file");
}

// An exclusive flock on a directory, held while the object lives (flock on a directory's own
// descriptor: no lock file is left in it). Where the directory cannot be opened or locked (a
// filesystem without flock), writing goes on unlocked: the lock protects against a second run,
// not against the write itself.
class DirectoryLock {
public:
    explicit DirectoryLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (fd_ >= 0)
            while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
    }
    DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;
    ~DirectoryLock() {
        if (fd_ >= 0) ::close(fd_);  // closing releases the lock
    }

private:
    int fd_;
};

std::vector<std::string> distinct_directories(const std::vector<std::pair<std::string, const Matrix*>>& files) {
    std::vector<std::string> dirs;
    for (const auto& [path, matrix] : files) dirs.push_back(directory_of(path));
    std::sort(dirs.begin(), dirs.end());  // always the same order: two writers never wait on each other
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    return dirs;
}

// Swaps the names of two files in one atomic step (Linux renameat2 RENAME_EXCHANGE). False with
// errno set when it failed; errno EINVAL or ENOSYS when the filesystem or system cannot do it.
bool exchange(const std::string& a, const std::string& b) {
#ifdef RENAME_EXCHANGE
    return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
#else
    errno = ENOSYS;
    return false;
#endif
}

// Renames `target` to a fresh name beside it, which `aside` then owns: deleted at the end, or
// renamed back on failure. True when done, or when there was no target; false with `why`.
bool set_aside(const std::string& target, std::unique_ptr<PendingFile>& aside, std::string& why) {
    int fd = -1;  // a fresh name, reserved by creating it
    auto name = create_unique(target, "old", fd);
    if (fd < 0) {
        why = reason();
        return false;
    }
    ::close(fd);
    if (::rename(target.c_str(), name->path().c_str()) == 0) {
        aside = std::move(name);
        return true;
    }
    if (errno == ENOENT) return true;  // no target: nothing to set aside
    why = reason();
    return false;
}

}  // namespace

Matrix read_matrix(const std::string& path, const ReadOptions& options) {
    // Only regular files: a directory has no contents to read, and a FIFO or terminal would block
    // until someone writes to it.
    const bool npy = ends_with(path, ".npy"), csv = ends_with(path, ".csv");
    if (!npy && !csv) fail(path, "unknown file type; use .npy or .csv");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open: " + reason());
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a matrix file");
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file (a FIFO, device or socket); give a .npy or .csv file");
    return npy ? read_npy_file(path, options) : read_csv_file(path, options);
}

void write_npy_files(const std::vector<std::pair<std::string, const Matrix*>>& files) {
    for (const auto& [path, matrix] : files) check_replaceable(path);
    // 0. One writer at a time per directory, from the first temporary to the last rename, so that a
    //    directory never holds one run's output.npy beside another's attn.npy. A second run waits.
    std::vector<DirectoryLock> locks;
    for (const std::string& dir : distinct_directories(files)) locks.emplace_back(dir);

    // 1. Every file to a temporary of its own (none for a file that is only to be removed).
    std::vector<std::unique_ptr<PendingFile>> temporaries(files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
        const auto& [path, matrix] = files[k];
        if (!matrix) continue;
        int fd = -1;
        temporaries[k] = create_unique(path, "tmp", fd);
        if (fd < 0) fail(path, "cannot write: no temporary file can be created beside it: " + reason());
        const bool ok = write_npy(fd, *matrix) && give_permissions(fd, path);
        const std::string why = reason();
        if (::close(fd) != 0 || !ok) fail(path, "cannot write: " + why);
    }

    // 2. Into place, one file at a time. An existing target and its temporary swap names in one
    //    atomic step (RENAME_EXCHANGE): a reader of the target sees the old file or the new one,
    //    never none, and the old file waits under the temporary's name until the end. A new target
    //    is a plain rename. Where the filesystem cannot swap, the old file is renamed aside first
    //    (then, for an instant, there is no target), and a file only to be removed is renamed aside.
    //    Every step is a rename within one directory, so it cannot fail for lack of space; if one
    //    fails all the same (a sticky directory, a file we may not replace), the steps already done
    //    are undone in reverse and every target is as it was. Signals wait meanwhile.
    const SignalsHeld held;
    enum class Done { nothing, swapped, renamed_new, set_aside };
    std::vector<Done> done(files.size(), Done::nothing);
    std::vector<std::unique_ptr<PendingFile>> aside(files.size());
    const auto undo = [&](std::size_t placed) {
        for (std::size_t k = placed; k-- > 0;) {
            const std::string& target = files[k].first;
            if (done[k] == Done::swapped) exchange(temporaries[k]->path(), target);  // the old one back
            if (done[k] == Done::renamed_new) ::unlink(target.c_str());              // it did not exist before
            if (aside[k] && ::rename(aside[k]->path().c_str(), target.c_str()) == 0) aside[k]->keep();
        }
    };
    const auto give_up = [&](std::size_t k, const std::string& what) {
        const std::string why = reason();
        undo(k + 1);
        fail(files[k].first, what + why);
    };
    for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string& target = files[k].first;
        std::string why;
        if (!temporaries[k]) {  // only to be removed
            if (!set_aside(target, aside[k], why)) {
                undo(k);
                fail(target, "cannot remove it: " + why);
            }
            continue;
        }
        if (exchange(temporaries[k]->path(), target)) {
            done[k] = Done::swapped;  // the temporary's name now holds the old file: deleted at the end
            continue;
        }
        if (errno != ENOENT && errno != EINVAL && errno != ENOSYS) give_up(k, "cannot replace it: ");
        if (errno != ENOENT && !set_aside(target, aside[k], why)) {  // cannot swap here: the old way
            undo(k);
            fail(target, "cannot replace it: " + why);
        }
        if (::rename(temporaries[k]->path().c_str(), target.c_str()) != 0) give_up(k, "cannot rename into place: ");
        temporaries[k]->keep();
        done[k] = Done::renamed_new;
    }
    // 3. Success: the old files go (the PendingFile destructors of their names unlink them).
}

void remove_temporaries_on_signals() {
    for (int sig : ending_signals) {
        struct sigaction current {};
        sigaction(sig, nullptr, &current);
        if (current.sa_handler == SIG_IGN) continue;  // ignored at start (`nohup attn …`): stays ignored
        std::signal(sig, on_signal);
    }
    // A write past the file-size limit (ulimit -f) would kill the process with SIGXFSZ, leaving the
    // temporary behind; ignored, the write fails with EFBIG instead, an ordinary write error.
    std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace attn
