// An NVTX injection library for the CLI tests: NVTX3 loads it by itself when
// NVTX_INJECTION64_PATH names it (as Nsight Systems injects its own), and it
// records the ranges a program pushes. At exit it writes to $HALOEX_NVTX_LOG:
//   pushes N / pops N / unmatched_pops N   (a pop on a thread with no open range)
//   range COUNT NAME                       (one line per name, first seen first)
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

std::mutex mutex;
std::vector<std::pair<std::string, long>> ranges;  // name, pushes
std::atomic<long> pushes{0}, pops{0}, unmatchedPops{0};
thread_local int depth = 0;

int NVTX_API recordPush(const char* name) {
    ++pushes;
    ++depth;
    const std::lock_guard<std::mutex> lock(mutex);
    for (auto& [seen, count] : ranges) {
        if (seen == name) {
            ++count;
            return depth - 1;
        }
    }
    ranges.emplace_back(name, 1);
    return depth - 1;
}

int NVTX_API recordPop() {
    ++pops;
    if (depth == 0) {
        ++unmatchedPops;
        return -1;
    }
    return --depth;
}

void writeLog() {
    const char* path = std::getenv("HALOEX_NVTX_LOG");
    if (path == nullptr) return;
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) return;
    const std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(out, "pushes %ld\npops %ld\nunmatched_pops %ld\n", pushes.load(), pops.load(), unmatchedPops.load());
    for (const auto& [name, count] : ranges) std::fprintf(out, "range %ld %s\n", count, name.c_str());
    std::fclose(out);
}

}  // namespace

extern "C" NVTX_DYNAMIC_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr) return 0;
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop) {
        return 0;
    }
    *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&recordPush);
    *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&recordPop);
    std::atexit(writeLog);
    return 1;
}
