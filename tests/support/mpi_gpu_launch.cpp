// mpi_gpu_launch <ranks> <command...>: starts a multi-rank GPU test (the
// command is the whole mpiexec line) where it can run, and otherwise says why
// not with exit code 77, which ctest reports as skipped (SKIP_RETURN_CODE):
//   * no visible GPU;
//   * more ranks than GPUs and no CUDA MPS daemon: the ranks would share a
//     GPU by time-slicing, where a GPU-initiated hand-off takes milliseconds
//     instead of microseconds and the nvshmem transport's spinning kernels
//     wait on each other's time slices.
// With enough GPUs the ranks take one each (cuda::selectDevice); with fewer,
// they share them under MPS. This program only asks whether MPS is on; it
// never starts or stops the daemon, which other tests share under ctest -j
// (scripts/device/run.sh starts it around ctest).
#include <cuda_runtime.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

constexpr int kSkipped = 77;

// The control daemon writes its pid into CUDA_MPS_PIPE_DIRECTORY (default
// /tmp/nvidia-mps); a stale file from a killed daemon names a dead process.
bool mpsDaemonPidAlive() {
    const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
    std::ifstream file(std::string(dir && *dir ? dir : "/tmp/nvidia-mps") + "/nvidia-cuda-mps-control.pid");
    long pid = 0;
    if (!(file >> pid) || pid <= 0) return false;
    return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Whether contexts on GPU 0 are MPS clients. The driver answers this itself
// (it connects to the daemon at initialisation); drivers older than the
// attribute fall back to the daemon's pid file.
bool mpsEnabled() {
    int enabled = 0;
    if (cudaDeviceGetAttribute(&enabled, cudaDevAttrMpsEnabled, 0) == cudaSuccess) return enabled != 0;
    cudaGetLastError();
    return mpsDaemonPidAlive();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: mpi_gpu_launch <ranks> <command...>\n");
        return 2;
    }
    const int ranks = std::atoi(argv[1]);
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    if (gpus == 0) {
        std::printf("SKIPPED: no CUDA device is visible (no driver or no GPU)\n");
        return kSkipped;
    }
    if (ranks > gpus) {
        if (!mpsEnabled()) {
            std::printf("SKIPPED: %d ranks on %d GPU(s) share a GPU, which needs the CUDA MPS daemon, and none is "
                        "running (start it with nvidia-cuda-mps-control -d, as scripts/device/run.sh test does)\n",
                        ranks, gpus);
            return kSkipped;
        }
        std::printf("[mpi_gpu_launch] %d ranks share %d GPU(s) under MPS\n", ranks, gpus);
    } else {
        std::printf("[mpi_gpu_launch] %d ranks, one per GPU (%d visible)\n", ranks, gpus);
    }
    std::fflush(stdout);
    execvp(argv[2], argv + 2);
    std::perror(argv[2]);
    return 1;
}
