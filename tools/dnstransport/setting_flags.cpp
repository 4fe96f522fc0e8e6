// The flags that set the library's settings, to name them in its errors and warnings.
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "cli_common.hpp"

namespace dnstransport::cli {

namespace {

// The settings set this time by another flag than the table's (name_setting_as).
std::map<std::string, std::string, std::less<>>& given_as() {
  static std::map<std::string, std::string, std::less<>> flags;
  return flags;
}

}  // namespace

void name_setting_as(std::string_view path, std::string_view flag) {
  given_as().insert_or_assign(std::string(path), std::string(flag));
}

std::string flag_of_setting(std::string_view path) {
  if (const auto given = given_as().find(path); given != given_as().end()) return given->second;
  // The settings the library's rules name, and the flags that set them. A flag that sets the
  // opposite of its setting (--no-nodelay: tcp_nodelay false) is not listed: no rule names
  // tcp_nodelay or gather_writes, and a message about them would read backwards.
  static constexpr std::pair<std::string_view, std::string_view> flags[] = {
      {"load_spec::target.server", "--server"},
      {"load_spec::target.port", "--server's port"},
      {"load_spec::target.transport", "--transport"},
      {"load_spec::target.doh_path", "--doh-path"},
      {"load_spec::target.doh_request", "--doh-method"},
      {"load_spec::traffic.clients", "--clients"},
      {"load_spec::connections.distinct_sources", "--distinct-sources"},
      {"load_spec::traffic.outstanding", "--outstanding"},
      {"load_spec::traffic.duration_seconds", "--duration"},
      {"load_spec::traffic.count", "--count"},
      {"load_spec::traffic.timeout_seconds", "--timeout"},
      {"load_spec::traffic.warmup_seconds", "--warmup"},
      {"load_spec::traffic.rate", "--rate"},
      {"load_spec::traffic.client_rate", "--client-rate"},
      {"load_spec::traffic.arrivals", "--arrivals"},
      {"load_spec::traffic.queries", "--queries"},
      {"load_spec::traffic.capture", "--queries FILE.pcap"},
      {"load_spec::traffic.replay", "--replay"},
      {"load_spec::traffic.replay_speed", "--speed"},
      {"load_spec::traffic.tc_retry_tcp", "--tc-retry tcp"},
      {"load_spec::traffic.edns_keepalive", "--edns-keepalive"},
      {"load_spec::traffic.edns_padding_block", "--edns-padding"},
      {"load_spec::traffic.client_subnet.range", "--ecs"},
      {"load_spec::traffic.client_subnet.mode", "--ecs-mode"},
      {"load_spec::connections.queries_per_connection", "--queries-per-connection"},
      {"load_spec::connections.idle_seconds", "--idle"},
      {"load_spec::connections.close", "--close"},
      {"load_spec::connections.tcp_fastopen", "--tcp-fastopen"},
      {"load_spec::connections.honour_keepalive", "--honour-keepalive"},
      {"load_spec::connections.sources", "--source"},
      {"load_spec::connections.source_mode", "--source-mode"},
      {"load_spec::connections.proxy.version", "--proxy-protocol"},
      {"load_spec::connections.proxy.sources", "--proxy-source"},
      {"load_spec::connections.proxy.random", "--proxy-source-order random"},
      {"load_spec::connections.proxy.seed", "--seed"},
      {"load_spec::connections.proxy.tlvs", "--proxy-tlv"},
      {"load_spec::connections.proxy.inside_tls", "--proxy-inside-tls"},
      {"load_spec::generator.threads", "--threads"},
      {"load_spec::generator.cpus", "--cpus"},
      {"load_spec::generator.coalesce_us", "--coalesce-us"},
      {"load_spec::generator.xdp_interface", "--xdp"},
      {"load_spec::generator.xdp_gateway_mac", "--xdp-gateway-mac"},
      {"load_spec::tls.backend", "--tls-backend"},
      {"load_spec::tls.min_version", "--tls-min-version"},
      {"load_spec::tls.max_version", "--tls-max-version"},
      {"load_spec::tls.server_name", "--sni"},
      {"load_spec::tls.alpn", "--alpn"},
      {"load_spec::tls.verify", "--verify"},
      {"load_spec::tls.ca_file", "--ca-file"},
      {"load_spec::tls.priority", "--tls-priority"},
      {"load_spec::tls.resume", "--tls-resume"},
      {"load_spec::tls.early_data", "--early-data"},
      {"load_spec::monitor.pids", "--monitor-pid"},
      {"load_spec::monitor.cgroups", "--monitor-cgroup"},
      {"load_spec::monitor.command", "--monitor-command"},
      {"load_spec::output.label", "--label"},
      {"load_spec::output.interval_seconds", "--interval"},
      {"tls_client_options::min_version", "--tls-min-version"},
      {"tls_client_options::max_version", "--tls-max-version"},
      {"pcap_options::ports", "--pcap-port"},
      // The interval of the `monitor` command a --monitor-command runs.
      {"monitor_command::interval", "--interval"},
      {"server_options::threads", "--threads"},
      {"server_options::rate_limit", "--rate-limit"},
      {"server_options::rate_limit_per_client", "--rate-limit-per-client"},
      {"server_options::proxy_protocol", "--proxy-protocol"},
      {"server_options::cost_answer_us", "--cost-answer-us"},
      {"server_options::cost_handshake_us", "--cost-handshake-us"},
      {"server_options::keepalive_timeout_seconds", "--keepalive-timeout"},
      {"server_options::doh_path", "--doh-path"},
      {"server_options::doh_max_streams", "--doh-max-streams"},
      {"server_options::doq_max_streams", "--doq-max-streams"},
      {"search_spec::min_answered_percent", "--min-answered"},
      {"search_spec::max_p99_ms", "--max-p99"},
      {"search_spec::start_rate", "--start-rate"},
      {"search_spec::max_rate", "--max-rate"},
      {"search_spec::step_seconds", "--duration"},
      {"search_spec::settle_seconds", "--settle"},
      {"search_spec::repeats", "--repeats"},
      {"search_spec::precision", "--precision"},
      {"search_spec::max_time_seconds", "--max-time"},
      {"sweep_plan::transports", "--transports"},
      {"sweep_plan::clients", "--clients"},
      {"sweep_plan::queries_per_connection", "--queries-per-connection"},
      {"sweep_plan::distinct_sources", "--distinct-sources"},
      {"sweep_plan::repeats", "--repeats"},
      {"sweep_plan::duration_seconds", "--duration"},
      {"sweep_plan::pause_seconds", "--pause"},
      {"sweep_plan::targets", "--target"},
      {"sweep_plan::search", "--search"},
      {"apply_preset::name", "--preset"},
  };
  for (const auto& [setting_path, flag] : flags) {
    if (setting_path == path) return std::string(flag);
  }
  return std::string(path);
}

}  // namespace dnstransport::cli
