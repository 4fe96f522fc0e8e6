// The HTTP side of --metrics-listen (Boost.Beast, HTTP/1.1 with keep-alive, on a thread of
// its own: a scrape never waits for the load's thread, nor the load for a scrape) and the
// file of --metrics-file.
#include "live_metrics.hpp"

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
  const live_figures nothing_yet;
  const std::string text = metrics_text(nothing_yet, labels_, metrics_format::prometheus);
  if (!file_.empty()) {
    if (std::string why = write_file(text); !why.empty()) throw setup_error(why);
  }
  if (listener_) update(nothing_yet);
}

live_metrics::~live_metrics() = default;

std::string live_metrics::url() const {
  return listener_ ? listener_->url() : std::string();
}

void live_metrics::update(const live_figures& figures) {
  std::string prometheus = metrics_text(figures, labels_, metrics_format::prometheus);
  if (listener_) {
    std::string openmetrics = metrics_text(figures, labels_, metrics_format::openmetrics);
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

}  // namespace dnstransport::cli
