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
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "io/checks.hpp"

namespace attn {

using namespace io_checks;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string file_name_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ---- the directory a write works in ----------------------------------------------------------
//
// Each directory the write touches is opened once, and every create, rename and unlink after that
// is relative to its descriptor (openat, renameat, unlinkat), never to its path: if the directory
// is renamed or swapped for a symlink while the write runs, the write still only touches the
// directory it opened and locked, and leaves nothing anywhere else.
//
// An exclusive flock on that same descriptor keeps a second writer out from the first temporary
// to the last rename (no lock file is left in the directory). A directory that can be searched
// but not read (mode -wx) is opened for lookups only and written unlocked: the lock protects
// against a second run, not the write itself.
class Directory {
public:
    // `file`: the first file to be written there, which a failure names.
    Directory(const std::string& path, const std::string& file) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#ifdef O_PATH
        if (fd_ < 0 && errno == EACCES) fd_ = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
#endif
        if (fd_ < 0) fail(file, "cannot write: its directory cannot be opened: " + std::string(std::strerror(errno)));
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}  // fails (EBADF) on an O_PATH descriptor: unlocked
    }
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;
    ~Directory() { ::close(fd_); }  // closing releases the lock
    int fd() const { return fd_; }

private:
    int fd_ = -1;
};

// ---- temporaries a signal handler may delete ----------------------------------------------------
//
// A handler may only call async-signal-safe functions (unlinkat, signal, raise) and read plain
// data, so the files in flight live in fixed slots: a directory descriptor and a name; an empty
// slot's name starts with '\0'. (One write at a time: the slots are not shared safely between
// threads.)
constexpr int slots = 8;
struct PendingSlot {
    int dir_fd;
    char name[NAME_MAX + 1];
};
PendingSlot pending[slots];

// The signals that end a program and that a user can send it from a terminal or the shell: Ctrl-C,
// Ctrl-\ (quit), kill, a closed terminal.
constexpr int ending_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

void on_signal(int sig) {
    for (const auto& slot : pending)
        if (slot.name[0] != '\0') ::unlinkat(slot.dir_fd, slot.name, 0);
    std::signal(sig, SIG_DFL);  // then die of the signal, so the parent sees what happened
    std::raise(sig);
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

// A file this write created in `dir`: deleted when the object goes, unless keep() said it is in
// place. While it exists, its name sits in a slot for the signal handler.
class PendingFile {
public:
    PendingFile(const Directory& dir, std::string name) : dir_(dir), name_(std::move(name)) {
        for (int k = 0; k < slots && slot_ < 0; ++k) {
            if (pending[k].name[0] == '\0' && name_.size() <= NAME_MAX) {
                pending[k].dir_fd = dir_.fd();
                std::memcpy(pending[k].name, name_.c_str(), name_.size() + 1);
                slot_ = k;
            }
        }
    }
    PendingFile(const PendingFile&) = delete;
    PendingFile& operator=(const PendingFile&) = delete;
    ~PendingFile() {
        if (slot_ >= 0) pending[slot_].name[0] = '\0';
        if (!kept_) ::unlinkat(dir_.fd(), name_.c_str(), 0);
    }
    const std::string& name() const { return name_; }
    void keep() { kept_ = true; }  // renamed into place: no longer ours to delete

private:
    const Directory& dir_;
    std::string name_;
    int slot_ = -1;
    bool kept_ = false;
};

std::string reason() { return std::strerror(errno); }

// ".<target>.<tag>-XXXXXX", six characters from a random source: a name beside the target that no
// other program predicts.
std::string fresh_name(const std::string& target, const char* tag) {
    static std::mt19937_64 random(std::random_device{}() ^ std::uint64_t(::getpid()));
    constexpr char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string name = "." + target + "." + tag + "-";
    for (int k = 0; k < 6; ++k) name += letters[random() % (sizeof letters - 1)];
    return name;
}

// `make(name)` tries to create a file of a fresh name in `dir` (true when done, false with errno);
// a name that exists already is tried again with another. Registered for the signal handler before
// any signal can see it; nullptr (errno set) when it cannot be made.
template <class Make>
std::unique_ptr<PendingFile> create_fresh(const Directory& dir, const std::string& target, const char* tag, Make make) {
    const SignalsHeld held;
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string name = fresh_name(target, tag);
        if (make(name)) return std::make_unique<PendingFile>(dir, name);
        if (errno != EEXIST) return nullptr;
    }
    return nullptr;  // errno EEXIST: a hundred names taken
}

// A new, empty file beside `target` (O_CREAT|O_EXCL: never an existing file, never through a planted
// symlink; mode 0600 until give_permissions), open for writing in `fd`.
std::unique_ptr<PendingFile> create_temporary(const Directory& dir, const std::string& target, const char* tag,
                                              int& fd) {
    return create_fresh(dir, target, tag, [&](const std::string& name) {
        fd = ::openat(dir.fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        return fd >= 0;
    });
}

// The permissions the new file `target` gets: those of the file it replaces (mode, and owner and
// group where this process may set them), so a replaced 0600 file stays 0600; for a new file, what
// a plain fopen would give: 0666 less the umask.
bool give_permissions(int fd, const Directory& dir, const std::string& target) {
    struct stat old {};
    if (::fstatat(dir.fd(), target.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
        if (::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) return false;  // not ours to give: keep ours
        return ::fchmod(fd, old.st_mode & 0777) == 0;
    }
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return ::fchmod(fd, 0666 & ~mask) == 0;
}

bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t done = ::write(fd, p, n);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return false;
        p += done;
        n -= static_cast<std::size_t>(done);
    }
    return true;
}

// Writes the .npy bytes of the file's values to `fd`, all of them, and makes them durable.
bool write_npy(int fd, const NpyOutput& file) {
    const std::string header = npy_header(file.shape);
    const Matrix& m = *file.values;
    return write_all(fd, header.data(), header.size()) &&
           write_all(fd, reinterpret_cast<const char*>(m.data()), m.size() * sizeof(float)) && ::fsync(fd) == 0;
}

// The target may be replaced only if it is absent or a regular file.
void check_replaceable(const Directory& dir, const std::string& target, const std::string& path) {
    struct stat st {};
    if (::fstatat(dir.fd(), target.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return;
        fail(path, "cannot write: " + reason());
    }
    if (S_ISDIR(st.st_mode)) fail(path, "cannot write: a directory of that name is in the way");
    if (!S_ISREG(st.st_mode)) fail(path, "cannot write: it exists and is not a regular file");
}

// Swaps the names of two files in `dir` in one atomic step (Linux renameat2 RENAME_EXCHANGE).
// False with errno set when it failed; errno EINVAL or ENOSYS when the filesystem (NFS, vfat, many
// FUSE ones) or the system cannot do it.
bool exchange(const Directory& dir, const std::string& a, const std::string& b) {
#ifdef RENAME_EXCHANGE
    return ::renameat2(dir.fd(), a.c_str(), dir.fd(), b.c_str(), RENAME_EXCHANGE) == 0;
#else
    errno = ENOSYS;
    return false;
#endif
}

bool rename_in(const Directory& dir, const std::string& from, const std::string& to) {
    return ::renameat(dir.fd(), from.c_str(), dir.fd(), to.c_str()) == 0;
}

// The same, but never over an existing `to` (errno EEXIST), where the filesystem can promise that
// (RENAME_NOREPLACE); elsewhere a plain rename, for a `to` that is a fresh random name.
bool rename_to_fresh(const Directory& dir, const std::string& from, const std::string& to) {
#ifdef RENAME_NOREPLACE
    if (::renameat2(dir.fd(), from.c_str(), dir.fd(), to.c_str(), RENAME_NOREPLACE) == 0) return true;
    if (errno != EINVAL && errno != ENOSYS) return false;
#endif
    return rename_in(dir, from, to);
}

// A second name for the old `target`, kept until the end so that it can be put back: a hard link
// (no data copied), or, where the filesystem has none (vfat), a synced copy with the same
// permissions. Null with `backup` untouched when there is no target; false with errno when neither
// can be made.
bool keep_old(const Directory& dir, const std::string& target, std::unique_ptr<PendingFile>& backup) {
    backup = create_fresh(dir, target, "old", [&](const std::string& name) {
        return ::linkat(dir.fd(), target.c_str(), dir.fd(), name.c_str(), 0) == 0;
    });
    if (backup) return true;
    if (errno == ENOENT) return true;  // no target: nothing to keep
    const int in = ::openat(dir.fd(), target.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) return errno == ENOENT;
    int out = -1;
    backup = create_temporary(dir, target, "old", out);
    bool ok = backup != nullptr && give_permissions(out, dir, target);
    char chunk[1 << 16];
    for (ssize_t got; ok && (got = ::read(in, chunk, sizeof chunk)) != 0;)
        ok = (got > 0 || errno == EINTR) && (got <= 0 || write_all(out, chunk, std::size_t(got)));
    ok = ok && ::fsync(out) == 0;
    const int saved = errno;
    ::close(in);
    if (out >= 0) ::close(out);
    if (!ok) backup.reset();
    errno = saved;
    return ok;
}

}  // namespace

Array read_array(const std::string& path, const ReadOptions& options) {
    // Only regular files: a directory has no contents to read, and a FIFO or terminal would block
    // until someone writes to it.
    const bool npy = ends_with(path, ".npy"), csv = ends_with(path, ".csv");
    if (!npy && !csv) fail(path, "unknown file type; use .npy or .csv");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open: " + reason());
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a matrix file");
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file (a FIFO, device or socket); give a .npy or .csv file");
    if (npy) return read_npy_file(path, options);
    Array a;
    a.values = read_csv_file(path, options);
    a.shape = {a.values.rows(), a.values.cols()};
    return a;
}

Matrix read_matrix(const std::string& path, const ReadOptions& options) {
    return matrix_of(read_array(path, options), path);
}

void write_npy_files(const std::vector<NpyOutput>& files) {
    // 0. Each directory opened and locked once, in the same order by every writer (so two never wait
    //    on each other), before anything is looked at in it: one writer at a time per directory,
    //    from the first temporary to the last rename, so that a directory never holds one run's
    //    output.npy beside another's attn.npy. A second run waits.
    struct Target {
        const Directory* dir;
        std::string name;       // within dir
        const NpyOutput& file;  // null values: remove the target
    };
    std::vector<std::string> dir_paths;
    for (const NpyOutput& file : files) dir_paths.push_back(directory_of(file.path));
    std::sort(dir_paths.begin(), dir_paths.end());
    dir_paths.erase(std::unique(dir_paths.begin(), dir_paths.end()), dir_paths.end());
    std::vector<std::unique_ptr<Directory>> dirs;
    for (const std::string& dir : dir_paths) {
        const auto first_file =
            std::find_if(files.begin(), files.end(), [&](const NpyOutput& f) { return directory_of(f.path) == dir; });
        dirs.push_back(std::make_unique<Directory>(dir, first_file->path));
    }
    std::vector<Target> targets;
    for (const NpyOutput& file : files) {
        const auto at = std::lower_bound(dir_paths.begin(), dir_paths.end(), directory_of(file.path));
        targets.push_back({dirs[std::size_t(at - dir_paths.begin())].get(), file_name_of(file.path), file});
    }
    for (const Target& t : targets) check_replaceable(*t.dir, t.name, t.file.path);

    // 1. Every file to a temporary of its own (none for a file that is only to be removed).
    std::vector<std::unique_ptr<PendingFile>> temporaries(targets.size());
    for (std::size_t k = 0; k < targets.size(); ++k) {
        const Target& t = targets[k];
        if (!t.file.values) continue;
        int fd = -1;
        temporaries[k] = create_temporary(*t.dir, t.name, "tmp", fd);
        if (!temporaries[k]) fail(t.file.path, "cannot write: no temporary file can be created beside it: " + reason());
        const bool ok = write_npy(fd, t.file) && give_permissions(fd, *t.dir, t.name);
        const std::string why = reason();
        if (::close(fd) != 0 || !ok) fail(t.file.path, "cannot write: " + why);
    }

    // 2. Into place, one file at a time, each in one atomic step: a reader of a target finds the
    //    old file or the new one, never none. An existing target and its temporary swap names
    //    (RENAME_EXCHANGE), and the old file waits under the temporary's name until the end. Where
    //    the filesystem cannot swap, the old file first gets a second name (a hard link, else a
    //    copy), and the temporary is renamed over the target. A new target is a plain rename; a
    //    file only to be removed is renamed to a fresh name. If a step fails (a sticky directory, a
    //    file we may not replace), the steps already done are undone in reverse, each again one
    //    atomic rename, and every target is as it was. Signals wait meanwhile.
    const SignalsHeld held;
    enum class Done { nothing, swapped, placed };
    std::vector<Done> done(targets.size(), Done::nothing);
    std::vector<std::unique_ptr<PendingFile>> old(targets.size());  // the old file's second name
    const auto undo = [&](std::size_t placed) {
        for (std::size_t k = placed; k-- > 0;) {
            const Target& t = targets[k];
            if (done[k] == Done::swapped) {
                exchange(*t.dir, temporaries[k]->name(), t.name);  // the old one back
            } else if (old[k]) {
                if (rename_in(*t.dir, old[k]->name(), t.name)) old[k]->keep();  // the old one back
            } else if (done[k] == Done::placed) {
                ::unlinkat(t.dir->fd(), t.name.c_str(), 0);  // it did not exist before
            }
        }
    };
    const auto give_up = [&](std::size_t k, const std::string& what) {
        const std::string why = reason();
        undo(k);
        fail(targets[k].file.path, what + why);
    };
    for (std::size_t k = 0; k < targets.size(); ++k) {
        const Target& t = targets[k];
        if (!temporaries[k]) {  // only to be removed: renamed to a fresh name, deleted at the end
            old[k] = create_fresh(*t.dir, t.name, "old",
                                  [&](const std::string& name) { return rename_to_fresh(*t.dir, t.name, name); });
            if (!old[k] && errno != ENOENT) give_up(k, "cannot remove it: ");
            continue;
        }
        if (exchange(*t.dir, temporaries[k]->name(), t.name)) {
            done[k] = Done::swapped;  // the temporary's name now holds the old file: deleted at the end
            continue;
        }
        if (errno != ENOENT && errno != EINVAL && errno != ENOSYS) give_up(k, "cannot replace it: ");
        if (errno != ENOENT && !keep_old(*t.dir, t.name, old[k])) give_up(k, "cannot replace it: ");
        if (!rename_in(*t.dir, temporaries[k]->name(), t.name)) {
            old[k].reset();  // the target is still the old file: its second name just goes
            give_up(k, "cannot rename into place: ");
        }
        temporaries[k]->keep();
        done[k] = Done::placed;
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
