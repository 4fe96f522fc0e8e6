#include "report/json_io.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/user_transport.hpp>

namespace dnstransport::detail {

namespace json = boost::json;

namespace {

void pretty_into(std::string& out, const json::value& value, int depth) {
  const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string closing(static_cast<std::size_t>(depth) * 2, ' ');
  if (value.is_object()) {
    const auto& object = value.get_object();
    if (object.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& [key, member] : object) {
      if (!first) out += ",\n";
      first = false;
      out += indent;
      out += json::serialize(json::value(key));
      out += ": ";
      pretty_into(out, member, depth + 1);
    }
    out += "\n" + closing + "}";
  } else if (value.is_array()) {
    const auto& array = value.get_array();
    // Arrays of scalars or short pairs (histogram buckets) stay on one line each.
    const bool flat = std::all_of(array.begin(), array.end(), [](const json::value& v) {
      return !v.is_object() && !(v.is_array() && v.get_array().size() > 4);
    });
    if (array.empty()) {
      out += "[]";
      return;
    }
    if (flat && array.size() <= 8) {
      out += json::serialize(value);
      return;
    }
    out += "[\n";
    bool first = true;
    for (const auto& element : array) {
      if (!first) out += ",\n";
      first = false;
      out += indent;
      pretty_into(out, element, depth + 1);
    }
    out += "\n" + closing + "]";
  } else {
    out += json::serialize(value);
  }
}

}  // namespace

const json::value& at(const json::object& object, std::string_view key) {
  const auto* found = object.if_contains(key);
  if (found == nullptr) throw std::invalid_argument(fmt::format("missing key \"{}\"", key));
  return *found;
}

// A count added after the first release: files written before it lack the key.
std::uint64_t count_or_zero(const json::object& object, std::string_view key) {
  return object.contains(key) ? count_at(object, key) : 0;
}

// Likewise for a number.
double number_or_zero(const json::object& object, std::string_view key) {
  return object.contains(key) ? number_at(object, key) : 0;
}

json::object counts_to_json(const std::map<std::string, std::uint64_t>& counts) {
  json::object o;
  for (const auto& [name, n] : counts) o[name] = n;
  return o;
}

void counts_from_json(const json::object& o, std::string_view key,
                      std::map<std::string, std::uint64_t>& counts) {
  if (const auto* found = o.if_contains(key); found && found->is_object()) {
    for (const auto& [name, n] : found->get_object()) {
      counts[std::string(name)] = json::value_to<std::uint64_t>(n);
    }
  }
}

json::array ints_to_json(const std::vector<int>& values) {
  json::array out;
  for (const int v : values) out.emplace_back(v);
  return out;
}

std::vector<int> ints_from_json(const json::object& object, std::string_view key) {
  std::vector<int> values;
  if (const auto* found = object.if_contains(key); found && found->is_array()) {
    for (const auto& v : found->get_array()) values.push_back(json::value_to<int>(v));
  }
  return values;
}

double stable(double value) {
  return std::stod(fmt::format("{:.12g}", value));
}

double number_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (v.is_double()) {
    // A number beyond a double's range (1E400) reads as infinite, which no figure is and no
    // JSON can hold when written again.
    if (!std::isfinite(v.get_double())) {
      throw std::invalid_argument(fmt::format("key \"{}\" is out of range", key));
    }
    return v.get_double();
  }
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  throw std::invalid_argument(fmt::format("key \"{}\" is not a number", key));
}

std::uint64_t count_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  throw std::invalid_argument(fmt::format("key \"{}\" is not a non-negative integer", key));
}

const json::object& object_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_object()) throw std::invalid_argument(fmt::format("key \"{}\" is not an object", key));
  return v.get_object();
}

std::string string_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_string()) throw std::invalid_argument(fmt::format("key \"{}\" is not a string", key));
  return std::string(v.get_string());
}

transport_kind read_transport(const std::string& name) {
  try {
    return transport_of_record(name);
  } catch (const setup_error& e) {
    throw std::invalid_argument(fmt::format("unknown \"transport\": {}", e.what()));
  }
}

const json::array& array_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_array()) throw std::invalid_argument(fmt::format("key \"{}\" is not an array", key));
  return v.get_array();
}

bool bool_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_bool())
    throw std::invalid_argument(fmt::format("key \"{}\" is not true or false", key));
  return v.get_bool();
}

std::string pretty(const json::value& value) {
  std::string out;
  pretty_into(out, value, 0);
  out += '\n';
  return out;
}

json::object histogram_to_json(const latency_histogram& h) {
  json::array buckets;
  h.for_each_bucket([&](std::uint64_t lowest, std::uint64_t, std::uint64_t count) {
    buckets.push_back(json::array{lowest, count});
  });
  return {{"count", h.count()},         {"min", h.min()},
          {"mean", stable(h.mean())},   {"p50", h.percentile(50)},
          {"p90", h.percentile(90)},    {"p99", h.percentile(99)},
          {"p999", h.percentile(99.9)}, {"max", h.max()},
          {"sum", stable(h.sum())},     {"histogram", std::move(buckets)}};
}

latency_histogram histogram_from_json(const json::value& value) {
  if (!value.is_object()) throw std::invalid_argument("a latency histogram is not an object");
  const auto& o = value.get_object();
  latency_histogram h;
  const auto& buckets = at(o, "histogram");
  if (!buckets.is_array()) throw std::invalid_argument("\"histogram\" is not an array");
  for (const auto& bucket : buckets.get_array()) {
    if (!bucket.is_array() || bucket.get_array().size() != 2) {
      throw std::invalid_argument("a histogram bucket is not a [lowest, count] pair");
    }
    h.restore(json::value_to<std::uint64_t>(bucket.get_array()[0]),
              json::value_to<std::uint64_t>(bucket.get_array()[1]));
  }
  if (h.count() != count_at(o, "count")) {
    throw std::invalid_argument("histogram buckets do not add up to its count");
  }
  h.restore_stats(count_at(o, "min"), count_at(o, "max"), number_at(o, "sum"));
  return h;
}

}  // namespace dnstransport::detail
