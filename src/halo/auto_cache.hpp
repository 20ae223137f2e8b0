#pragma once
// The measured Auto's record as JSON, and its cache file (halo/auto_select.hpp):
// internal to haloex_transports.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "haloex/halo/auto_select.hpp"

namespace haloex::auto_select {

// Layout of the cache file: {"format": kCacheFormat, "version": kCacheVersion,
// "entries": {key: record}}.
inline constexpr const char* kCacheFormat = "haloex-auto-selection";
inline constexpr int kCacheVersion = 1;

// AutoRecord::reason for a record with its figures: how it was chosen
// (source, repeats, steps), then every measured candidate's time per step.
std::string selectionReason(const AutoRecord& record);

nlohmann::json recordToJson(const AutoRecord& record);
// The inverse of recordToJson; throws InvalidInput naming the field that is
// missing or of the wrong type.
AutoRecord recordFromJson(const nlohmann::json& json);

// The entry for `key` in the cache file at `path`, measured by `commit`.
// Nothing (and no warning) when the file or the entry does not exist; a
// warning that says why and that the run measures again when the file cannot
// be read, is not a cache file of this version, or the entry is malformed or
// was measured by another commit. Never throws for the file's contents.
struct CacheLookup {
    std::optional<AutoRecord> record;
    std::vector<std::string> warnings;
};
CacheLookup readCacheFile(const std::string& path, const std::string& key, const std::string& commit);

// Puts `record` under its key into the cache file (the other entries kept
// when the file is a valid cache file), written atomically. Returns a warning
// when it cannot; never throws.
std::optional<std::string> writeCacheFile(const std::string& path, const AutoRecord& record);

}  // namespace haloex::auto_select
