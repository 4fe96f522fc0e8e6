// Self-signed certificates for the built-in responder and for tests, made with OpenSSL 3
// whichever TLS backend serves them.

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport {
namespace {

struct openssl_deleter {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
  void operator()(X509* certificate) const noexcept { X509_free(certificate); }
  void operator()(BIGNUM* number) const noexcept { BN_free(number); }
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
  void operator()(GENERAL_NAMES* names) const noexcept { GENERAL_NAMES_free(names); }
  void operator()(GENERAL_NAME* name) const noexcept { GENERAL_NAME_free(name); }
  void operator()(BASIC_CONSTRAINTS* constraints) const noexcept {
    BASIC_CONSTRAINTS_free(constraints);
  }
};
template <typename T>
using openssl_ptr = std::unique_ptr<T, openssl_deleter>;

[[noreturn]] void fail(const std::filesystem::path& directory, const char* step) {
  const unsigned long code = ERR_peek_error();
  char reason[256] = "unknown OpenSSL error";
  if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  throw setup_error(fmt::format("cannot generate a TLS certificate in {}: {}: {}",
                                directory.string(), step, reason));
}

void add_name(GENERAL_NAMES* names, int type, ASN1_STRING* value) {
  openssl_ptr<GENERAL_NAME> name(GENERAL_NAME_new());
  if (!name || value == nullptr) {
    ASN1_STRING_free(value);
    throw std::bad_alloc();
  }
  GENERAL_NAME_set0_value(name.get(), type, value);
  if (sk_GENERAL_NAME_push(names, name.get()) == 0) throw std::bad_alloc();
  name.release();
}

// subjectAltName entries built one by one, so a common name containing a comma cannot turn
// into extra entries the way it would in OpenSSL's textual extension syntax.
openssl_ptr<GENERAL_NAMES> alternative_names(const std::string& common_name) {
  openssl_ptr<GENERAL_NAMES> names(GENERAL_NAMES_new());
  if (!names) throw std::bad_alloc();
  if (ASN1_OCTET_STRING* ip = a2i_IPADDRESS(common_name.c_str())) {
    add_name(names.get(), GEN_IPADD, ip);
  } else {
    // Not an address: the failed parse must not be reported as a later step's error.
    ERR_clear_error();
    ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
    if (dns != nullptr &&
        ASN1_STRING_set(dns, common_name.data(), static_cast<int>(common_name.size())) != 1) {
      ASN1_IA5STRING_free(dns);
      throw std::bad_alloc();
    }
    add_name(names.get(), GEN_DNS, dns);
  }
  for (const char* address : {"127.0.0.1", "::1"}) {
    if (common_name != address) add_name(names.get(), GEN_IPADD, a2i_IPADDRESS(address));
  }
  return names;
}

std::string pem_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

void write_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  const auto error = [&path](int code) {
    return setup_error(fmt::format("cannot write {}: {}", path.string(),
                                   std::error_code(code, std::generic_category()).message()));
  };
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw error(errno);
  // An existing file keeps its old mode through O_CREAT; a private key must not.
  if (::fchmod(fd, mode) != 0) {
    const int code = errno;
    ::close(fd);
    throw error(code);
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int code = errno;
      ::close(fd);
      throw error(code);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw error(errno);
}

}  // namespace

certificate_files generate_self_signed_certificate(const std::filesystem::path& directory,
                                                   const std::string& common_name) {
  if (common_name.empty()) {
    throw setup_error("cannot generate a TLS certificate: the common name is empty");
  }
  std::error_code created;
  std::filesystem::create_directories(directory, created);
  if (created) {
    throw setup_error(
        fmt::format("cannot create directory {}: {}", directory.string(), created.message()));
  }

  ERR_clear_error();
  openssl_ptr<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) fail(directory, "EC key generation");

  openssl_ptr<X509> certificate(X509_new());
  openssl_ptr<BIGNUM> serial(BN_new());
  if (!certificate || !serial) throw std::bad_alloc();
  // A fresh random serial each time: clients that cached an earlier certificate with the
  // same issuer and serial would otherwise reject the new one.
  if (X509_set_version(certificate.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get())) == nullptr) {
    fail(directory, "serial number");
  }
  // An hour of slack for clocks slightly behind ours.
  if (X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -60 * 60) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(certificate.get()), 365, 0, nullptr) == nullptr) {
    fail(directory, "validity period");
  }

  X509_NAME* subject = X509_get_subject_name(certificate.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(certificate.get(), subject) != 1) {
    fail(directory, "subject name");
  }
  if (X509_set_pubkey(certificate.get(), key.get()) != 1) fail(directory, "public key");

  // CA:TRUE lets the certificate serve as its own trust anchor when clients verify.
  openssl_ptr<BASIC_CONSTRAINTS> constraints(BASIC_CONSTRAINTS_new());
  if (!constraints) throw std::bad_alloc();
  constraints->ca = 1;
  const openssl_ptr<GENERAL_NAMES> names = alternative_names(common_name);
  if (X509_add1_ext_i2d(certificate.get(), NID_basic_constraints, constraints.get(), 1,
                        X509V3_ADD_DEFAULT) != 1 ||
      X509_add1_ext_i2d(certificate.get(), NID_subject_alt_name, names.get(), 0,
                        X509V3_ADD_DEFAULT) != 1) {
    fail(directory, "extensions");
  }
  if (X509_sign(certificate.get(), key.get(), EVP_sha256()) <= 0) fail(directory, "signature");

  openssl_ptr<BIO> certificate_pem(BIO_new(BIO_s_mem()));
  openssl_ptr<BIO> key_pem(BIO_new(BIO_s_mem()));
  if (!certificate_pem || !key_pem) throw std::bad_alloc();
  if (PEM_write_bio_X509(certificate_pem.get(), certificate.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    fail(directory, "PEM encoding");
  }

  certificate_files files{directory / "cert.pem", directory / "key.pem"};
  write_file(files.key_file, pem_text(key_pem.get()), 0600);
  write_file(files.certificate_file, pem_text(certificate_pem.get()), 0644);
  return files;
}

}  // namespace dnstransport
