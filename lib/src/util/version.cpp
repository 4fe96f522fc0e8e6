#include <dnstransport/version.hpp>

namespace dnstransport {

std::string_view library_version() noexcept {
  return DNSTRANSPORT_VERSION;
}

}  // namespace dnstransport
