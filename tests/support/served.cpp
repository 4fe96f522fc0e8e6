#include "served.hpp"

#include <regex>

namespace dnstransport::hostile {

using namespace std::chrono_literals;

served::served(const std::string& cli, const std::string& cert_dir)
    : child_(cli, {"serve", "--listen", "127.0.0.1:0", "--tcp", "127.0.0.1:0", "--tls",
                   "127.0.0.1:0", "--cert-dir", cert_dir}) {
  ready_ = child_.wait_for_stdout("stop with Ctrl-C", 20s);
  const std::string out = child_.stdout_so_far();
  for (const char* kind : {"udp", "tcp", "tls"}) {
    std::smatch m;
    if (std::regex_search(out, m, std::regex(std::string(kind) + R"(  127\.0\.0\.1:(\d+))"))) {
      ports_.push_back(static_cast<std::uint16_t>(std::stoi(m[1])));
    }
  }
}

std::string served::address(transport_kind t) const {
  return "127.0.0.1:" + std::to_string(port(t));
}

process_result served::stop(int signal_number) {
  child_.send_signal(signal_number);
  return child_.wait(20s);
}

}  // namespace dnstransport::hostile
