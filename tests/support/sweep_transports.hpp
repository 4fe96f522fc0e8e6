#pragma once
/// \file
/// Test support: the transports a sweep runs, one constant each, for the tests that build
/// sweep plans and results by hand (`st::udp`, `st::tls_openssl`).

#include <optional>

#include <dnstransport/sweep_plan.hpp>

namespace dnstransport::sweep_transports {

inline const sweep_transport udp{transport_kind::udp, std::nullopt};
inline const sweep_transport tcp{transport_kind::tcp, std::nullopt};
inline const sweep_transport tls_openssl{transport_kind::tls, tls_backend::openssl};
inline const sweep_transport tls_gnutls{transport_kind::tls, tls_backend::gnutls};
inline const sweep_transport doh_openssl{transport_kind::doh, tls_backend::openssl};
inline const sweep_transport doh_gnutls{transport_kind::doh, tls_backend::gnutls};
inline const sweep_transport doq{transport_kind::doq, tls_backend::gnutls};

}  // namespace dnstransport::sweep_transports
