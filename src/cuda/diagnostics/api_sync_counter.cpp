// ApiSyncCounter (haloex/detail/cuda/api_sync_counter.hpp): CUPTI's callback API,
// loaded with dlopen so that no haloex library links against libcupti.
#include "haloex/detail/cuda/api_sync_counter.hpp"

#include <dlfcn.h>

#include <atomic>
#include <fmt/format.h>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "haloex/core/error.hpp"

#if __has_include(<cupti_callbacks.h>)
#include <cupti_callbacks.h>
#include <cupti_result.h>
#define HALOEX_HAVE_CUPTI_HEADERS 1
#endif

namespace haloex::cuda {

namespace {

std::string baseName(std::string name) {
    // cuMemcpyDtoH_v2, cuStreamSynchronize_ptsz, cudaMemcpy_ptds_v7000 -> the API name.
    for (const char* suffix : {"_v", "_pt"}) {
        const auto at = name.find(suffix);
        if (at != std::string::npos && at > 0) name.erase(at);
    }
    return name;
}

}  // namespace

bool ApiSyncCounter::isHostBlocking(const std::string& name) {
    static const std::set<std::string> kBlocking = {
        // runtime
        "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
        "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyPeer", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
        "cudaMemcpyToArray", "cudaMemcpyFromArray", "cudaMemset", "cudaMemset2D", "cudaMemset3D",
        // driver
        "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpy", "cuMemcpyDtoH", "cuMemcpyHtoD",
        "cuMemcpyDtoD", "cuMemcpyPeer", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy3D", "cuMemcpyAtoH",
        "cuMemcpyHtoA", "cuMemsetD8", "cuMemsetD16", "cuMemsetD32", "cuMemsetD2D8", "cuMemsetD2D16", "cuMemsetD2D32"};
    return kBlocking.count(baseName(name)) != 0;
}

#if HALOEX_HAVE_CUPTI_HEADERS

struct ApiSyncCounter::Impl {
    using Subscribe = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
    using EnableDomain = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
    using Unsubscribe = CUptiResult (*)(CUpti_SubscriberHandle);
    using ResultString = CUptiResult (*)(CUptiResult, const char**);

    void* library = nullptr;
    Unsubscribe unsubscribe = nullptr;
    CUpti_SubscriberHandle subscriber = nullptr;
    std::atomic<bool> counting{false};
    std::thread::id countedThread;  // written while counting is off
    mutable std::mutex mutex;
    std::map<std::string, std::int64_t> counts;
    std::int64_t total = 0;

    void record(const char* name) {
        std::lock_guard<std::mutex> lock(mutex);
        ++counts[baseName(name)];
        ++total;
    }
};

namespace {

thread_local int runtimeCallDepth = 0;

void CUPTIAPI onApiCall(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
    auto& impl = *static_cast<ApiSyncCounter::Impl*>(userdata);
    const auto& call = *static_cast<const CUpti_CallbackData*>(data);
    const bool enter = call.callbackSite == CUPTI_API_ENTER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        runtimeCallDepth += enter ? 1 : -1;
        if (!enter || runtimeCallDepth != 1) return;
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        if (!enter || runtimeCallDepth > 0) return;
    } else {
        return;
    }
    if (!impl.counting.load(std::memory_order_relaxed) || std::this_thread::get_id() != impl.countedThread) return;
    if (call.functionName != nullptr && ApiSyncCounter::isHostBlocking(call.functionName)) {
        impl.record(call.functionName);
    }
}

void* openCupti(std::string& tried) {
    std::vector<std::string> names = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
#ifdef HALOEX_CUDA_TOOLKIT_LIBRARY_DIR
    for (const char* dir :
         {HALOEX_CUDA_TOOLKIT_LIBRARY_DIR, HALOEX_CUDA_TOOLKIT_LIBRARY_DIR "/../extras/CUPTI/lib64"}) {
        names.push_back(std::string(dir) + "/libcupti.so");
    }
#endif
    for (const std::string& name : names) {
        if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
        tried += (tried.empty() ? "" : ", ") + name;
    }
    return nullptr;
}

}  // namespace

ApiSyncCounter::ApiSyncCounter() : impl_(std::make_unique<Impl>()) {
    std::string tried;
    impl_->library = openCupti(tried);
    if (impl_->library == nullptr) {
        throwError(ErrorKind::Cuda,
                   fmt::format("counting CUDA synchronisations needs CUPTI, and libcupti could not be loaded "
                               "(tried {}); put the CUDA toolkit's lib64 (or extras/CUPTI/lib64) on "
                               "LD_LIBRARY_PATH",
                               tried));
    }
    const auto symbol = [&](const char* name) {
        void* f = dlsym(impl_->library, name);
        if (f == nullptr) {
            throwError(ErrorKind::Cuda, fmt::format("libcupti has no {}: too old a CUPTI", name));
        }
        return f;
    };
    const auto subscribe = reinterpret_cast<Impl::Subscribe>(symbol("cuptiSubscribe"));
    const auto enable = reinterpret_cast<Impl::EnableDomain>(symbol("cuptiEnableDomain"));
    const auto resultString = reinterpret_cast<Impl::ResultString>(symbol("cuptiGetResultString"));
    impl_->unsubscribe = reinterpret_cast<Impl::Unsubscribe>(symbol("cuptiUnsubscribe"));
    const auto check = [&](CUptiResult r, const char* what) {
        if (r == CUPTI_SUCCESS) return;
        const char* text = "unknown error";
        resultString(r, &text);
        throwError(ErrorKind::Cuda, fmt::format("CUPTI {} failed: {} (another profiler or CUPTI client, e.g. nsys or "
                                                "compute-sanitizer, may already be attached: only one may subscribe)",
                                                what, text));
    };
    check(subscribe(&impl_->subscriber, &onApiCall, impl_.get()), "cuptiSubscribe");
    check(enable(1, impl_->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(runtime)");
    check(enable(1, impl_->subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(driver)");
}

ApiSyncCounter::~ApiSyncCounter() {
    if (impl_->subscriber != nullptr) impl_->unsubscribe(impl_->subscriber);
    // libcupti stays loaded: CUPTI may still be delivering a callback on
    // another thread while it unsubscribes.
}

void ApiSyncCounter::setCounting(bool on) {
    if (on) impl_->countedThread = std::this_thread::get_id();
    impl_->counting.store(on, std::memory_order_seq_cst);
}

std::int64_t ApiSyncCounter::total() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->total;
}

std::map<std::string, std::int64_t> ApiSyncCounter::byFunction() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->counts;
}

#else  // no CUPTI headers in this toolkit

struct ApiSyncCounter::Impl {};

ApiSyncCounter::ApiSyncCounter() {
    throwError(ErrorKind::Cuda,
               "counting CUDA synchronisations needs CUPTI, whose headers (cupti_callbacks.h) were not found "
               "when haloex was built");
}
ApiSyncCounter::~ApiSyncCounter() = default;
void ApiSyncCounter::setCounting(bool) {}
std::int64_t ApiSyncCounter::total() const { return 0; }
std::map<std::string, std::int64_t> ApiSyncCounter::byFunction() const { return {}; }

#endif

}  // namespace haloex::cuda
