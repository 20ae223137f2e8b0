// Probe for the host-wait limit of MpiWorld: rank 1 stops itself (SIGSTOP, as
// a debugger, a suspended job or a frozen node would) while rank 0 waits for
// a message from it. Rank 0 must say which rank, operation and peer it waited
// for, within HALOEX_HOST_WAIT_TIMEOUT (ctest sets 2 s), and end the job
// (ctest passes on the message; before the limit existed the job spun until
// ctest's timeout). Collectives go through the same polling loop. With the
// argument "many" rank 0 waits in World::sendRecvMany instead, which must
// name the message still pending.
#include <csignal>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/mpi_world.hpp"

int main(int argc, char** argv) {
    haloex::runtime::MpiSession session(argc, argv);
    haloex::runtime::MpiWorld world;
    world.barrier();
    if (world.rank() == 1) {
        std::raise(SIGSTOP);  // the launcher's abort kills it
        return 0;
    }
    try {
        if (argc > 1 && std::string_view(argv[1]) == "many") {
            std::int64_t value = 0;
            const std::vector<haloex::runtime::PeerMessage> messages{
                {{}, -1, std::as_writable_bytes(std::span(&value, 1)), 1},  // rank 1 never sends
                {{}, -1, {}, -1}};
            world.sendRecvMany(messages, 7);
        } else {
            std::vector<std::int64_t> nothing;
            world.sendRecv(nothing, -1, 1, 7);  // rank 1 never sends
        }
    } catch (const haloex::Error& e) {
        world.abort(e.what());
    }
    return 0;
}
