#pragma once
/// \file
/// Test support: TLS certificates for hostile responders, made once per process in a
/// directory of their own (removed at exit), so parallel test processes never share files.

#include <string>

#include <dnstransport/tls.hpp>

namespace dnstransport::hostile {

/// A valid self-signed certificate (and key) for `common_name`, plus 127.0.0.1 and ::1.
certificate_files test_certificate(const std::string& common_name = "localhost");

/// The same kind of certificate for `common_name`, but whose validity ended yesterday.
certificate_files expired_certificate(const std::string& common_name = "localhost");

}  // namespace dnstransport::hostile
