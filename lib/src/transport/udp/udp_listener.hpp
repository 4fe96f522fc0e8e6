#pragma once
// Internal: the responder's half of UDP (udp_listener.cpp): a SO_REUSEPORT socket per thread,
// drained on readiness with recvmmsg, every answer of a batch sent with one sendmmsg.

#include <memory>

#include "responder/listener.hpp"

namespace dnstransport::detail {

std::unique_ptr<thread_listener> make_udp_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared);

}  // namespace dnstransport::detail
