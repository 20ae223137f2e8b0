#include "haloex/md/rank_notes.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace haloex::md {

std::string describeRanks(const std::vector<int>& ranks) {
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string text;
    for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
        if (!text.empty()) text += ", ";
        if (j >= i + 2) {
            text += fmt::format("{}-{}", sorted[i], sorted[j]);
        } else {
            text += fmt::format("{}", sorted[i]);
            if (j == i + 1) text += fmt::format(", {}", sorted[j]);
        }
        i = j + 1;
    }
    return (sorted.size() == 1 ? "rank " : "ranks ") + text;
}

std::vector<std::string> groupRankNotes(const std::vector<std::vector<std::string>>& linesByRank) {
    std::vector<std::pair<std::string, std::vector<int>>> lines;  // first-seen order
    for (int rank = 0; rank < static_cast<int>(linesByRank.size()); ++rank) {
        for (const std::string& line : linesByRank[rank]) {
            auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == line; });
            if (it == lines.end()) {
                lines.push_back({line, {rank}});
            } else if (it->second.back() != rank) {
                it->second.push_back(rank);
            }
        }
    }
    std::vector<std::string> grouped;
    for (const auto& [line, ranks] : lines) {
        const bool everyRank = linesByRank.size() <= 1 || ranks.size() == linesByRank.size();
        grouped.push_back(everyRank ? line : fmt::format("{} ({})", line, describeRanks(ranks)));
    }
    return grouped;
}

}  // namespace haloex::md
