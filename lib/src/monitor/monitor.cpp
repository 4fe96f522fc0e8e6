#include <dnstransport/monitor.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "util/netlink_dump.hpp"

namespace dnstransport {

namespace {

std::uint64_t to_number(std::string_view text, int base = 10) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value, base);
  return value;
}

std::optional<std::string> read_whole(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::uint64_t count_fds(int pid) {
  DIR* dir = opendir(fmt::format("/proc/{}/fd", pid).c_str());
  if (dir == nullptr) return 0;
  std::uint64_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

// Established sockets (state 01) with local port `port` in one /proc/net/tcp-format file.
std::optional<std::uint64_t> count_in(const std::string& path, std::uint16_t port) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);  // the header
  std::uint64_t count = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    if (!(fields >> slot >> local >> remote >> state)) continue;
    const std::size_t colon = local.rfind(':');
    if (colon == std::string::npos || state != "01") continue;
    if (to_number(std::string_view(local).substr(colon + 1), 16) == port) ++count;
  }
  return count;
}

// Established TCP sockets of one address family with local port `port` in this process's
// network namespace, from the kernel's socket table through sock_diag (NETLINK_INET_DIAG):
// only established sockets are dumped, so the TIME_WAIT sockets of many short connections
// (tens of thousands of lines of /proc/net/tcp, tens of milliseconds to format) cost nothing.
std::optional<std::uint64_t> count_by_sock_diag(int fd, std::uint8_t family, std::uint16_t port) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.request.sdiag_family = family;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = 1u << TCP_ESTABLISHED;
  std::uint64_t count = 0;
  const bool done =
      detail::netlink_dump(fd, std::as_bytes(std::span(&message, 1)), [&](const nlmsghdr& h) {
        const auto* socket = static_cast<const inet_diag_msg*>(NLMSG_DATA(&h));
        if (ntohs(socket->id.idiag_sport) == port) ++count;
      });
  return done ? std::optional<std::uint64_t>(count) : std::nullopt;
}

// The network namespace a process is in (the inode of /proc/PID/ns/net); 0 when unknown.
ino_t network_namespace(const std::string& process) {
  struct stat info {};
  return stat(fmt::format("/proc/{}/ns/net", process).c_str(), &info) == 0 ? info.st_ino : 0;
}

// /proc/PID/stat counts CPU in clock ticks (10 ms): a reading of a run of half a second can be
// off by 4 %. The process's CPU clock gives the same total (every thread, live or gone) to the
// nanosecond; it replaces the sum of the ticks, split between user and system as they are.
void precise_cpu(int pid, process_sample& sample) {
  clockid_t clock{};
  timespec now{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &now) != 0) return;
  const double total = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
  const double ticked = sample.cpu_user_seconds + sample.cpu_system_seconds;
  const double user_share = ticked > 0 ? sample.cpu_user_seconds / ticked : 1;
  sample.cpu_user_seconds = total * user_share;
  sample.cpu_system_seconds = total - sample.cpu_user_seconds;
}

}  // namespace

std::optional<process_sample> sample_process(int pid) {
  if (pid <= 0) return std::nullopt;
  const auto stat = read_whole(fmt::format("/proc/{}/stat", pid));
  if (!stat) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const std::size_t name_end = stat->rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat->substr(name_end + 1));
  std::vector<std::string> after;  // after[0] is field 3 (state)
  for (std::string field; fields >> field;) after.push_back(field);
  if (after.size() < 22 || after[0] == "Z" || after[0] == "X") return std::nullopt;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  static const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  process_sample sample;
  sample.pid = pid;
  sample.cpu_user_seconds = static_cast<double>(to_number(after[11])) / ticks;    // field 14
  sample.cpu_system_seconds = static_cast<double>(to_number(after[12])) / ticks;  // field 15
  sample.threads = to_number(after[17]);                                          // field 20
  sample.rss_bytes = to_number(after[21]) * page;                                 // field 24
  precise_cpu(pid, sample);
  sample.fds = count_fds(pid);
  return sample;
}

std::optional<std::uint64_t> count_tcp_connections(int pid, std::uint16_t port) {
  const ino_t theirs = network_namespace(std::to_string(pid));
  if (theirs != 0 && theirs == network_namespace("self")) {
    const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_INET_DIAG);
    if (fd >= 0) {
      const auto v4 = count_by_sock_diag(fd, AF_INET, port);
      const auto v6 = v4 ? count_by_sock_diag(fd, AF_INET6, port) : std::nullopt;
      close(fd);
      if (v4 && v6) return *v4 + *v6;
    }
  }
  // Another network namespace (or no sock_diag): the text tables of the process's own.
  const auto v4 = count_in(fmt::format("/proc/{}/net/tcp", pid), port);
  const auto v6 = count_in(fmt::format("/proc/{}/net/tcp6", pid), port);
  if (!v4 && !v6) return std::nullopt;
  return v4.value_or(0) + v6.value_or(0);
}

std::optional<cgroup_sample> sample_cgroup(const std::string& path) {
  // A relative path is under the cgroup v2 mount: /sys/fs/cgroup, or /sys/fs/cgroup/unified
  // on a hybrid (v1 and v2) system.
  std::string directory = path;
  if (path.empty() || path.front() != '/') {
    struct stat st {};
    const bool unified = stat("/sys/fs/cgroup/cgroup.controllers", &st) != 0 &&
                         stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0;
    directory = (unified ? "/sys/fs/cgroup/unified/" : "/sys/fs/cgroup/") + path;
  }
  std::ifstream stat(directory + "/cpu.stat");
  if (!stat) return std::nullopt;
  cgroup_sample sample;
  bool found = false;
  std::string key;
  std::uint64_t value = 0;
  while (stat >> key >> value) {
    if (key == "user_usec") {
      sample.cpu_user_seconds = static_cast<double>(value) / 1e6;
      found = true;
    } else if (key == "system_usec") {
      sample.cpu_system_seconds = static_cast<double>(value) / 1e6;
    }
  }
  if (!found) return std::nullopt;
  std::ifstream memory(directory + "/memory.current");
  memory >> sample.memory_bytes;
  std::ifstream procs(directory + "/cgroup.procs");
  int pid = 0;
  while (procs >> pid) sample.pids.push_back(pid);
  return sample;
}

std::string format_monitor_line(const monitor_line& line) {
  const auto& s = line.sample;
  if (line.exited) {
    return fmt::format("{{\"time\": {:.3f}, \"pid\": {}, \"exited\": true}}", line.time, s.pid);
  }
  std::string text = fmt::format(
      "{{\"time\": {:.3f}, \"pid\": {}, \"cpu_user_seconds\": {:.2f}, "
      "\"cpu_system_seconds\": {:.2f}, \"rss_bytes\": {}, \"fds\": {}, \"threads\": {}",
      line.time, s.pid, s.cpu_user_seconds, s.cpu_system_seconds, s.rss_bytes, s.fds, s.threads);
  if (line.tcp_connections) text += fmt::format(", \"tcp_connections\": {}", *line.tcp_connections);
  return text + "}";
}

namespace {

// A finite number >= 0 at key, or nothing.
std::optional<double> non_negative(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!(d >= 0 && d < 1e18)) return std::nullopt;
  return d;
}

}  // namespace

std::optional<monitor_line> parse_monitor_line(std::string_view text, std::string& error) {
  boost::json::error_code ec;
  const boost::json::value value = boost::json::parse(text, ec);
  if (ec || !value.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  const auto& o = value.get_object();
  monitor_line line;
  const auto time = non_negative(o, "time");
  const auto pid = non_negative(o, "pid");
  if (!time || !pid || *pid < 1 || *pid > 2147483647.0 || *pid != static_cast<int>(*pid)) {
    error = "no \"time\" or no \"pid\" (a positive whole number)";
    return std::nullopt;
  }
  line.time = *time;
  line.sample.pid = static_cast<int>(*pid);
  if (const auto* exited = o.if_contains("exited"); exited != nullptr && exited->is_bool()) {
    line.exited = exited->get_bool();
    if (line.exited) return line;
  }
  const auto user = non_negative(o, "cpu_user_seconds");
  const auto system = non_negative(o, "cpu_system_seconds");
  const auto rss = non_negative(o, "rss_bytes");
  const auto fds = non_negative(o, "fds");
  const auto threads = non_negative(o, "threads");
  if (!user || !system || !rss || !fds || !threads) {
    error =
        "missing one of \"cpu_user_seconds\", \"cpu_system_seconds\", \"rss_bytes\", "
        "\"fds\", \"threads\" (numbers >= 0)";
    return std::nullopt;
  }
  line.sample.cpu_user_seconds = *user;
  line.sample.cpu_system_seconds = *system;
  line.sample.rss_bytes = static_cast<std::uint64_t>(*rss);
  line.sample.fds = static_cast<std::uint64_t>(*fds);
  line.sample.threads = static_cast<std::uint64_t>(*threads);
  if (o.contains("tcp_connections")) {
    const auto open = non_negative(o, "tcp_connections");
    if (!open) {
      error = "\"tcp_connections\" is not a number >= 0";
      return std::nullopt;
    }
    line.tcp_connections = static_cast<std::uint64_t>(*open);
  }
  return line;
}

}  // namespace dnstransport
