// Whether mpirun started this process, read from the environment, without mpirun: the sizes
// Open MPI and PMI put there, and nothing (no MPI job joined) when there is none.
#include <dnstransport/mpi.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace dnstransport {
namespace {

// Sets (or, with nullopt, removes) an environment variable for the test's lifetime.
class scoped_env {
 public:
  scoped_env(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~scoped_env() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(mpi_launch_test, without_mpirun_the_size_is_0_and_no_job_is_joined) {
  const scoped_env open_mpi("OMPI_COMM_WORLD_SIZE", std::nullopt);
  const scoped_env pmi("PMI_SIZE", std::nullopt);
  EXPECT_EQ(mpi_launch_size(), 0u);
  EXPECT_EQ(join_mpi_job(), nullptr);
}

TEST(mpi_launch_test, open_mpis_size_is_read_first_then_pmis) {
  const scoped_env pmi("PMI_SIZE", "3");
  {
    const scoped_env open_mpi("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(mpi_launch_size(), 4u);
  }
  const scoped_env open_mpi("OMPI_COMM_WORLD_SIZE", std::nullopt);
  EXPECT_EQ(mpi_launch_size(), 3u);
}

TEST(mpi_launch_test, a_size_that_is_not_a_positive_number_is_no_launch) {
  const scoped_env pmi("PMI_SIZE", std::nullopt);
  for (const char* junk : {"", "0", "-2", "4x", " 4", "many"}) {
    SCOPED_TRACE(junk);
    const scoped_env open_mpi("OMPI_COMM_WORLD_SIZE", junk);
    EXPECT_EQ(mpi_launch_size(), 0u);
  }
}

}  // namespace
}  // namespace dnstransport
