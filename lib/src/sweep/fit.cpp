// Handshake amortization: fitting T(N) = T_inf * N / (N + h) to throughput measured at
// several queries-per-connection values.
#include <dnstransport/sweep_result.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace dnstransport {

namespace {

// Relative RMS distance of the samples from `model(N)`.
template <typename Model>
double relative_rms(const std::vector<throughput_sample>& samples, Model model) {
  double sum = 0;
  for (const auto& s : samples) {
    const double expected = model(s.queries_per_connection);
    const double relative = expected > 0 ? (s.qps - expected) / expected : 0;
    sum += relative * relative;
  }
  return samples.empty() ? 0 : std::sqrt(sum / static_cast<double>(samples.size()));
}

struct fit_key {
  std::string target;
  std::uint64_t distinct_sources = 0;
  sweep_transport transport;
  unsigned clients = 0;
  friend bool operator==(const fit_key&, const fit_key&) = default;
};

}  // namespace

double amortization_model::qps_at(std::uint64_t queries_per_connection) const noexcept {
  if (queries_per_connection == 0) return t_inf;
  const double n = static_cast<double>(queries_per_connection);
  return t_inf * n / (n + h);
}

std::optional<amortization_model> fit_amortization(const std::vector<throughput_sample>& samples) {
  double largest = 0;
  bool finite = false;
  for (const auto& s : samples) {
    if (!(s.qps > 0)) return std::nullopt;
    largest = std::max(largest, s.qps);
    finite = finite || s.queries_per_connection != 0;
  }
  const bool distinct = std::any_of(samples.begin(), samples.end(), [&](const auto& s) {
    return s.queries_per_connection != samples.front().queries_per_connection;
  });
  if (!finite || !distinct) return std::nullopt;

  // With x = 1/N (0 for unlimited), a = 1/T_inf and b = h/T_inf the model is 1/T = a + b x.
  // Minimizing sum((1 - T (a + b x))^2) = sum(((model - T) / model)^2) is linear least
  // squares in (a, b). Throughputs are scaled to the largest for conditioning.
  double s_tt = 0, s_tx = 0, s_xx = 0, s_t = 0, s_x = 0;
  for (const auto& s : samples) {
    const double t = s.qps / largest;
    const double x =
        s.queries_per_connection == 0 ? 0 : 1 / static_cast<double>(s.queries_per_connection);
    s_tt += t * t;
    s_tx += t * t * x;
    s_xx += t * t * x * x;
    s_t += t;
    s_x += t * x;
  }
  const double determinant = s_tt * s_xx - s_tx * s_tx;
  double a = 0;
  double b = 0;
  if (determinant > 1e-12 * s_tt * s_xx) {
    a = (s_t * s_xx - s_tx * s_x) / determinant;
    b = (s_tt * s_x - s_tx * s_t) / determinant;
  }
  if (!(b > 0)) {
    // No measurable set-up cost (or throughput falling with longer connections): h = 0.
    b = 0;
    a = s_t / s_tt;
  }
  if (!(a > 0)) return std::nullopt;
  amortization_model model;
  model.t_inf = largest / a;
  model.h = b / a;
  model.residual = relative_rms(samples, [&](std::uint64_t n) { return model.qps_at(n); });
  return model;
}

std::vector<amortization_fit> compute_amortization(const std::vector<sweep_point_result>& points) {
  std::vector<fit_key> keys;
  for (const auto& p : points) {
    const fit_key key{p.point.target, p.point.distinct_sources, p.point.transport, p.point.clients};
    if (traits_of(key.transport.transport).has_connections &&
        std::find(keys.begin(), keys.end(), key) == keys.end()) {
      keys.push_back(key);
    }
  }
  std::vector<amortization_fit> fits;
  for (const auto& key : keys) {
    std::vector<const sweep_point_result*> members;
    for (const auto& p : points) {
      if (fit_key{p.point.target, p.point.distinct_sources, p.point.transport, p.point.clients} ==
              key &&
          p.summary.qps.mean > 0) {
        members.push_back(&p);
      }
    }
    const auto rank = [](const sweep_point_result* p) {
      const std::uint64_t n = p->point.queries_per_connection;
      return n == 0 ? UINT64_MAX : n;  // unlimited sorts last
    };
    std::sort(members.begin(), members.end(),
              [&](const auto* x, const auto* y) { return rank(x) < rank(y); });
    std::vector<throughput_sample> samples;
    for (const auto* p : members) {
      samples.push_back({p->point.queries_per_connection, p->summary.qps.mean});
    }
    const auto model = fit_amortization(samples);
    if (!model) continue;

    amortization_fit fit;
    fit.target = key.target;
    fit.distinct_sources = key.distinct_sources;
    fit.transport = key.transport;
    fit.clients = key.clients;
    fit.model = *model;
    fit.n50 = model->h;
    fit.n90 = 9 * model->h;
    fit.n99 = 99 * model->h;
    const amortization_model simple{model->t_inf, 1, 0};
    fit.simple_residual = relative_rms(samples, [&](std::uint64_t n) { return simple.qps_at(n); });
    for (const auto* p : members) {
      amortization_sample s;
      s.queries_per_connection = p->point.queries_per_connection;
      s.measured_qps = p->summary.qps.mean;
      s.measured_min = p->summary.qps.min;
      s.measured_max = p->summary.qps.max;
      s.model_qps = model->qps_at(s.queries_per_connection);
      s.simple_model_qps = simple.qps_at(s.queries_per_connection);
      s.deviation = s.model_qps > 0 ? (s.measured_qps - s.model_qps) / s.model_qps : 0;
      s.client_bound = p->summary.client_bound;
      if (std::fabs(s.deviation) > amortization_departure_tolerance) {
        fit.departures.push_back(s.queries_per_connection);
      }
      fit.samples.push_back(s);
    }
    fits.push_back(std::move(fit));
  }
  return fits;
}

}  // namespace dnstransport
