#include "haloex/plan/send_rule.hpp"

namespace haloex::plan {

PulseSendRule sendRuleOf(const Decomposition& decomposition, int rank, int dim) {
    PulseSendRule rule;
    rule.dim = dim;
    rule.lowerFace = decomposition.cellLo(rank, dim);
    rule.slabLimit = rule.lowerFace + decomposition.rlist();
    for (int e = 0; e < 3; ++e) rule.upperFace[e] = decomposition.cellHi(rank, e);
    rule.rlist2 = decomposition.rlist() * decomposition.rlist();
    rule.pruneCorners = decomposition.prunesCorners();
    return rule;
}

}  // namespace haloex::plan
