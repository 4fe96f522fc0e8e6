#pragma once
// Internal: socket helpers shared by clients and the responder.

#include <string>

namespace dnstransport::detail {

// "ECONNREFUSED" for an errno value (the symbolic name users search for), "E<n>" otherwise.
std::string errno_name(int error);

// Asks for large socket buffers so bursts of answers are not dropped by the kernel (capped
// by net.core.rmem_max / wmem_max; a refusal is harmless).
void enlarge_socket_buffers(int fd) noexcept;

}  // namespace dnstransport::detail
