// The HTTP side of --metrics-listen (Boost.Beast, HTTP/1.1 with keep-alive, on a thread of
// its own: a scrape never waits for the load's thread, nor the load for a scrape) and the
// file of --metrics-file.
#include "live_metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <dnstransport/endpoint.hpp>
#include <dnstransport/error.hpp>

#include "cli_common.hpp"

namespace dnstransport::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A client that sends nothing for this long is closed (a scrape takes milliseconds).
constexpr auto idle_timeout = std::chrono::seconds(30);

// OpenMetrics when the scraper asks for it (Prometheus does, first in its Accept header),
// Prometheus's text format otherwise (curl, a browser, older scrapers).
metrics_format format_asked(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos
             ? metrics_format::openmetrics
             : metrics_format::prometheus;
}

}  // namespace

// The texts served, rendered at each update; read by the listener's thread.
struct served_texts {
  std::mutex mutex;
  std::string prometheus;
  std::string openmetrics;
};

class metrics_listener {
 public:
  metrics_listener(const endpoint& where, served_texts& texts) : texts_(texts) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(where.address, ec);
    if (ec) {
      throw setup_error(fmt::format("--metrics-listen {}: not an IP address", to_string(where)));
    }
    const tcp::endpoint at(address, where.port);
    acceptor_.open(at.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(at, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw setup_error(fmt::format("--metrics-listen {}: cannot listen there: {}",
                                    to_string(where), ec.message()));
    }
    bound_ = acceptor_.local_endpoint();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~metrics_listener() {
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      io_.stop();
    });
    thread_.join();
  }

  metrics_listener(const metrics_listener&) = delete;
  metrics_listener& operator=(const metrics_listener&) = delete;

  std::string url() const {
    const auto a = bound_.address();
    return a.is_v6() ? fmt::format("http://[{}]:{}/metrics", a.to_string(), bound_.port())
                     : fmt::format("http://{}:{}/metrics", a.to_string(), bound_.port());
  }

 private:
  // One client's connection: requests read and answered in turn until it closes.
  class session : public std::enable_shared_from_this<session> {
   public:
    session(tcp::socket socket, served_texts& texts) : stream_(std::move(socket)), texts_(texts) {}

    void read() {
      request_ = {};
      stream_.expires_after(idle_timeout);
      http::async_read(stream_, buffer_, request_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         if (!ec) self->respond();
                       });
    }

   private:
    void respond() {
      auto response = std::make_shared<http::response<http::string_body>>();
      response->version(request_.version());
      response->keep_alive(request_.keep_alive());
      response->set(http::field::server, "dnstransport");
      const auto target = request_.target();
      if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
        response->result(http::status::method_not_allowed);
        response->set(http::field::allow, "GET, HEAD");
        response->set(http::field::content_type, "text/plain; charset=utf-8");
        response->body() = "only GET and HEAD\n";
      } else if (target == "/metrics" || target.starts_with("/metrics?")) {
        const metrics_format format = format_asked(request_[http::field::accept]);
        response->result(http::status::ok);
        response->set(http::field::content_type, std::string(metrics_content_type(format)));
        const std::lock_guard lock(texts_.mutex);
        response->body() =
            format == metrics_format::openmetrics ? texts_.openmetrics : texts_.prometheus;
      } else {
        response->result(http::status::not_found);
        response->set(http::field::content_type, "text/plain; charset=utf-8");
        response->body() = "dnstransport serves its metrics at /metrics\n";
      }
      response->prepare_payload();
      if (request_.method() == http::verb::head) response->body().clear();
      http::async_write(stream_, *response,
                        [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
                          if (ec) return;
                          if (response->keep_alive()) {
                            self->read();
                          } else {
                            beast::error_code ignored;
                            self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          }
                        });
    }

    beast::tcp_stream stream_;
    served_texts& texts_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (!acceptor_.is_open()) return;
      if (!ec) std::make_shared<session>(std::move(socket), texts_)->read();
      accept();
    });
  }

  served_texts& texts_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  tcp::endpoint bound_;
  std::thread thread_;
};

live_metrics::live_metrics(const std::string& listen, const std::string& file,
                           metrics_labels labels)
    : file_(file), labels_(std::move(labels)), texts_(std::make_unique<served_texts>()) {
  if (!listen.empty()) {
    listener_ = std::make_unique<metrics_listener>(
        parse_listen_endpoint(listen, 0, "--metrics-listen"), *texts_);
  }
  if (!file_.empty()) {
    const std::string text = metrics_text(figures_, labels_, metrics_format::prometheus);
    if (std::string why = write_file(text); !why.empty()) throw setup_error(why);
  }
  if (listener_) publish();
}

live_metrics::~live_metrics() = default;

std::string live_metrics::url() const {
  return listener_ ? listener_->url() : std::string();
}

void live_metrics::update(const live_figures& figures) {
  figures_ = figures;
  publish();
}

void live_metrics::load_started(metrics_labels labels) {
  labels_ = std::move(labels);
  figures_ = live_figures{};
  publish();
}

void live_metrics::update(const metrics_study& study) {
  study_ = study;
  publish();
}

void live_metrics::publish() {
  const auto text = [this](metrics_format format) {
    return study_ ? metrics_text(figures_, labels_, *study_, format)
                  : metrics_text(figures_, labels_, format);
  };
  std::string prometheus = text(metrics_format::prometheus);
  if (listener_) {
    std::string openmetrics = text(metrics_format::openmetrics);
    const std::lock_guard lock(texts_->mutex);
    texts_->openmetrics = std::move(openmetrics);
    texts_->prometheus = prometheus;
  }
  if (file_.empty() || file_failed_) return;
  if (std::string why = write_file(prometheus); !why.empty()) {
    file_failed_ = true;
    fmt::print(stderr, "warning: {}; the run goes on without it\n", why);
  }
}

std::string live_metrics::write_file(const std::string& text) const {
  const std::string partial = file_ + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return fmt::format("--metrics-file {}: cannot write {}", file_, partial);
  }
  std::error_code ec;
  std::filesystem::rename(partial, file_, ec);
  if (ec) {
    return fmt::format("--metrics-file {}: cannot rename {} over it: {}", file_, partial,
                       ec.message());
  }
  return {};
}

void add_metrics_flags(CLI::App& command, metrics_flags& flags, std::string_view what) {
  command.add_option(
      "--metrics-listen", flags.listen,
      fmt::format("Serve live metrics at http://ADDR:PORT/metrics while {} lasts, for "
                  "Prometheus to scrape (OpenMetrics when asked for, Prometheus text otherwise; "
                  "port 0: a free one, printed): queries sent, answers, losses and failures by "
                  "cause, in flight, connections, handshakes, a latency histogram, the "
                  "generator's CPU and a monitored server's; updated at the end of each "
                  "--interval",
                  what));
  command.add_option(
      "--metrics-file", flags.file,
      fmt::format("Write the same metrics to this file at the end of each --interval and of {} "
                  "(Prometheus text, as node_exporter's textfile collector reads it: a NAME.prom "
                  "in its directory), replaced whole each time",
                  what));
}

std::unique_ptr<live_metrics> open_live_metrics(const metrics_flags& flags, const load_spec& spec,
                                                metrics_labels labels, bool quiet) {
  if (flags.listen.empty() && flags.file.empty()) return nullptr;
  const char* named = flags.listen.empty() ? "--metrics-file"
                      : flags.file.empty() ? "--metrics-listen"
                                           : "--metrics-listen and --metrics-file";
  if (job_group) {
    throw setup_error(fmt::format(
        "{}: not under mpirun (each rank would give its own share of the load under the same "
        "name); run the load from one process to watch it live",
        named));
  }
  if (spec.output.interval_seconds <= 0) {
    throw setup_error(fmt::format(
        "{} need --interval above 0: the metrics are updated at the end of each interval", named));
  }
  auto metrics = std::make_unique<live_metrics>(flags.listen, flags.file, std::move(labels));
  if (!quiet && !metrics->url().empty()) fmt::print(stderr, "metrics at {}\n", metrics->url());
  return metrics;
}

namespace {

// A study's own labels: what names it beside the loads' labels.
metrics_labels study_labels(const load_spec& base) {
  if (base.output.label.empty()) return {};
  return {{"label", base.output.label}};
}

}  // namespace

void watch_sweep(live_metrics& live, sweep_plan& plan, sweep_callbacks& callbacks) {
  auto study = std::make_shared<metrics_study>();
  study->study = metrics_study::kind::sweep;
  study->labels = study_labels(plan.base);
  // A searched point takes as many steps as its search needs: not known before.
  study->loads_planned = plan.search ? 0 : expand(plan).size() * plan.repeats;
  live.update(*study);
  const auto labelled = std::make_shared<const sweep_plan>(plan);
  plan.base.output.on_figures = [&live, study](const live_figures& f) {
    live.update(f);
    if (f.finished) {
      ++study->loads_done;
      if (study->loads_done == study->loads_planned) study->eta_seconds = 0;
      live.update(*study);
    }
  };
  callbacks.on_progress = [&live, study, labelled,
                           shown = std::move(callbacks.on_progress)](const sweep_progress& p) {
    if (shown) shown(p);
    // At the start of each run (and of each searched point), nothing of it measured yet.
    if (!p.run) live.load_started(metrics_labels_of(*labelled, p.point));
    study->eta_seconds = p.eta_seconds;
    live.update(*study);
  };
}

void watch_search(live_metrics& live, search_spec& spec) {
  auto study = std::make_shared<metrics_study>();
  study->study = metrics_study::kind::search;
  study->labels = study_labels(spec.load);
  live.update(*study);
  spec.load.output.on_figures = [&live](const live_figures& f) { live.update(f); };
  spec.on_step_start = [&live, study, labels = metrics_labels_of(spec.load),
                        then = std::move(spec.on_step_start)](const search_step& s) {
    if (then) then(s);
    live.load_started(labels);
    study->offered_rate = s.rate;
    live.update(*study);
  };
  spec.on_step = [&live, study, then = std::move(spec.on_step)](const search_step& s) {
    if (then) then(s);
    ++study->loads_done;
    if (s.passed) study->passed_rate = std::max(study->passed_rate, s.rate);
    live.update(*study);
  };
}

}  // namespace dnstransport::cli
