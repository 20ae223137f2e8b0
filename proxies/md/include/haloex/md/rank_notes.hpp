#pragma once
// Lines that every rank reports (a transport's notes): merged so that a line
// several ranks share is printed once, with the ranks it applies to.
#include <string>
#include <vector>

namespace haloex::md {

// "rank 3", "ranks 0-2, 5" (ranks ascending, runs of three or more as a range).
std::string describeRanks(const std::vector<int>& ranks);

// linesByRank[r] = rank r's lines. Each distinct line once, in the order first
// seen: as it is when every rank reported it, else followed by " (ranks ...)".
std::vector<std::string> groupRankNotes(const std::vector<std::vector<std::string>>& linesByRank);

}  // namespace haloex::md
