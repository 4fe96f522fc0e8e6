#pragma once
// Internal: the pieces of a sweep report. Tables are built once as cells and rendered as
// text or HTML; plots are gnuplot scripts with their data inlined, drawn by a child process.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/report.hpp>

namespace dnstransport::detail {

// A table as cells: the text and the HTML renderings show the same thing.
struct report_table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t left_columns = 1;    // leading columns aligned left; the others are numbers
  std::vector<std::string> notes;  // what the reader needs to read the table
};

// What was run, where and on what, one line each.
std::vector<std::string> sweep_description(const sweep_result& result);
// Points; TCP/TLS as % of UDP; amortization fits; measured against model.
std::vector<report_table> sweep_tables(const sweep_result& result);
// Columns padded to their widest cell, the title above, the notes below.
std::string render_text(const report_table& table);

// 123456.7 -> "123,457".
std::string with_thousands(double value);

std::string percent_of_udp_csv(const sweep_result& result);
std::string amortization_csv(const sweep_result& result);

// A plot: its file stem (name.gp, name.png, name.svg), what it shows, and the script.
struct plot_script {
  std::string name;
  std::string title;
  std::string description;  // a sentence for the index page
  std::string body;         // settings, data blocks and the plot command
};

// Plots with data, and one line for each plot left out saying why.
struct plot_set {
  std::vector<plot_script> plots;
  std::vector<std::string> skipped;
};

// Plots 1-2: queries/s against clients, TCP/TLS as % of UDP.
void add_throughput_plots(const sweep_result& result, plot_set& into);
// Plot 3: queries/s against queries per connection with the models, one per transport.
void add_amortization_plots(const sweep_result& result, plot_set& into);
// Plots 4-5: latency percentiles per client count, connection set-up percentiles.
void add_latency_plots(const sweep_result& result, plot_set& into);

// The queries-per-connection value a transport is shown at where one line per transport is
// drawn: unlimited when measured, else the largest (0 for udp).
std::uint64_t longest_connections(const sweep_result& result, const sweep_transport& transport);
// "persistent connections", "1 query/connection", "10 queries/connection".
std::string connections_label(std::uint64_t queries_per_connection);
// A transport's gnuplot line type, the same in every plot.
std::size_t color_of(const sweep_result& result, const sweep_transport& transport);
// Marks client-bound points: a black ring around them.
inline constexpr std::string_view client_bound_style =
    "with points pt 6 ps 3 lw 2 lc rgb 'black' title 'client-bound (generator CPU >= 90 %)'";

// gnuplot text helpers.
std::string gnuplot_string(std::string_view text);  // quoted, enhanced-text safe
std::string gnuplot_number(double value);
// A data block ($name << EOD ... EOD) from rows of numbers.
std::string gnuplot_data(std::string_view name, const std::vector<std::vector<double>>& rows);
// The complete script: header, PNG output, body, SVG output (replot).
std::string gnuplot_file(const plot_script& plot, std::string_view source_name);

// The executable `name` on PATH; empty when there is none.
std::filesystem::path find_program(std::string_view name);
// Runs `gnuplot script` in `directory`; empty on success, otherwise what went wrong.
std::string run_gnuplot(const std::filesystem::path& gnuplot,
                        const std::filesystem::path& directory, const std::string& script);

// What the index page links to besides the plots.
struct index_contents {
  std::string source_name;
  std::vector<std::string> drawn;  // names of plots whose PNG and SVG exist
  std::string plot_problem;
  std::vector<std::string> data_files;
};
std::string render_index(const sweep_result& result, const plot_set& plots,
                         const index_contents& contents);

}  // namespace dnstransport::detail
