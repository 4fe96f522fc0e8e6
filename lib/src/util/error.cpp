// Setup errors whose messages name settings, and the rendering of those names.
#include <dnstransport/error.hpp>

namespace dnstransport {
namespace {

// Around a setting's path inside a message: a control character no message holds.
constexpr char mark = '\x1e';

// `marked` with every marked path replaced by name_of(path); the paths found go to `paths`.
template <typename Name>
std::string render(std::string_view marked, Name&& name_of, std::vector<std::string>* paths) {
  std::string out;
  out.reserve(marked.size());
  while (!marked.empty()) {
    const auto open = marked.find(mark);
    const auto close = open == std::string_view::npos ? open : marked.find(mark, open + 1);
    if (close == std::string_view::npos) {
      out += marked;
      break;
    }
    out += marked.substr(0, open);
    const std::string_view path = marked.substr(open + 1, close - open - 1);
    if (paths != nullptr) paths->emplace_back(path);
    out += name_of(path);
    marked.remove_prefix(close + 1);
  }
  return out;
}

std::string path_itself(std::string_view path) {
  return std::string(path);
}

}  // namespace

std::string setting(std::string_view path) {
  std::string out;
  out.reserve(path.size() + 2);
  out += mark;
  out += path;
  out += mark;
  return out;
}

std::string naming_settings(std::string_view marked, const setting_namer& name_of) {
  if (!name_of) return render(marked, path_itself, nullptr);
  return render(marked, name_of, nullptr);
}

setup_error::setup_error(const std::string& message)
    : std::runtime_error(render(message, path_itself, nullptr)), marked_(message) {
  render(marked_, path_itself, &settings_);
}

std::string setup_error::message_naming(const setting_namer& name_of) const {
  return naming_settings(marked_, name_of);
}

}  // namespace dnstransport
