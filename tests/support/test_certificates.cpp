#include "test_certificates.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace dnstransport::hostile {

namespace {

struct file_closer {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

file_ptr open_file(const std::filesystem::path& path, const char* mode) {
  file_ptr file(std::fopen(path.c_str(), mode));
  if (!file) throw std::runtime_error("cannot open " + path.string());
  return file;
}

// Moves the validity period of the certificate in `files` to the past and signs it again
// with its own key.
void backdate(const certificate_files& files) {
  EVP_PKEY* key =
      PEM_read_PrivateKey(open_file(files.key_file, "r").get(), nullptr, nullptr, nullptr);
  X509* certificate =
      PEM_read_X509(open_file(files.certificate_file, "r").get(), nullptr, nullptr, nullptr);
  const bool ok = key != nullptr && certificate != nullptr &&
                  X509_gmtime_adj(X509_getm_notBefore(certificate), -2 * 86400) != nullptr &&
                  X509_gmtime_adj(X509_getm_notAfter(certificate), -86400) != nullptr &&
                  X509_sign(certificate, key, EVP_sha256()) > 0 &&
                  PEM_write_X509(open_file(files.certificate_file, "w").get(), certificate) == 1;
  X509_free(certificate);
  EVP_PKEY_free(key);
  if (!ok) throw std::runtime_error("cannot backdate " + files.certificate_file.string());
}

class certificate_store {
 public:
  ~certificate_store() {
    std::error_code ignored;
    if (!directory_.empty()) std::filesystem::remove_all(directory_, ignored);
  }

  certificate_files get(const std::string& name, bool expired) {
    const std::lock_guard lock(mutex_);
    if (directory_.empty()) {
      directory_ = std::filesystem::temp_directory_path() /
                   ("dnstransport-hostile-" + std::to_string(::getpid()));
    }
    auto [it, added] = made_.try_emplace({name, expired});
    if (added) {
      it->second =
          generate_self_signed_certificate(directory_ / (expired ? "expired-" + name : name), name);
      if (expired) backdate(it->second);
    }
    return it->second;
  }

 private:
  std::mutex mutex_;
  std::filesystem::path directory_;
  std::map<std::pair<std::string, bool>, certificate_files> made_;
};

certificate_store& store() {
  static certificate_store instance;
  return instance;
}

}  // namespace

certificate_files test_certificate(const std::string& common_name) {
  return store().get(common_name, false);
}

certificate_files expired_certificate(const std::string& common_name) {
  return store().get(common_name, true);
}

}  // namespace dnstransport::hostile
