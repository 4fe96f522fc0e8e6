// The cost model of a sweep's targets and transports (cost_model.hpp), fitted with
// cost_fit.hpp.

#include <dnstransport/cost_model.hpp>
#include <dnstransport/sweep_result.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

#include "sweep/cost_fit.hpp"

namespace dnstransport {

namespace {

using detail::cost_observation;

// The counts a run gives each cost of a model, in the order of cpu_cost_model's members.
// No cost of time alone: runs of one length at saturation would give it everything (a busy
// side's CPU is its time), and the costs per unit nothing.
enum term : std::size_t { answers, connections, full_handshakes, resumed_handshakes };
constexpr std::size_t term_count = 4;

std::array<double, term_count> counts_of(const run_result& r, const transport_traits& traits) {
  std::array<double, term_count> c{};
  c[answers] = static_cast<double>(r.responses_received);
  // A TLS or QUIC connection's set-up is one handshake: counted there, not twice.
  if (traits.has_connections && !traits.has_tls) {
    c[connections] = static_cast<double>(r.connections.opened);
  }
  if (traits.has_tls) {
    c[full_handshakes] = static_cast<double>(r.handshakes_full);
    c[resumed_handshakes] = static_cast<double>(r.handshakes_resumed);
  }
  return c;
}

unit_cost* cost_of(cpu_cost_model& m, std::size_t t) {
  switch (t) {
    case answers:
      return &m.per_answer;
    case connections:
      return &m.per_connection;
    case full_handshakes:
      return &m.per_full_handshake;
    default:
      return &m.per_resumed_handshake;
  }
}
const unit_cost* cost_of(const cpu_cost_model& m, std::size_t t) {
  return cost_of(const_cast<cpu_cost_model&>(m), t);
}

// Fits `measured` over the runs with the terms some run has; nothing when the runs are too
// few for them or cannot be fitted.
std::optional<cpu_cost_model> fit_side(const std::vector<const run_result*>& runs,
                                       const transport_traits& traits,
                                       const std::function<double(const run_result&)>& measured) {
  std::array<bool, term_count> present{};
  std::vector<std::array<double, term_count>> counts;
  std::vector<double> values;
  for (const run_result* r : runs) {
    const double value = measured(*r);
    if (value <= 0) continue;
    counts.push_back(counts_of(*r, traits));
    values.push_back(value);
    for (std::size_t t = 0; t < term_count; ++t) present[t] = present[t] || counts.back()[t] > 0;
  }
  std::vector<std::size_t> terms;
  for (std::size_t t = 0; t < term_count; ++t) {
    if (present[t]) terms.push_back(t);
  }
  if (terms.empty() || values.size() < terms.size() + 1) return std::nullopt;
  std::vector<cost_observation> observations;
  for (std::size_t i = 0; i < values.size(); ++i) {
    cost_observation o;
    o.measured = values[i];
    for (const std::size_t t : terms) o.counts.push_back(counts[i][t]);
    observations.push_back(std::move(o));
  }
  const auto fit = detail::fit_nonnegative(observations);
  if (!fit) return std::nullopt;
  const auto intervals = detail::bootstrap_intervals(observations, cost_bootstrap_resamples, 1);
  cpu_cost_model m;
  m.relative_error = fit->relative_error;
  m.runs = observations.size();
  for (std::size_t i = 0; i < terms.size(); ++i) {
    unit_cost& c = *cost_of(m, terms[i]);
    c.fitted = true;
    c.value = fit->coefficients[i];
    c.low = intervals ? (*intervals)[i].low : c.value;
    c.high = intervals ? (*intervals)[i].high : c.value;
  }
  for (const auto& o : observations) {
    double predicted = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) predicted += fit->coefficients[i] * o.counts[i];
    m.largest_error = std::max(m.largest_error, std::abs(predicted - o.measured) / o.measured);
  }
  return m;
}

// Memory: the server's largest RSS against the most connections it had open, over the runs
// that monitored it: bytes per connection, and what it holds regardless.
unit_cost fit_memory(const std::vector<const run_result*>& runs) {
  std::vector<cost_observation> observations;
  for (const run_result* r : runs) {
    const process_usage& u = r->server_usage;
    if (!u.monitored() || u.rss_max_bytes == 0) continue;
    observations.push_back(
        {{static_cast<double>(u.connections_max), 1.0}, static_cast<double>(u.rss_max_bytes)});
  }
  unit_cost c;
  bool varied = false;
  for (const auto& o : observations) varied = varied || o.counts[0] != observations[0].counts[0];
  if (observations.size() < 3 || !varied) return c;
  const auto fit = detail::fit_nonnegative(observations);
  if (!fit) return c;
  const auto intervals = detail::bootstrap_intervals(observations, cost_bootstrap_resamples, 1);
  c.fitted = true;
  c.value = fit->coefficients[0];
  c.low = intervals ? (*intervals)[0].low : c.value;
  c.high = intervals ? (*intervals)[0].high : c.value;
  return c;
}

double server_cpu(const run_result& r) {
  const process_usage& u = r.server_usage;
  return u.monitored() && u.cpu_measured ? u.cpu_seconds() : 0;
}

}  // namespace

double cpu_cost_model::predict(const run_result& run) const noexcept {
  const auto c = counts_of(run, traits_of(run.transport));
  double total = 0;
  for (std::size_t t = 0; t < term_count; ++t) {
    const unit_cost& cost = *cost_of(*this, t);
    if (cost.fitted) total += cost.value * c[t];
  }
  return total;
}

double cpu_cost_model::setup_cost() const noexcept {
  return (per_connection.fitted ? per_connection.value : 0) +
         (per_full_handshake.fitted ? per_full_handshake.value : 0);
}

std::vector<transport_costs> compute_costs(const std::vector<sweep_point_result>& points) {
  std::vector<transport_costs> out;
  std::vector<std::vector<const run_result*>> runs;
  for (const auto& p : points) {
    auto same = [&](const transport_costs& c) {
      return c.target == p.point.target && c.distinct_sources == p.point.distinct_sources &&
             c.transport == p.point.transport;
    };
    auto at = std::find_if(out.begin(), out.end(), same);
    if (at == out.end()) {
      transport_costs fresh;
      fresh.target = p.point.target;
      fresh.distinct_sources = p.point.distinct_sources;
      fresh.transport = p.point.transport;
      out.push_back(std::move(fresh));
      runs.emplace_back();
      at = out.end() - 1;
    }
    auto& mine = runs[static_cast<std::size_t>(at - out.begin())];
    for (const auto& r : p.repeats) mine.push_back(&r);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    transport_costs& c = out[i];
    const transport_traits& traits = traits_of(c.transport.transport);
    c.server = fit_side(runs[i], traits, server_cpu);
    c.generator =
        fit_side(runs[i], traits, [](const run_result& r) { return r.client_cpu_seconds; });
    if (traits.has_connections) c.server_bytes_per_connection = fit_memory(runs[i]);
    if (c.server && c.server->per_answer.fitted && c.server->per_answer.value > 0) {
      const double ratio = c.server->setup_cost() / c.server->per_answer.value;
      c.n50 = ratio;
      c.n90 = 9 * ratio;
      c.n99 = 99 * ratio;
    }
  }
  return out;
}

}  // namespace dnstransport
