// dnstransport(1) and the bash completion the build writes from the tool's own option
// definitions agree with what `--help` prints: every subcommand, every option with its value
// and default; man renders the page without a warning; bash completes subcommands and flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "in_ci.hpp"

#if defined(DNSTRANSPORT_CLI_PATH) && defined(DNSTRANSPORT_MANUAL_PAGE)

namespace dnstransport::hostile {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string help_of(const std::vector<std::string>& arguments) {
  const process_result r = run_process(cli, arguments);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The subcommands `dnstransport --help` lists.
std::vector<std::string> subcommands() {
  std::vector<std::string> names;
  bool in_list = false;
  for (const auto& line : lines_of(help_of({"--help"}))) {
    if (line == "Subcommands:") {
      in_list = true;
    } else if (in_list && line.rfind("  ", 0) == 0) {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (in_list) {
      break;
    }
  }
  return names;
}

// Runs of spaces and line ends as one space, none at either end.
std::string collapsed(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Each option of a --help text, whole (names, value, default and description, as one line):
// a line that begins "  -" and the lines indented further that continue it (the description,
// when the names and value fill the first line).
std::vector<std::string> options_in_help(const std::string& help) {
  std::vector<std::string> options;
  bool in_option = false;
  for (const auto& line : lines_of(help)) {
    if (line.rfind("  -", 0) == 0) {
      options.push_back(collapsed(line));
      in_option = true;
    } else if (in_option && line.rfind("   ", 0) == 0) {
      options.back() = collapsed(options.back() + " " + line);
    } else {
      in_option = false;
    }
  }
  return options;
}

// Each option of a page's section, as one line of plain text: the tagged paragraph's tag
// and text with the font changes and escapes taken out.
std::vector<std::string> options_in_page(const std::string& section) {
  std::vector<std::string> options;
  const auto lines = lines_of(section);
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i] != ".TP" || lines[i + 1].rfind("\\fB\\-", 0) != 0) continue;
    std::string entry;
    for (std::size_t j = i + 1; j < lines.size() && lines[j].rfind('.', 0) != 0; ++j) {
      entry += lines[j] + " ";
    }
    std::string plain;
    for (std::size_t k = 0; k < entry.size(); ++k) {
      if (entry[k] != '\\' || k + 1 == entry.size()) {
        plain += entry[k];
        continue;
      }
      const char escape = entry[++k];
      if (escape == 'f') {
        ++k;  // a font: \fB, \fI, \fR
      } else if (escape == 'e') {
        plain += '\\';
      } else if (escape != '&') {
        plain += escape;  // \- and the others: the character itself
      }
    }
    options.push_back(collapsed(plain));
  }
  return options;
}

// As the page writes text: minus signs and backslashes escaped.
std::string roff(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '-') {
      out += "\\-";
    } else if (c == '\\') {
      out += "\\e";
    } else {
      out += c;
    }
  }
  return out;
}

// The page's section for a subcommand: from its .SH heading to the next one.
std::string section_of(const std::string& page, const std::string& subcommand) {
  std::string heading = ".SH \"";
  for (const char c : subcommand) heading += static_cast<char>(std::toupper(c));
  heading += "\"\n";
  const auto begin = page.find(heading);
  if (begin == std::string::npos) return {};
  return page.substr(begin, page.find("\n.SH ", begin + 1) - begin);
}

TEST(cli_manual_test, the_page_has_every_subcommand_and_option_as_help_prints_them) {
  const std::string page = read_file(DNSTRANSPORT_MANUAL_PAGE);
  ASSERT_FALSE(page.empty()) << DNSTRANSPORT_MANUAL_PAGE;
  EXPECT_EQ(page.rfind(".\\\"", 0), 0u);
  EXPECT_NE(page.find(".TH DNSTRANSPORT 1 "), std::string::npos);
  const auto names = subcommands();
  ASSERT_EQ(names.size(), 8u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const std::string section = section_of(page, name);
    ASSERT_FALSE(section.empty()) << "no section for " << name;
    const std::string help = help_of({name, "--help"});
    // Its description, the help's first line.
    EXPECT_NE(section.find(roff(help.substr(0, help.find('\n')))), std::string::npos);
    // Every option, whole, as --help prints it, and no other.
    auto in_help = options_in_help(help);
    auto in_page = options_in_page(section);
    ASSERT_GT(in_help.size(), 1u);
    std::sort(in_help.begin(), in_help.end());
    std::sort(in_page.begin(), in_page.end());
    EXPECT_EQ(in_page, in_help);
  }
}

TEST(cli_manual_test, man_renders_the_page_without_a_warning) {
  const auto man = find_program("man");
  if (!man) {
    if (in_ci()) FAIL() << "man not found (tools/packages/build.txt: man-db)";
    GTEST_SKIP() << "man not found (Debian: man-db)";
  }
  const process_result r = run_process(
      "/bin/sh",
      {"-c", std::string("MANWIDTH=100 ") + *man + " --warnings -l " + DNSTRANSPORT_MANUAL_PAGE});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("dnstransport run [OPTIONS]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--transport TEXT=udp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("EXIT STATUS"), std::string::npos);
}

// What bash's completion offers for the words typed so far (the last one being completed).
std::set<std::string> completed(const std::vector<std::string>& words) {
  std::string script = std::string("source '") + DNSTRANSPORT_BASH_COMPLETION + "'\nCOMP_WORDS=(";
  for (const auto& w : words) script += "'" + w + "' ";
  script += ")\nCOMP_CWORD=" + std::to_string(words.size() - 1) +
            "\n_dnstransport\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
  const process_result r = run_process("/bin/bash", {"--norc", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  for (const auto& line : lines_of(r.out)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

TEST(cli_manual_test, bash_completes_subcommands_then_their_flags) {
  const auto names = subcommands();
  std::set<std::string> first(names.begin(), names.end());
  first.insert({"-h", "--help", "--version"});
  EXPECT_EQ(completed({"dnstransport", ""}), first);
  EXPECT_EQ(completed({"dnstransport", "se"}), (std::set<std::string>{"search", "serve"}));
  EXPECT_EQ(completed({"dnstransport", "run", "--transp"}), std::set<std::string>{"--transport"});
  EXPECT_EQ(completed({"dnstransport", "--version", "sw"}), std::set<std::string>{"sweep"});
  // A flag's value and report's files are left to bash's file name completion.
  EXPECT_TRUE(completed({"dnstransport", "run", "--json", ""}).empty());
  EXPECT_TRUE(completed({"dnstransport", "report", ""}).empty());
  EXPECT_EQ(completed({"dnstransport", "report", "--o"}), std::set<std::string>{"--out"});
  // Every flag of every subcommand, as --help names it, is completed from its full name.
  for (const auto& name : names) {
    for (const auto& option : options_in_help(help_of({name, "--help"}))) {
      std::istringstream each(option.substr(0, option.find(' ')));
      for (std::string flag; std::getline(each, flag, ',');) {
        EXPECT_EQ(completed({"dnstransport", name, flag}).count(flag), 1u) << name << " " << flag;
      }
    }
  }
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
