// gnuplot scripts (quoting, inline data, PNG and SVG output) and running gnuplot.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::string_view size_and_font = "size 1100,650 enhanced font 'Sans,11'";

}  // namespace

std::string gnuplot_string(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "''";
      continue;
    }
    // Characters with a meaning in enhanced text mode are shown as themselves.
    if (std::string_view("_^{}@&~").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out + "'";
}

std::string gnuplot_number(double value) {
  return fmt::format("{:.6g}", value);
}

std::string gnuplot_data(std::string_view name, const std::vector<std::vector<double>>& rows) {
  std::string out = fmt::format("${} << EOD\n", name);
  for (const auto& row : rows) {
    std::string line;
    for (const double v : row) {
      if (!line.empty()) line += ' ';
      line += gnuplot_number(v);
    }
    out += line + "\n";
  }
  return out + "EOD\n";
}

std::string gnuplot_file(const plot_script& plot, std::string_view source_name) {
  return fmt::format(
      "# {title}\n"
      "# Written by `dnstransport report` from {source}; redraw with: gnuplot {name}.gp\n"
      "set encoding utf8\n"
      "set terminal pngcairo {size} background rgb 'white'\n"
      "set output '{name}.png'\n"
      "{body}"
      "set terminal svg {size} dynamic background rgb 'white'\n"
      "set output '{name}.svg'\n"
      "replot\n"
      "unset output\n",
      fmt::arg("title", plot.title), fmt::arg("source", source_name), fmt::arg("name", plot.name),
      fmt::arg("size", size_and_font), fmt::arg("body", plot.body));
}

std::filesystem::path find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view directories = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!directories.empty()) {
    const std::size_t colon = directories.find(':');
    const std::string_view directory = directories.substr(0, colon);
    directories = colon == std::string_view::npos ? "" : directories.substr(colon + 1);
    if (directory.empty()) continue;
    const auto candidate = std::filesystem::path(directory) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string run_gnuplot(const std::filesystem::path& gnuplot,
                        const std::filesystem::path& directory, const std::string& script) {
  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  // Everything the child needs is prepared before fork: after it, only exec-safe calls.
  const std::string program = gnuplot.string();
  const std::string where = directory.string();
  std::string script_argument = script;
  char name[] = "gnuplot";
  char* const argv[] = {name, script_argument.data(), nullptr};
  const pid_t child = fork();
  if (child < 0) {
    close(output[0]);
    close(output[1]);
    return fmt::format("fork: {}", std::strerror(errno));
  }
  if (child == 0) {
    if (chdir(where.c_str()) != 0) _exit(126);
    dup2(output[1], STDOUT_FILENO);
    dup2(output[1], STDERR_FILENO);
    execv(program.c_str(), argv);
    _exit(127);
  }
  close(output[1]);
  std::string messages;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(output[0], buffer, sizeof buffer);
    if (n > 0) {
      messages.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(output[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  while (!messages.empty() && (messages.back() == '\n' || messages.back() == ' ')) {
    messages.pop_back();
  }
  const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                            : fmt::format("signal {}", WTERMSIG(status));
  return fmt::format("gnuplot {} failed ({}){}{}", script, how, messages.empty() ? "" : ": ",
                     messages);
}

}  // namespace dnstransport::detail
