// haloex-kernel-trace: a CUDA injection library (CUDA_INJECTION64_PATH) that
// records, through CUPTI's activity API, every kernel, copy and memset (device
// timestamps), every CUDA runtime call (host timestamps, same clock) and, with
// NVTX_INJECTION64_PATH pointing at libcupti, the NVTX ranges haloex-md names
// its search step's phases and parts with; written as CSV at exit:
//   kind,name,start_ns,end_ns,stream,correlation
// to $HALOEX_KERNEL_TRACE (default haloex-kernel-trace), with ".rankN" from
// OMPI_COMM_WORLD_RANK and ".csv" appended. A GPU timeline where Nsight
// Systems is not installed; bench/kernel_trace.py summarises it.
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_name.hpp"

namespace {

struct Row {
    const char* kind;
    std::string name;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint32_t stream = 0;
    std::uint32_t correlation = 0;
};

std::mutex mutex;
std::vector<Row> rows;
std::unordered_map<std::uint32_t, std::size_t> openMarkers;  // marker id -> its row
std::size_t dropped = 0;
constexpr std::size_t kBufferBytes = std::size_t{8} << 20;

void report(CUptiResult result, const char* what) {
    if (result == CUPTI_SUCCESS) return;
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    std::fprintf(stderr, "haloex-kernel-trace: %s failed: %s\n", what, text != nullptr ? text : "?");
}

std::string runtimeName(CUpti_CallbackId cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
        return fmt::format("runtime {}", cbid);
    }
    return name;
}

void take(const CUpti_Activity* record) {
    switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            rows.push_back(
                {"kernel", haloex::kernel_trace::kernelName(k->name), k->start, k->end, k->streamId, k->correlationId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            rows.push_back({"memcpy", fmt::format("copy kind {} {} B", static_cast<int>(m->copyKind), m->bytes),
                            m->start, m->end, m->streamId, m->correlationId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
            rows.push_back({"memset", fmt::format("{} B", m->bytes), m->start, m->end, m->streamId, m->correlationId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME: {
            const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
            rows.push_back({"runtime", runtimeName(a->cbid), a->start, a->end, a->threadId, a->correlationId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MARKER: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
            if ((m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
                openMarkers[m->id] = rows.size();
                rows.push_back({"range", m->name != nullptr ? m->name : "?", m->timestamp, 0, 0, m->id});
            } else if ((m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
                const auto open = openMarkers.find(m->id);
                if (open != openMarkers.end()) {
                    rows[open->second].end = m->timestamp;
                    openMarkers.erase(open);
                }
            }
            break;
        }
        default: break;
    }
}

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t* buffer, std::size_t,
                              std::size_t validSize) {
    {
        std::lock_guard<std::mutex> lock(mutex);
        CUpti_Activity* record = nullptr;
        while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) take(record);
        std::size_t lost = 0;
        if (cuptiActivityGetNumDroppedRecords(context, streamId, &lost) == CUPTI_SUCCESS) dropped += lost;
    }
    std::free(buffer);
}

std::string outputPath() {
    const char* base = std::getenv("HALOEX_KERNEL_TRACE");
    std::string path = base != nullptr && *base != '\0' ? base : "haloex-kernel-trace";
    if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank != nullptr) path += fmt::format(".rank{}", rank);
    return path + ".csv";
}

// Names may hold commas (template arguments): quoted.
std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

void writeAtExit() {
    report(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    std::lock_guard<std::mutex> lock(mutex);
    const std::string path = outputPath();
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "haloex-kernel-trace: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        return;
    }
    std::fprintf(out, "kind,name,start_ns,end_ns,stream,correlation\n");
    for (const Row& r : rows) {
        std::fprintf(out, "%s,%s,%llu,%llu,%u,%u\n", r.kind, quoted(r.name).c_str(),
                     static_cast<unsigned long long>(r.start), static_cast<unsigned long long>(r.end), r.stream,
                     r.correlation);
    }
    std::fclose(out);
    std::fprintf(stderr, "haloex-kernel-trace: %zu records in %s%s\n", rows.size(), path.c_str(),
                 dropped > 0 ? fmt::format(" ({} dropped: a longer buffer is needed)", dropped).c_str() : "");
}

}  // namespace

// Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
    report(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted), "cuptiActivityRegisterCallbacks");
    for (CUpti_ActivityKind kind :
         {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
          CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MARKER}) {
        report(cuptiActivityEnable(kind), fmt::format("cuptiActivityEnable({})", static_cast<int>(kind)).c_str());
    }
    std::atexit(writeAtExit);
    return 1;
}
