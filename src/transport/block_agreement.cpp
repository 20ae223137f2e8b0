// BlockTransport::exchangeAgreedBlocksInPlace's precondition on this rank's
// blocks (include/haloex/transport/block_transport.hpp).
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

void requireWithinAgreement(std::span<const BlockExchange> blocks, std::size_t agreedMaxSendBytes) {
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        if (blocks[b].dest >= 0 && blocks[b].sendBytes > agreedMaxSendBytes) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("exchangeAgreedBlocksInPlace: block {} sends {} bytes to rank {}, more than the "
                                   "{} bytes agreed for the call; agree on the largest sendBytes of every rank",
                                   b, blocks[b].sendBytes, blocks[b].dest, agreedMaxSendBytes));
        }
    }
}

}  // namespace haloex::transport
