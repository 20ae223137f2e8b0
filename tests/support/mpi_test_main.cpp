#include "mpi_test_main.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "haloex/runtime/mpi_world.hpp"

namespace haloex::testsupport {
namespace {

runtime::World* g_world = nullptr;

// Prints only failed assertions, marked with the rank (ranks other than 0).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
    explicit RankFailurePrinter(int rank) : rank_(rank) {}
    // The name is kept here: UnitTest::current_test_info() would take a lock
    // that GoogleTest holds while it reports a result.
    void OnTestStart(const ::testing::TestInfo& test) override {
        testName_ = std::string(test.test_suite_name()) + "." + test.name();
    }
    void OnTestPartResult(const ::testing::TestPartResult& result) override {
        if (!result.failed()) return;
        std::fprintf(stderr, "[rank %d] %s failed at %s:%d\n%s\n", rank_, testName_.c_str(),
                     result.file_name() ? result.file_name() : "?", result.line_number(), result.message());
        std::fflush(stderr);
    }

private:
    int rank_;
    std::string testName_;
};

}  // namespace

runtime::World& mpiTestWorld() { return *g_world; }

int runMpiTests(int argc, char** argv) {
    runtime::MpiSession session(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    int failed = 1;
    {
        runtime::MpiWorld world;
        g_world = &world;
        if (world.rank() != 0) {
            auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
            delete listeners.Release(listeners.default_result_printer());
            listeners.Append(new RankFailurePrinter(world.rank()));
        }
        const int mine = RUN_ALL_TESTS();
        failed = static_cast<int>(world.allReduceValue<std::int64_t>(mine != 0 ? 1 : 0, runtime::ReduceOp::Max));
        if (world.rank() == 0 && failed) std::fprintf(stderr, "some rank failed a test (see the [rank N] lines)\n");
        g_world = nullptr;
    }
    return failed;
}

}  // namespace haloex::testsupport
