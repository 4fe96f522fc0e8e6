// dnstransport(1) and the bash completion, from the CLI::App's own definitions: the option
// lines are CLI11's Formatter's (as `--help` prints them), so the page cannot say other.

#include "manual_page.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/version.hpp>

#include "cli_common.hpp"

namespace dnstransport::cli {
namespace {

std::vector<const CLI::App*> subcommands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// The options `--help` shows: hidden ones (no group) are left out.
std::vector<const CLI::Option*> shown_options(const CLI::App& app, bool positional) {
  return app.get_options([positional](const CLI::Option* o) {
    return !o->get_group().empty() && o->get_positional() == positional &&
           (positional || o->nonpositional());
  });
}

// Text for roff: backslashes and minus signs escaped (an option's "--" stays two ASCII
// minus signs when copied from the page), a line that would start with a request (. or ')
// guarded, an empty line a new paragraph.
std::string roff_text(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && c == '\n') {
      out += ".PP\n";
      continue;
    }
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// One option as a tagged paragraph: its names in bold, its value and default as `--help`
// prints them, then its text.
void option_entry(std::ostringstream& page, const CLI::Formatter& format, const CLI::Option& o) {
  const std::string name = roff_text(format.make_option_name(&o, o.get_positional()));
  page << ".TP\n\\fB" << name.substr(0, name.size() - 1) << "\\fR";
  const std::string opts = format.make_option_opts(&o);
  if (!opts.empty()) {
    const std::string value = roff_text(opts.substr(1));
    page << " \\fI" << value.substr(0, value.size() - 1) << "\\fR";
  }
  page << "\n" << roff_text(format.make_option_desc(&o));
}

// The groups of `options`, in the order `--help` prints them (first appearance).
std::vector<std::string> groups_of(const std::vector<const CLI::Option*>& options) {
  std::vector<std::string> groups;
  for (const auto* o : options) {
    if (std::find(groups.begin(), groups.end(), o->get_group()) == groups.end()) {
      groups.push_back(o->get_group());
    }
  }
  return groups;
}

void options_section(std::ostringstream& page, const CLI::App& app) {
  const CLI::Formatter format;
  const auto positionals = shown_options(app, true);
  if (!positionals.empty()) {
    page << ".SS Arguments\n";
    for (const auto* o : positionals) option_entry(page, format, *o);
  }
  const auto options = shown_options(app, false);
  for (const auto& group : groups_of(options)) {
    page << ".SS \"" << group << "\"\n";
    for (const auto* o : options) {
      if (o->get_group() == group) option_entry(page, format, *o);
    }
  }
}

std::string usage_of(const CLI::App& sub) {
  std::string usage = "dnstransport " + sub.get_name() + " [OPTIONS]";
  for (const auto* o : shown_options(sub, true)) {
    usage += " " + upper(o->get_name());
    if (o->get_expected_max() > 1) usage += "...";
  }
  return usage;
}

// The words of a bash `case` pattern or `compgen -W` list, space-separated.
std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Every name of the options of `app` (long and short), and those that take a value.
std::pair<std::vector<std::string>, std::vector<std::string>> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  std::vector<std::string> valued;
  for (const auto* o : shown_options(app, false)) {
    std::vector<std::string> own;
    for (const auto& s : o->get_snames()) own.push_back("-" + s);
    for (const auto& l : o->get_lnames()) own.push_back("--" + l);
    names.insert(names.end(), own.begin(), own.end());
    if (o->get_items_expected_max() != 0) valued.insert(valued.end(), own.begin(), own.end());
  }
  return {names, valued};
}

}  // namespace

std::string manual_page(const CLI::App& app, std::string_view version) {
  std::ostringstream page;
  const auto subs = subcommands_of(app);
  page << ".\\\" dnstransport(1), written by `dnstransport --write-manual-page` from the options\n"
       << ".\\\" the command line defines (the same ones --help prints). Do not edit.\n"
       << ".TH DNSTRANSPORT 1 \"\" \"dnstransport " << version << "\" \"User Commands\"\n"
       << ".SH NAME\n"
       << "dnstransport \\- measure what a DNS server can do over UDP, TCP, DNS over TLS, DNS over "
          "HTTPS and DNS over QUIC\n"
       << ".SH SYNOPSIS\n";
  for (const auto* sub : subs) page << ".B " << roff_text(usage_of(*sub)) << ".br\n";
  page << ".B dnstransport \\-\\-help\n.br\n.B dnstransport \\-\\-version\n"
       << ".SH DESCRIPTION\n"
       << roff_text(app.get_description()) << ".PP\n"
       << roff_text(
              "Without --server, run, sweep, search and calibrate load a built-in responder "
              "started in the same process, so that every subcommand works without a DNS "
              "server. Each subcommand's options follow; `dnstransport SUBCOMMAND --help` "
              "prints the same.")
       << ".SH SUBCOMMANDS\n";
  for (const auto* sub : subs) {
    page << ".TP\n.B " << sub->get_name() << "\n" << roff_text(sub->get_description());
  }
  page << ".SH OPTIONS\n";
  options_section(page, app);
  for (const auto* sub : subs) {
    page << ".SH \"" << upper(sub->get_name()) << "\"\n"
         << ".B " << roff_text(usage_of(*sub)) << ".PP\n"
         << roff_text(sub->get_description());
    if (!sub->get_footer().empty()) page << ".PP\n" << roff_text(sub->get_footer());
    options_section(page, *sub);
  }
  page << ".SH \"EXIT STATUS\"\n"
       << roff_text(exit_codes_help) << ".SH \"SEE ALSO\"\n"
       << ".BR dnsperf (1),\n.BR kdig (1),\n.BR mpirun (1).\n.PP\n"
       << roff_text(
              "The manual, one page per topic (transports, sweeps and reports, open loop and "
              "search, realistic clients, real servers, MPI), is docs/README.md in the source "
              "tree.");
  return page.str();
}

std::string bash_completion(const CLI::App& app) {
  const auto subs = subcommands_of(app);
  std::vector<std::string> sub_names;
  for (const auto* sub : subs) sub_names.push_back(sub->get_name());
  const auto [top_flags, top_valued] = flag_names(app);
  std::vector<std::string> top_words = sub_names;
  top_words.insert(top_words.end(), top_flags.begin(), top_flags.end());

  std::string cases = fmt::format("    '') words='{}' valued='{}' files=0 ;;\n", joined(top_words),
                                  joined(top_valued));
  for (const auto* sub : subs) {
    const auto [flags, valued] = flag_names(*sub);
    cases += fmt::format("    {}) words='{}' valued='{}' files={} ;;\n", sub->get_name(),
                         joined(flags), joined(valued), shown_options(*sub, true).empty() ? 0 : 1);
  }
  return fmt::format(
      R"(# bash completion for dnstransport(1), written by `dnstransport --write-bash-completion`
# from the options the command line defines (the same ones --help prints). Do not edit.
_dnstransport() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} sub= i
  local words valued files
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in
      {}) sub=${{COMP_WORDS[i]}}; break ;;
    esac
  done
  case $sub in
{}  esac
  COMPREPLY=()
  # After a flag that takes a value: bash's own completion (file names), from -o default.
  [[ $prev == -* && " $valued " == *" $prev "* ]] && return 0
  # A subcommand's arguments (report's files) are file names unless a flag is begun.
  [[ -n $sub && $files == 1 && $cur != -* ]] && return 0
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _dnstransport dnstransport
)",
      fmt::join(sub_names, "|"), cases);
}

std::optional<int> write_generated_file(const CLI::App& app, int argc, char** argv) {
  if (argc != 3) return std::nullopt;
  const std::string_view what = argv[1];
  std::string text;
  if (what == "--write-manual-page") {
    text = manual_page(app, library_version());
  } else if (what == "--write-bash-completion") {
    text = bash_completion(app);
  } else {
    return std::nullopt;
  }
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    fmt::print(stderr, "error: cannot write {}\n", argv[2]);
    return exit_usage;
  }
  return exit_ok;
}

}  // namespace dnstransport::cli
