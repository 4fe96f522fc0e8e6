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
// The transports of a sweep's plan: "DNS over UDP, TCP, TLS, HTTPS and QUIC".
std::string transports_heading(const sweep_result& result);
// The same without "DNS over ": "UDP, TCP, TLS and HTTPS".
std::string transports_list(const sweep_result& result);
// What a sweep measured, as its report's heading: "DNS over UDP, TCP, TLS, HTTPS and QUIC:
// unbound and builtin" (the transports of its plan, then its targets, or its label and
// server, or its one server).
std::string sweep_heading(const sweep_result& result);
// The findings as text: a heading (`name`, then the transports, when a name is given; the
// sweep_heading otherwise), then one "- " line per finding (grouped by target).
std::string findings_text(const sweep_result& result, std::string_view name = {});
// The same as HTML: a "Findings" heading, then findings_list_html.
std::string findings_html(const sweep_result& result);
// The findings as HTML lists, one per target (each under an h3 naming it).
std::string findings_list_html(const sweep_result& result);
// Columns padded to their widest cell, the title above, the notes below.
std::string render_text(const report_table& table);

// A fitted value (h, N for a share of T_inf) with few digits: "2.86", "33.1", "1,610".
std::string fitted(double value);

// A % of UDP in a table: "84.2 % (80-88)" (the range with with_range), " *" when this point
// or its reference was client-bound; "UDP client-bound" when the reference measured the
// generator (no share of the server's UDP throughput can be read from it).
std::string percent_cell(const percent_of_udp_entry& entry, bool with_range);
// The notes that explain percent_cell's marks.
inline constexpr std::string_view percent_bound_note =
    "* this point was client-bound (a generator thread at full CPU)";
inline constexpr std::string_view percent_reference_note =
    "UDP client-bound: UDP with this many clients measured the generator, not the server, "
    "so no % of UDP is shown (the JSON keeps the raw ratio, with reference_client_bound)";

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

// A sweep with a distinct-sources axis (sweep_plan::distinct_sources): the sweep at one of
// its values (points and the results derived from them), for the tables and plots that
// compare transports, clients and connections; the mean q/s of every point against distinct
// sources, as a table and a plot (one line per transport, clients and connections).
sweep_result at_distinct_sources(const sweep_result& result, std::uint64_t distinct);
report_table distinct_sources_table(const sweep_result& result);
void add_distinct_sources_plot(const sweep_result& result, plot_set& into);

// Plots 1-2: queries/s against clients, TCP/TLS as % of UDP.
void add_throughput_plots(const sweep_result& result, plot_set& into);
// Plot 3: queries/s against queries per connection with the models, one per transport.
void add_amortization_plots(const sweep_result& result, plot_set& into);
// Plots 4-5: latency percentiles per client count, connection set-up percentiles.
void add_latency_plots(const sweep_result& result, plot_set& into);

// A server's sweep under its name in a plot or table of several ("" for a report of one sweep).
struct named_sweep {
  std::string name;
  const sweep_result* result = nullptr;
};
// Plot 7: each run's CPU per answer as its cost model predicts it against the measured, the
// server's (filled points) and the generator's (open), on logarithmic axes with the ±15 %
// band; one colour per transport, or per server when there are several.
void add_cost_plot(const std::vector<named_sweep>& sources, plot_set& into);
// The cost models' table: per answer, TCP connection, full and resumed handshake, fit error,
// memory per connection and N for 50/90/99 %, each transport's row named by its server.
report_table costs_table(const std::vector<named_sweep>& sources);

// One fit drawn in an amortization plot: measured points, the fit and the simple model.
struct amortization_curve {
  const amortization_fit* fit = nullptr;
  std::string who;  // "4 clients", "unbound, 4 clients"
  std::size_t color = 1;
  std::size_t point_type = 7;
  bool simple_model = true;  // also draw T_inf * N / (N + 1), dashed
};
// The amortization plot of one transport (file stem amortization_<transport>).
plot_script amortization_plot(const sweep_transport& transport,
                              const std::vector<amortization_curve>& curves);

// One line of a latency-percentile plot.
struct latency_curve {
  std::string title;
  std::size_t color = 1;
  std::size_t dash_type = 1;  // 1: solid
  latency_histogram histogram;
};
// Settings, data and plot command of a latency-percentile plot; empty when no curve has data.
std::string percentile_body(const std::string& title, const std::vector<latency_curve>& curves);

// Writes each plot's script into `directory` and, when gnuplot is installed, draws it; the
// names of the plots drawn go to `drawn`, the files to output.files, the first problem to
// output.plot_problem, the plots left out to output.skipped_plots (with their settings named
// by `name_of`).
void draw_plots(const plot_set& plots, const std::filesystem::path& directory,
                std::string_view source_name, report_output& output,
                std::vector<std::string>& drawn, const setting_namer& name_of);
// Creates `directory` (and its parents) if needed; throws setup_error naming it.
void make_directory(const std::filesystem::path& directory);
// Writes `text` to `path` and adds it to `written`; throws setup_error naming the path.
void write_text(const std::filesystem::path& path, const std::string& text,
                std::vector<std::filesystem::path>& written);

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

// Comparisons of several sweeps (servers).
// Every transport measured by any sweep, in the order they first appear.
std::vector<sweep_transport> transports_of(const std::vector<compared_sweep>& sweeps);
// Every client count measured by any sweep, smallest first.
std::vector<unsigned> clients_of(const std::vector<compared_sweep>& sweeps);
// What a comparison holds, for its heading: "unbound 1.17.1 over UDP, TCP, DoT and DoH;
// built-in responder over UDP and DoQ" (each server with the transports it was measured over).
std::string comparison_heading(const std::vector<compared_sweep>& sweeps);
// What holds across the servers: one sentence for each server measured over no transport
// that another was (its figures compare with no other server's).
std::vector<std::string> comparison_findings(const std::vector<compared_sweep>& sweeps);
// Each sweep's description under its name, and notes when machines or versions differ.
std::vector<std::string> comparison_description(const std::vector<compared_sweep>& sweeps);
// The comparison table, % of UDP side by side, the fits of every server.
std::vector<report_table> comparison_tables(const std::vector<compared_sweep>& sweeps);
// The overlays: queries/s against clients, % of UDP by server, amortization per transport,
// latency percentiles per client count.
void add_comparison_plots(const std::vector<compared_sweep>& sweeps, plot_set& into);

// HTML pieces shared by the sweep and comparison pages.
std::string html_escape(std::string_view text);
std::string render_html(const report_table& table);
// <!DOCTYPE html> up to the opening <body>, with the page's style.
std::string html_head(std::string_view title);
// The plots section: each drawn plot as a figure, the others as links to their scripts,
// the problem if any, and the plots left out.
std::string html_plots(const plot_set& plots, const index_contents& contents);

}  // namespace dnstransport::detail
