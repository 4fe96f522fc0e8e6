// A load's live figures as Prometheus's text exposition format 0.0.4 or OpenMetrics 1.0
// (metrics.hpp lists the metrics). The two differ in little: OpenMetrics names a counter's
// family without its _total suffix, announces units and ends with "# EOF".
#include <dnstransport/metrics.hpp>

#include <array>
#include <iterator>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/sweep_plan.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport {

namespace {

bool valid_label_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// A label value as both formats escape it: backslash, double quote and line feed.
std::string escaped(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A number as both formats read it: integers exactly, others in the shortest form that
// reads back the same.
std::string number(double value) {
  return fmt::format("{}", value);
}
std::string number(std::uint64_t value) {
  return fmt::format("{}", value);
}

class writer {
 public:
  writer(const metrics_labels& labels, metrics_format format) : format_(format) {
    set_labels(labels);
  }

  // The labels every sample from now on carries.
  void set_labels(const metrics_labels& labels) {
    common_.clear();
    for (const auto& [name, value] : labels) {
      if (!valid_label_name(name)) {
        throw setup_error(
            fmt::format("metrics label name \"{}\" is not [a-zA-Z_][a-zA-Z0-9_]*", name));
      }
      if (!common_.empty()) common_ += ',';
      common_ += fmt::format("{}=\"{}\"", name, escaped(value));
    }
  }

  // A family: its name (a counter's with _total, as its samples have it), type, unit (the
  // name's last word, or empty) and help.
  void family(std::string_view name, std::string_view type, std::string_view unit,
              std::string_view help) {
    std::string_view family = name;
    if (format_ == metrics_format::openmetrics && type == "counter" && family.ends_with("_total")) {
      family.remove_suffix(6);
    }
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, help, family, type);
    if (format_ == metrics_format::openmetrics && !unit.empty()) {
      out_ += fmt::format("# UNIT {} {}\n", family, unit);
    }
  }

  // One sample, with the common labels and `label` ("cause=\"timeout\"", or empty).
  void sample(std::string_view name, std::string_view label, const std::string& value) {
    std::string labels = common_;
    if (!label.empty()) {
      if (!labels.empty()) labels += ',';
      labels += label;
    }
    if (labels.empty()) {
      out_ += fmt::format("{} {}\n", name, value);
    } else {
      out_ += fmt::format("{}{{{}}} {}\n", name, labels, value);
    }
  }

  void single(std::string_view name, std::string_view type, std::string_view unit,
              std::string_view help, const std::string& value) {
    family(name, type, unit, help);
    sample(name, {}, value);
  }

  std::string finish() {
    if (format_ == metrics_format::openmetrics) out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  metrics_format format_;
  std::string common_;
  std::string out_;
};

struct labelled_count {
  std::string_view label;  // the label's value
  std::uint64_t query_counts::*member;
};

void counts(writer& w, std::string_view name, std::string_view label_name, std::string_view help,
            const query_counts& q, std::initializer_list<labelled_count> members) {
  w.family(name, "counter", {}, help);
  for (const auto& m : members) {
    w.sample(name, fmt::format("{}=\"{}\"", label_name, m.label), number(q.*m.member));
  }
}

void latency(writer& w, const latency_histogram& h) {
  constexpr std::string_view name = "dnstransport_latency_seconds";
  w.family(name, "histogram", "seconds",
           "Latency of the answers: from sending the query to receiving its answer.");
  // One pass over the histogram's buckets (in increasing order): each counted under the
  // first bound it lies wholly at or below, then summed upwards.
  constexpr std::size_t bounds = std::size(metrics_latency_bounds_seconds);
  std::array<std::uint64_t, bounds> in{};
  h.for_each_bucket([&in](std::uint64_t, std::uint64_t highest, std::uint64_t n) {
    for (std::size_t b = 0; b < bounds; ++b) {
      if (highest <= static_cast<std::uint64_t>(metrics_latency_bounds_seconds[b] * 1e9 + 0.5)) {
        in[b] += n;
        return;
      }
    }
  });
  std::uint64_t at_most = 0;
  for (std::size_t b = 0; b < bounds; ++b) {
    at_most += in[b];
    w.sample(fmt::format("{}_bucket", name),
             fmt::format("le=\"{}\"", number(metrics_latency_bounds_seconds[b])), number(at_most));
  }
  w.sample(fmt::format("{}_bucket", name), "le=\"+Inf\"", number(h.count()));
  w.sample(fmt::format("{}_count", name), {}, number(h.count()));
  w.sample(fmt::format("{}_sum", name), {}, number(h.sum() / 1e9));
}

}  // namespace

std::string_view metrics_content_type(metrics_format format) noexcept {
  return format == metrics_format::openmetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

metrics_labels metrics_labels_of(const load_spec& spec) {
  metrics_labels labels{{"server", spec.target.server},
                        {"transport", std::string(transport_name(spec.target.transport))}};
  if (!spec.output.label.empty()) labels.emplace_back("label", spec.output.label);
  return labels;
}

metrics_labels metrics_labels_of(const sweep_plan& plan, const sweep_point& point) {
  const load_spec spec = point_spec(plan, point);
  metrics_labels labels{
      {"server", spec.target.server},
      {"transport", sweep_transport_name(point.transport)},
      {"clients", fmt::format("{}", point.clients)},
      {"queries_per_connection", point.queries_per_connection == 0
                                     ? std::string("unlimited")
                                     : fmt::format("{}", point.queries_per_connection)}};
  if (!plan.distinct_sources.empty()) {
    labels.emplace_back("distinct_sources", fmt::format("{}", point.distinct_sources));
  }
  if (!point.target.empty()) labels.emplace_back("target", point.target);
  if (!spec.output.label.empty()) labels.emplace_back("label", spec.output.label);
  return labels;
}

namespace {

void figures(writer& w, const live_figures& f) {
  const query_counts& q = f.queries;
  w.single("dnstransport_queries_sent_total", "counter", {},
           "Queries sent after the warm-up; each ends answered, lost or failed.",
           number(q.queries_sent));
  w.single("dnstransport_answers_total", "counter", {},
           "Complete, well-formed answers to the queries sent.", number(q.responses_received));
  counts(w, "dnstransport_lost_total", "cause",
         "Queries lost: no answer within the timeout, or in flight when their connection closed.",
         q,
         {{"timeout", &query_counts::lost}, {"connection_closed", &query_counts::lost_on_close}});
  counts(w, "dnstransport_failed_total", "cause",
         "Queries that ended in neither an answer nor a loss, by cause.", q,
         {{"malformed", &query_counts::malformed},
          {"mismatched", &query_counts::mismatched},
          {"truncated", &query_counts::truncated},
          {"oversized", &query_counts::oversized},
          {"http_failed", &query_counts::http_failed},
          {"quic_failed", &query_counts::quic_failed},
          {"abandoned", &query_counts::abandoned}});
  counts(w, "dnstransport_not_sent_total", "cause",
         "Open loop: queries scheduled but not sent (too many in flight; no connection within "
         "the timeout).",
         q,
         {{"outstanding", &query_counts::not_sent_outstanding},
          {"timeout", &query_counts::not_sent_timeout}});
  counts(w, "dnstransport_stray_packets_total", "kind",
         "Answers that matched no query in flight: late, of unknown id, second answers.", q,
         {{"late", &query_counts::late},
          {"unexpected", &query_counts::unexpected},
          {"duplicates", &query_counts::duplicates}});
  const std::uint64_t ended = queries_ended(q);
  w.single("dnstransport_in_flight", "gauge", {}, "Queries sent that have no outcome yet.",
           number(q.queries_sent > ended ? q.queries_sent - ended : 0));
  w.single("dnstransport_connections_open", "gauge", {},
           "Connections open at the end of the last interval.", number(f.connections_open));
  w.single("dnstransport_connections_opened_total", "counter", {},
           "Connections set up after the warm-up.", number(f.connections_opened));
  w.family("dnstransport_handshakes_total", "counter", {},
           "TLS and QUIC handshakes completed, in full or resuming a session.");
  w.sample("dnstransport_handshakes_total", "kind=\"full\"", number(f.handshakes_full));
  w.sample("dnstransport_handshakes_total", "kind=\"resumed\"", number(f.handshakes_resumed));
  latency(w, f.latency);
  w.single("dnstransport_generator_cpu_seconds_total", "counter", "seconds",
           "CPU time of the generator's worker threads (user and system).",
           number(f.generator_cpu_seconds));
  if (f.server_cpu_seconds >= 0) {
    w.single("dnstransport_server_cpu_seconds_total", "counter", "seconds",
             "CPU time of the monitored server processes since the warm-up (user and system).",
             number(f.server_cpu_seconds));
    w.single("dnstransport_server_resident_memory_bytes", "gauge", "bytes",
             "Resident memory of the monitored server processes at the last reading.",
             number(f.server_rss_bytes));
  }
  w.single("dnstransport_measured_seconds", "gauge", "seconds",
           "Time measured so far, from the end of the warm-up.", number(f.seconds));
  w.single("dnstransport_finished", "gauge", {},
           "1 once the figures are the ended run's result, 0 while it runs.",
           number(std::uint64_t{f.finished ? 1u : 0u}));
}

void study(writer& w, const metrics_study& s) {
  w.set_labels(s.labels);
  if (s.study == metrics_study::kind::sweep) {
    w.single("dnstransport_sweep_runs_total", "counter", {}, "Runs of the sweep ended.",
             number(s.loads_done));
    w.single("dnstransport_sweep_runs_planned", "gauge", {},
             "Runs the sweep makes: its points times its repeats.", number(s.loads_planned));
    w.single("dnstransport_sweep_eta_seconds", "gauge", "seconds",
             "Estimated time left to the end of the sweep.", number(s.eta_seconds));
    return;
  }
  w.single("dnstransport_search_steps_total", "counter", {}, "Steps of the search ended.",
           number(s.loads_done));
  w.single("dnstransport_search_offered_rate", "gauge", {},
           "Queries per second the step running offers.", number(s.offered_rate));
  w.single("dnstransport_search_passed_rate", "gauge", {},
           "Highest rate, in queries per second, that a step passed so far; 0: none.",
           number(s.passed_rate));
}

}  // namespace

std::string metrics_text(const live_figures& f, const metrics_labels& labels,
                         metrics_format format) {
  writer w(labels, format);
  figures(w, f);
  return w.finish();
}

std::string metrics_text(const live_figures& f, const metrics_labels& labels,
                         const metrics_study& s, metrics_format format) {
  writer w(labels, format);
  figures(w, f);
  study(w, s);
  return w.finish();
}

}  // namespace dnstransport
