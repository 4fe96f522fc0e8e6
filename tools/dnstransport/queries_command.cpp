#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/pcap.hpp>
#include <dnstransport/query_source.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct queries_options {
  std::string input;
  std::string input_format = "auto";
  std::string output;
  std::string format = "text";
  std::vector<std::uint16_t> pcap_ports;
};

}  // namespace

action add_queries_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "queries",
      "Write a query set to a file: the built-in set (default) or a converted query file, in "
      "dnsperf text format or length-prefixed wire format (dnsperf -B)");
  auto o = std::make_shared<queries_options>();
  cmd->add_option("--queries", o->input, "Query file to read (default: the built-in set)");
  cmd->add_option("--query-format", o->input_format,
                  "Format of --queries: auto, text, wire or pcap (a packet capture, pcap or "
                  "pcapng: its DNS queries are written, and what it held is printed)")
      ->capture_default_str();
  cmd->add_option("--pcap-port", o->pcap_ports,
                  "With a capture: a UDP/TCP port that carries DNS (repeat it or give a "
                  "comma-separated list). Default: 53")
      ->delimiter(',');
  cmd->add_option("--out", o->output, "File to write")->required();
  cmd->add_option("--format", o->format, "text (name TYPE per line) or wire")
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  dnstransport queries --out default.txt                  # the built-in set as text\n"
      "  dnstransport queries --format wire --out default.raw    # for dnsperf -B\n"
      "  dnstransport queries --queries my.txt --format wire --out my.raw\n"
      "  dnstransport queries --queries traffic.pcap --format wire --out traffic.raw\n"
      "Exit status: 0 written; 2 bad flags or an unreadable/unwritable file.");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    if (o->format != "text" && o->format != "wire") {
      throw setup_error(fmt::format("--format: \"{}\" is not text or wire", o->format));
    }
    if (o->format == "text") {
      if (!o->input.empty()) {
        throw setup_error("--format text writes the built-in set only; convert files to wire");
      }
      write_file(o->output, default_queries_text());
      fmt::print("wrote the built-in query set ({} queries) to {}\n", default_queries().size(),
                 o->output);
      return exit_ok;
    }
    query_file_format format = parse_query_format(o->input_format);
    if (!o->input.empty() && format == query_file_format::automatic) {
      format = query_file_format_of(o->input);
    }
    query_set queries;
    if (!o->input.empty() && format == query_file_format::pcap) {
      pcap_capture capture = read_pcap(o->input, pcap_options_of(o->pcap_ports));
      const pcap_counts& n = capture.counts;
      fmt::print(
          "{}: {} queries from {} clients in {} packets (skipped: {} responses, {} other DNS, {} "
          "not DNS, {} TCP without data, {} fragments, {} malformed, {} incomplete TCP "
          "messages)\n",
          o->input, n.queries, capture.sources.size(), n.packets, n.responses, n.other_dns,
          n.not_dns, n.tcp_without_data, n.fragments, n.malformed, n.tcp_incomplete);
      queries = std::move(capture.queries);
    } else {
      if (!o->pcap_ports.empty()) {
        throw setup_error("--pcap-port applies to a capture (--queries FILE.pcap)");
      }
      queries = o->input.empty() ? default_queries() : load_query_file(o->input, format);
    }
    save_wire_queries(queries, o->output);
    fmt::print("wrote {} queries in wire format to {}\n", queries.size(), o->output);
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
