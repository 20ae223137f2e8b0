// H5MD trajectories through the HDF5 C library (the layout: h5md_trajectory.hpp).
#include "haloex/md/h5md_trajectory.hpp"

#include <hdf5.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "haloex/build_info.hpp"
#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/fnv1a.hpp"
#include "haloex/detail/core/safe_file.hpp"

namespace haloex::md {
namespace {

constexpr const char* kStep = "particles/all/position/step";
constexpr const char* kTime = "particles/all/position/time";
constexpr const char* kValue = "particles/all/position/value";
constexpr const char* kEdges = "particles/all/box/edges/value";
constexpr hsize_t kSeriesChunk = 1024;  // frames per chunk of the small per-frame series

// An HDF5 identifier, closed with its own close function when it goes.
class Hid {
public:
    using Close = herr_t (*)(hid_t);
    Hid() = default;
    Hid(hid_t id, Close close) : id_(id), close_(close) {}
    Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
    Hid& operator=(Hid&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = std::exchange(other.id_, H5I_INVALID_HID);
            close_ = other.close_;
        }
        return *this;
    }
    ~Hid() { reset(); }
    hid_t get() const { return id_; }

private:
    void reset() noexcept {
        if (id_ >= 0 && close_ != nullptr) close_(id_);
        id_ = H5I_INVALID_HID;
    }
    hid_t id_ = H5I_INVALID_HID;
    Close close_ = nullptr;
};

// HDF5 prints its error stack to stderr by default; the errors here say
// what failed in the project's words instead (once per process).
void silenceHdf5Printing() {
    static std::once_flag once;
    std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

// The most specific entry of HDF5's error stack (and clears it).
std::string hdf5Reason() {
    std::string reason;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_UPWARD,
        [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
            if (n == 0 && e->desc != nullptr) {
                *static_cast<std::string*>(data) = fmt::format("{} (in {})", e->desc, e->func_name);
            }
            return 0;
        },
        &reason);
    H5Eclear2(H5E_DEFAULT);
    return reason.empty() ? std::string("no reason given by HDF5") : reason;
}

std::string userName() {
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
    return "unknown";
}

}  // namespace

bool h5mdAvailable() { return true; }
std::string h5mdUnavailableReason() { return {}; }

struct H5mdTrajectory::Impl {
    std::string path;
    std::string role;
    std::int64_t atoms = 0;
    std::int64_t frames = 0;
    Hid file, step, time, value, edges;

    // Io naming the file, what HDF5 could not do and why.
    [[noreturn]] void fail(const std::string& what) const {
        throwError(ErrorKind::Io, fmt::format("{} {}: HDF5 could not {}: {}. Check that the file system has space "
                                              "and the file is not open in another program",
                                              role, path, what, hdf5Reason()));
    }
    [[noreturn]] void refuse(const std::string& why) const {
        H5Eclear2(H5E_DEFAULT);
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {}: {}; give --traj the H5MD file this run wrote, or a new file name", role, path,
                               why));
    }
    Hid check(hid_t id, Hid::Close close, const std::string& what) const {
        if (id < 0) fail(what);
        return Hid(id, close);
    }
    void check(herr_t status, const std::string& what) const {
        if (status < 0) fail(what);
    }

    Hid group(hid_t parent, const char* name) const {
        return check(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                     fmt::format("create the group {}", name));
    }
    // A dataset that grows by frames: `dims` with the first (frames) 0 and unlimited.
    Hid series(hid_t parent, const char* name, hid_t type, std::vector<hsize_t> dims,
               std::vector<hsize_t> chunk) const {
        std::vector<hsize_t> maxDims = dims;
        maxDims[0] = H5S_UNLIMITED;
        const Hid space = check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxDims.data()), H5Sclose,
                                "create a dataspace");
        const Hid plist = check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "create a property list");
        check(H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), "set a chunk size");
        return check(H5Dcreate2(parent, name, type, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT), H5Dclose,
                     fmt::format("create the dataset {}", name));
    }
    void stringAttribute(hid_t object, const char* name, const std::vector<std::string>& values, bool array) const {
        const Hid type = check(H5Tcopy(H5T_C_S1), H5Tclose, "copy a string type");
        check(H5Tset_size(type.get(), H5T_VARIABLE), "make a string type");
        check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "make a string type");
        const hsize_t n = values.size();
        const Hid space =
            check(array ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_SCALAR), H5Sclose, "create a dataspace");
        std::vector<const char*> texts;
        for (const std::string& v : values) texts.push_back(v.c_str());
        const Hid attr = check(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                               fmt::format("create the attribute {}", name));
        check(H5Awrite(attr.get(), type.get(), texts.data()), fmt::format("write the attribute {}", name));
    }
    void intAttribute(hid_t object, const char* name, const std::vector<std::int32_t>& values, bool array) const {
        const hsize_t n = values.size();
        const Hid space =
            check(array ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_SCALAR), H5Sclose, "create a dataspace");
        const Hid attr = check(H5Acreate2(object, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                               fmt::format("create the attribute {}", name));
        check(H5Awrite(attr.get(), H5T_NATIVE_INT32, values.data()), fmt::format("write the attribute {}", name));
    }

    // A new file, created exclusively under a random temporary name
    // (H5F_ACC_EXCL: O_CREAT|O_EXCL, which never follows a link: H5F_ACC_TRUNC
    // truncated whatever a link planted at the trajectory's name pointed to)
    // and renamed onto the trajectory's name once its structure is written.
    void create() {
        std::string temporary;
        for (int attempt = 0; attempt < 16 && file.get() < 0; ++attempt) {
            temporary = temporaryPathFor(path);
            struct stat st {};
            if (::lstat(temporary.c_str(), &st) == 0) continue;  // taken (or planted): draw another name
            const hid_t id = H5Fcreate(temporary.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
            if (id < 0) fail(fmt::format("create '{}'", temporary));
            file = Hid(id, H5Fclose);
        }
        if (file.get() < 0) fail("find a free temporary name");
        try {
            // Locked from the start, through HDF5's own descriptor (closing
            // another would drop the lock): as a temporary, no other run takes
            // it for a killed run's; under its name, a second run is refused.
            lockForWriting(descriptor(), role, path);
            createLayout();
            renameIntoPlace(temporary, path, role);
        } catch (...) {
            step = Hid();
            time = Hid();
            value = Hid();
            edges = Hid();
            file = Hid();
            ::unlink(temporary.c_str());
            throw;
        }
    }

    void createLayout() {
        const Hid h5md = group(file.get(), "h5md");
        intAttribute(h5md.get(), "version", {1, 1}, true);
        stringAttribute(group(h5md.get(), "author").get(), "name", {userName()}, false);
        const Hid creator = group(h5md.get(), "creator");
        stringAttribute(creator.get(), "name", {"haloex-md"}, false);
        stringAttribute(creator.get(), "version", {fmt::format("{} (commit {})", HALOEX_VERSION, gitCommit())}, false);
        const Hid particles = group(file.get(), "particles");
        const Hid all = group(particles.get(), "all");
        const Hid position = group(all.get(), "position");
        const auto n = static_cast<hsize_t>(atoms);
        step = series(position.get(), "step", H5T_STD_I64LE, {0}, {kSeriesChunk});
        time = series(position.get(), "time", H5T_IEEE_F64LE, {0}, {kSeriesChunk});
        stringAttribute(time.get(), "unit", {"ps"}, false);
        // One frame a chunk: a frame is written, and read, whole.
        value = series(position.get(), "value", H5T_IEEE_F32LE, {0, n, 3}, {1, n, 3});
        stringAttribute(value.get(), "unit", {"nm"}, false);
        const Hid box = group(all.get(), "box");
        intAttribute(box.get(), "dimension", {3}, false);
        stringAttribute(box.get(), "boundary", {"periodic", "periodic", "periodic"}, true);
        const Hid edgesGroup = group(box.get(), "edges");
        edges = series(edgesGroup.get(), "value", H5T_IEEE_F32LE, {0, 3}, {kSeriesChunk, 3});
        stringAttribute(edges.get(), "unit", {"nm"}, false);
        // The box changes with the positions' frames: H5MD shares their step and time.
        check(H5Lcreate_hard(position.get(), "step", edgesGroup.get(), "step", H5P_DEFAULT, H5P_DEFAULT),
              "link the box's step");
        check(H5Lcreate_hard(position.get(), "time", edgesGroup.get(), "time", H5P_DEFAULT, H5P_DEFAULT),
              "link the box's time");
        flush();
    }

    // The first dimension of `dataset`, after checking its rank and the others.
    hsize_t length(const Hid& dataset, const char* name, std::vector<hsize_t> rest) const {
        const Hid space = check(H5Dget_space(dataset.get()), H5Sclose, fmt::format("read the shape of {}", name));
        const int rank = H5Sget_simple_extent_ndims(space.get());
        std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
        if (rank != static_cast<int>(rest.size()) + 1 ||
            H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0 ||
            !std::equal(rest.begin(), rest.end(), dims.begin() + 1)) {
            refuse(fmt::format("/{} has not the shape of a haloex-md trajectory of {} atoms", name, atoms));
        }
        return dims[0];
    }
    Hid openDataset(const char* name) const {
        // H5Lexists on each part: a missing group is an answer, not an error.
        std::string prefix;
        for (std::string_view rest = name;;) {
            const std::size_t slash = rest.find('/');
            prefix += std::string(rest.substr(0, slash));
            if (H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT) <= 0) {
                refuse(fmt::format("the file has no /{}: it is not an H5MD trajectory haloex-md wrote", name));
            }
            if (slash == std::string_view::npos) break;
            prefix += '/';
            rest = rest.substr(slash + 1);
        }
        return check(H5Dopen2(file.get(), name, H5P_DEFAULT), H5Dclose, fmt::format("open /{}", name));
    }

    void open() {
        // HDF5 opens by name and follows links: the file is checked before
        // (a regular file, not a link) and after (what HDF5 opened is that file).
        struct stat before {};
        if (::lstat(path.c_str(), &before) != 0) fail("find the file");
        if (!S_ISREG(before.st_mode)) {
            refuse(S_ISLNK(before.st_mode) ? "the path is a symbolic link (haloex does not write through links)"
                                           : "the path is not a regular file");
        }
        const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
        H5Eclear2(H5E_DEFAULT);
        if (isHdf5 <= 0) refuse("the file is not an HDF5 file");
        file = check(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "open the file for appending");
        struct stat opened {};
        if (::fstat(descriptor(), &opened) != 0 || opened.st_dev != before.st_dev || opened.st_ino != before.st_ino) {
            file = Hid();
            refuse("the file was replaced while it was being opened (a link swapped in?)");
        }
        lockForWriting(descriptor(), role, path);  // as create()
        step = openDataset(kStep);
        time = openDataset(kTime);
        value = openDataset(kValue);
        edges = openDataset(kEdges);
        const auto n = static_cast<hsize_t>(atoms);
        // A run killed inside append() may leave one series a frame longer:
        // the whole frames are those all four hold (the restart cuts back to
        // its checkpoint's frames anyway).
        frames = static_cast<std::int64_t>(std::min({length(step, kStep, {}), length(time, kTime, {}),
                                                     length(value, kValue, {n, 3}), length(edges, kEdges, {3})}));
    }

    void flush() const { check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "flush the file"); }

    // The file descriptor HDF5's default (sec2) driver holds.
    int descriptor() const {
        void* handle = nullptr;
        check(H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle), "give its file descriptor");
        return *static_cast<int*>(handle);
    }

    void resize(std::int64_t count) {
        const auto f = static_cast<hsize_t>(count);
        const hsize_t stepDims[1] = {f};
        const hsize_t valueDims[3] = {f, static_cast<hsize_t>(atoms), 3};
        const hsize_t edgeDims[2] = {f, 3};
        check(H5Dset_extent(step.get(), stepDims), "resize the step series");
        check(H5Dset_extent(time.get(), stepDims), "resize the time series");
        check(H5Dset_extent(value.get(), valueDims), "resize the positions");
        check(H5Dset_extent(edges.get(), edgeDims), "resize the box edges");
    }

    // Writes `data` (native `memType`) at frame `frame` of `dataset`, whose frames are `rest` long.
    void writeFrame(const Hid& dataset, hid_t memType, const void* data, std::vector<hsize_t> rest,
                    const char* what) const {
        std::vector<hsize_t> start(rest.size() + 1, 0), count{1};
        start[0] = static_cast<hsize_t>(frames);
        count.insert(count.end(), rest.begin(), rest.end());
        const Hid fileSpace = check(H5Dget_space(dataset.get()), H5Sclose, "read a dataspace");
        check(H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
              "select a frame");
        const Hid memSpace = check(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose,
                                   "create a dataspace");
        check(H5Dwrite(dataset.get(), memType, memSpace.get(), fileSpace.get(), H5P_DEFAULT, data),
              fmt::format("write the {} of frame {}", what, frames));
    }
};

H5mdTrajectory::H5mdTrajectory(const std::string& path, const std::string& role, Mode mode, std::int64_t atoms)
    : impl_(std::make_unique<Impl>()) {
    HALOEX_ASSERT(atoms > 0, "an H5MD trajectory without atoms");
    silenceHdf5Printing();
    impl_->path = path;
    impl_->role = role;
    impl_->atoms = atoms;
    if (mode == Mode::Create) {
        impl_->create();
    } else {
        impl_->open();
    }
}

H5mdTrajectory::~H5mdTrajectory() = default;

const std::string& H5mdTrajectory::path() const { return impl_->path; }
std::int64_t H5mdTrajectory::atoms() const { return impl_->atoms; }
std::int64_t H5mdTrajectory::frames() const { return impl_->frames; }

std::int64_t H5mdTrajectory::stepOf(std::int64_t frame) const {
    HALOEX_ASSERT(frame >= 0 && frame < impl_->frames, "an H5MD frame out of range");
    const hsize_t start = static_cast<hsize_t>(frame), count = 1;
    const Hid space = impl_->check(H5Dget_space(impl_->step.get()), H5Sclose, "read a dataspace");
    impl_->check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr), "select a frame");
    const Hid memSpace = impl_->check(H5Screate_simple(1, &count, nullptr), H5Sclose, "create a dataspace");
    std::int64_t step = -1;
    impl_->check(H5Dread(impl_->step.get(), H5T_NATIVE_INT64, memSpace.get(), space.get(), H5P_DEFAULT, &step),
                 fmt::format("read the step of frame {}", frame));
    return step;
}

std::uint64_t H5mdTrajectory::positionBytes() const {
    return static_cast<std::uint64_t>(impl_->frames) * static_cast<std::uint64_t>(impl_->atoms) * 3 * sizeof(float);
}

std::uint64_t H5mdTrajectory::positionTailChecksum(std::uint64_t end, std::uint64_t tailBytes) const {
    HALOEX_ASSERT(tailBytes <= end, "a tail checksum before the start");
    Fnv1a sum;
    if (end > positionBytes()) {
        // Fewer frames than the recorded end: cannot match.
        sum.add(std::as_bytes(std::span(&end, 1)));
        return ~sum.value();
    }
    if (tailBytes == 0) return sum.value();
    const std::uint64_t frameBytes = static_cast<std::uint64_t>(impl_->atoms) * 3 * sizeof(float);
    const std::uint64_t begin = end - tailBytes;
    const hsize_t first = begin / frameBytes;
    const hsize_t count[3] = {(end - 1) / frameBytes - first + 1, static_cast<hsize_t>(impl_->atoms), 3};
    const hsize_t start[3] = {first, 0, 0};
    std::vector<float> values(count[0] * count[1] * 3);
    const Hid space = impl_->check(H5Dget_space(impl_->value.get()), H5Sclose, "read a dataspace");
    impl_->check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), "select frames");
    const Hid memSpace = impl_->check(H5Screate_simple(3, count, nullptr), H5Sclose, "create a dataspace");
    impl_->check(H5Dread(impl_->value.get(), H5T_NATIVE_FLOAT, memSpace.get(), space.get(), H5P_DEFAULT, values.data()),
                 "read the positions of the last frames");
    sum.add(std::as_bytes(std::span(values)).subspan(begin - first * frameBytes, tailBytes));
    return sum.value();
}

void H5mdTrajectory::append(std::int64_t step, double time, const std::array<double, 3>& box,
                            std::span<const Vec3d> positions) {
    HALOEX_ASSERT(static_cast<std::int64_t>(positions.size()) == impl_->atoms, "an H5MD frame of another atom count");
    std::vector<float> values;
    values.reserve(positions.size() * 3);
    for (const Vec3d& p : positions) {
        for (int d = 0; d < 3; ++d) values.push_back(static_cast<float>(p[d]));
    }
    const std::array<float, 3> edges{static_cast<float>(box[0]), static_cast<float>(box[1]),
                                     static_cast<float>(box[2])};
    const std::int64_t before = impl_->frames;
    try {
        impl_->resize(before + 1);
        const auto n = static_cast<hsize_t>(impl_->atoms);
        impl_->writeFrame(impl_->value, H5T_NATIVE_FLOAT, values.data(), {n, 3}, "positions");
        impl_->writeFrame(impl_->edges, H5T_NATIVE_FLOAT, edges.data(), {3}, "box");
        impl_->writeFrame(impl_->time, H5T_NATIVE_DOUBLE, &time, {}, "time");
        impl_->writeFrame(impl_->step, H5T_NATIVE_INT64, &step, {}, "step");
        impl_->frames = before + 1;
        impl_->flush();
    } catch (...) {
        // Whole frames only: what this frame wrote is cut back (as far as HDF5 still can).
        if (impl_->frames != before) impl_->frames = before;
        H5Eclear2(H5E_DEFAULT);
        const hsize_t f = static_cast<hsize_t>(before);
        const hsize_t valueDims[3] = {f, static_cast<hsize_t>(impl_->atoms), 3}, edgeDims[2] = {f, 3};
        H5Dset_extent(impl_->step.get(), &f);
        H5Dset_extent(impl_->time.get(), &f);
        H5Dset_extent(impl_->value.get(), valueDims);
        H5Dset_extent(impl_->edges.get(), edgeDims);
        H5Eclear2(H5E_DEFAULT);
        throw;
    }
}

void H5mdTrajectory::truncateFrames(std::int64_t frames) {
    HALOEX_ASSERT(frames >= 0 && frames <= impl_->frames, "an H5MD trajectory cut beyond its end");
    impl_->resize(frames);
    impl_->frames = frames;
    impl_->flush();
}

}  // namespace haloex::md
