// The measured Auto's cache file (auto_cache.hpp): rank 0 reads and writes
// it; what it holds is never trusted to be well formed.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "auto_cache.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"

namespace haloex::auto_select {
namespace {

std::string measureAgain(const std::string& path, const std::string& why) {
    return fmt::format("auto-selection cache {}: {}; measuring again (the file is rewritten afterwards)", path, why);
}

// The file's JSON when it exists and is a cache file of this version; else
// nothing, and `why` says what is wrong ("" when it does not exist).
std::optional<nlohmann::json> loadCacheFile(const std::string& path, std::string& why) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    if (!std::filesystem::is_regular_file(path, ec)) {
        why = "not a regular file";
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) {
        why = "cannot be read";
        return std::nullopt;
    }
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        why = fmt::format("not valid JSON ({})", e.what());
        return std::nullopt;
    }
    if (!doc.is_object() || !doc.contains("format") || doc["format"] != kCacheFormat) {
        why = fmt::format("not an auto-selection cache (no \"format\": \"{}\")", kCacheFormat);
        return std::nullopt;
    }
    if (!doc.contains("version") || doc["version"] != kCacheVersion) {
        why = fmt::format("version {} of the layout, this haloex reads version {}",
                          doc.contains("version") ? doc["version"].dump() : std::string("(none)"), kCacheVersion);
        return std::nullopt;
    }
    if (!doc.contains("entries") || !doc["entries"].is_object()) {
        why = "\"entries\" is missing or not an object";
        return std::nullopt;
    }
    return doc;
}

}  // namespace

CacheLookup readCacheFile(const std::string& path, const std::string& key, const std::string& commit) {
    CacheLookup out;
    std::string why;
    const std::optional<nlohmann::json> doc = loadCacheFile(path, why);
    if (!doc) {
        if (!why.empty()) out.warnings.push_back(measureAgain(path, why));
        return out;
    }
    const nlohmann::json& entries = (*doc)["entries"];
    if (!entries.contains(key)) return out;  // never measured for this shape: no warning
    AutoRecord r;
    try {
        r = recordFromJson(entries[key]);
    } catch (const Error& e) {
        out.warnings.push_back(measureAgain(path, fmt::format("its entry for this run is malformed: {}", e.what())));
        return out;
    }
    bool chosenMeasured = false;
    for (const AutoCandidateTime& m : r.measured) chosenMeasured = chosenMeasured || m.backend == r.chosen;
    if (r.key != key || r.source != AutoSource::Measured || !chosenMeasured) {
        out.warnings.push_back(measureAgain(
            path,
            "its entry for this run is inconsistent (another key, not a measurement, or a choice it did not time)"));
        return out;
    }
    if (r.commit != commit) {
        out.warnings.push_back(measureAgain(
            path, fmt::format("its entry for this run was measured by haloex {}, this is {}", r.commit, commit)));
        return out;
    }
    out.record = std::move(r);
    return out;
}

std::optional<std::string> writeCacheFile(const std::string& path, const AutoRecord& record) {
    std::string why;
    nlohmann::json doc = loadCacheFile(path, why).value_or(
        nlohmann::json{{"format", kCacheFormat}, {"version", kCacheVersion}, {"entries", nlohmann::json::object()}});
    AutoRecord kept = record;  // as measured: this run's warnings and file name are not the measurement's
    kept.source = AutoSource::Measured;
    kept.warnings.clear();
    kept.cacheFile.clear();
    doc["entries"][record.key] = recordToJson(kept);
    try {
        writeFileAtomically(path, doc.dump(2) + "\n", "auto-selection cache");
    } catch (const Error& e) {
        return fmt::format("auto-selection cache {}: the measured choice was not saved: {}", path, e.what());
    }
    return std::nullopt;
}

}  // namespace haloex::auto_select
