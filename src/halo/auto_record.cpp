// The measured Auto's record (halo/auto_select.hpp): its lines for a run's
// summary and its JSON, both ways.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string>
#include <vector>

#include "auto_cache.hpp"
#include "haloex/core/error.hpp"

namespace haloex {
namespace {

constexpr std::array<std::pair<AutoSource, std::string_view>, 4> kSourceNames{{
    {AutoSource::Rule, "rule"},
    {AutoSource::Measured, "measured"},
    {AutoSource::ProcessCache, "process cache"},
    {AutoSource::FileCache, "cache file"},
}};

AutoSource sourceFromString(std::string_view name) {
    for (const auto& [source, text] : kSourceNames) {
        if (text == name) return source;
    }
    throwError(ErrorKind::InvalidInput, fmt::format("unknown source '{}'", name));
}

std::string microseconds(double seconds) { return fmt::format("{:.1f}", seconds * 1e6); }

}  // namespace

std::string_view toString(AutoSource source) {
    for (const auto& [s, text] : kSourceNames) {
        if (s == source) return text;
    }
    HALOEX_ASSERT(false, "an AutoSource without a name");
    return {};  // not reached
}

std::vector<std::string> AutoRecord::describe() const {
    std::vector<std::string> lines;
    lines.push_back(fmt::format("auto: {}, {}", toString(chosen), reason));
    double fastest = 0.0;
    for (const AutoCandidateTime& m : measured) {
        if (m.backend == chosen) fastest = m.secondsPerStep;
    }
    for (const AutoCandidateTime& m : measured) {
        std::vector<std::string> repeatsUs;
        for (double s : m.repeatSecondsPerStep) repeatsUs.push_back(microseconds(s));
        const std::string versus =
            m.backend == chosen ? std::string("chosen")
            : fastest > 0.0
                ? fmt::format("{:+.0f} % against {}", 100.0 * (m.secondsPerStep / fastest - 1.0), toString(chosen))
                : std::string("slower");
        lines.push_back(fmt::format("  {}: {} us/step ({}; repeats {})", toString(m.backend),
                                    microseconds(m.secondsPerStep), versus, fmt::join(repeatsUs, ", ")));
    }
    for (const AutoSkipped& s : skipped) {
        lines.push_back(fmt::format("  {}: skipped: {}", toString(s.backend), s.reason));
    }
    for (const std::string& w : warnings) lines.push_back("  warning: " + w);
    return lines;
}

std::string AutoRecord::toJson() const { return auto_select::recordToJson(*this).dump(); }

namespace auto_select {

std::string selectionReason(const AutoRecord& r) {
    std::vector<std::string> figures;
    for (const AutoCandidateTime& m : r.measured) {
        figures.push_back(fmt::format("{} {} us/step", toString(m.backend), microseconds(m.secondsPerStep)));
    }
    const std::string how = fmt::format("median of {} x {} representative steps after {} warm-up, the slowest rank's",
                                        r.repeats, r.stepsPerRepeat, r.warmupSteps);
    std::string when;
    if (r.source == AutoSource::ProcessCache) when = " earlier in this process";
    if (r.source == AutoSource::FileCache) when = fmt::format(" at {} (read from {})", r.measuredAt, r.cacheFile);
    std::string skipped;
    for (const AutoSkipped& s : r.skipped) {
        skipped += fmt::format("{}{}", skipped.empty() ? "; skipped: " : ", ", toString(s.backend));
    }
    return fmt::format("chosen by measurement{} ({}): {}{}", when, how, fmt::join(figures, ", "), skipped);
}

nlohmann::json recordToJson(const AutoRecord& r) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const AutoCandidateTime& m : r.measured) {
        std::vector<double> repeatsUs;
        for (double s : m.repeatSecondsPerStep) repeatsUs.push_back(s * 1e6);
        candidates.push_back({{"backend", toString(m.backend)},
                              {"us_per_step", m.secondsPerStep * 1e6},
                              {"repeats_us_per_step", repeatsUs}});
    }
    nlohmann::json skipped = nlohmann::json::array();
    for (const AutoSkipped& s : r.skipped) skipped.push_back({{"backend", toString(s.backend)}, {"reason", s.reason}});
    return {{"chosen", toString(r.chosen)},
            {"source", toString(r.source)},
            {"reason", r.reason},
            {"key", r.key},
            {"warmup_steps", r.warmupSteps},
            {"steps_per_repeat", r.stepsPerRepeat},
            {"repeats", r.repeats},
            {"candidates", candidates},
            {"skipped", skipped},
            {"measured_at", r.measuredAt},
            {"commit", r.commit},
            {"cache_file", r.cacheFile},
            {"warnings", r.warnings}};
}

AutoRecord recordFromJson(const nlohmann::json& j) {
    // Every field checked by name: the message says which one is wrong.
    const auto field = [&](const nlohmann::json& object, const char* name) -> const nlohmann::json& {
        if (!object.is_object() || !object.contains(name)) {
            throwError(ErrorKind::InvalidInput, fmt::format("the field \"{}\" is missing", name));
        }
        return object.at(name);
    };
    const auto text = [&](const nlohmann::json& object, const char* name) {
        const nlohmann::json& v = field(object, name);
        if (!v.is_string()) throwError(ErrorKind::InvalidInput, fmt::format("\"{}\" is not a string", name));
        return v.get<std::string>();
    };
    const auto count = [&](const nlohmann::json& object, const char* name) {
        const nlohmann::json& v = field(object, name);
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1'000'000'000) {
            throwError(ErrorKind::InvalidInput, fmt::format("\"{}\" is not a count", name));
        }
        return v.get<int>();
    };
    const auto seconds = [&](const nlohmann::json& v, const char* name) {
        if (!v.is_number() || !(v.get<double>() >= 0.0)) {
            throwError(ErrorKind::InvalidInput, fmt::format("\"{}\" is not a time of at least 0", name));
        }
        return v.get<double>() * 1e-6;
    };
    const auto array = [&](const nlohmann::json& object, const char* name) -> const nlohmann::json& {
        const nlohmann::json& v = field(object, name);
        if (!v.is_array()) throwError(ErrorKind::InvalidInput, fmt::format("\"{}\" is not an array", name));
        return v;
    };
    const auto backendNamed = [](const std::string& name) {
        const Backend b = parseBackend(name);
        if (b == Backend::Auto) {
            throwError(ErrorKind::InvalidInput, fmt::format("\"{}\" is not a backend with a particle transport", name));
        }
        return b;
    };
    const auto backend = [&](const nlohmann::json& object) { return backendNamed(text(object, "backend")); };
    AutoRecord r;
    r.chosen = backendNamed(text(j, "chosen"));
    r.source = sourceFromString(text(j, "source"));
    r.reason = text(j, "reason");
    r.key = text(j, "key");
    r.warmupSteps = count(j, "warmup_steps");
    r.stepsPerRepeat = count(j, "steps_per_repeat");
    r.repeats = count(j, "repeats");
    for (const nlohmann::json& c : array(j, "candidates")) {
        AutoCandidateTime m;
        m.backend = backend(c);
        m.secondsPerStep = seconds(field(c, "us_per_step"), "us_per_step");
        for (const nlohmann::json& s : array(c, "repeats_us_per_step")) {
            m.repeatSecondsPerStep.push_back(seconds(s, "repeats_us_per_step"));
        }
        r.measured.push_back(m);
    }
    for (const nlohmann::json& s : array(j, "skipped")) r.skipped.push_back({backend(s), text(s, "reason")});
    r.measuredAt = text(j, "measured_at");
    r.commit = text(j, "commit");
    r.cacheFile = text(j, "cache_file");
    for (const nlohmann::json& w : array(j, "warnings")) {
        if (!w.is_string()) throwError(ErrorKind::InvalidInput, "\"warnings\" holds something other than text");
        r.warnings.push_back(w.get<std::string>());
    }
    return r;
}

}  // namespace auto_select
}  // namespace haloex
