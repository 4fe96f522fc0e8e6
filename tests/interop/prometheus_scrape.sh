# shellcheck shell=bash
# Sourced by ci-hook: Prometheus scrapes `dnstransport run --metrics-listen` (issue #38).
# A run against the built-in responder serves its metrics; Prometheus (Debian's package,
# started here on loopback with a configuration and a data directory of its own, scraping
# every second) must see the target up and the run's answers; promtool lints the text the
# run leaves in --metrics-file. Every wait is for what it waits for (the run's address line,
# a query answered by Prometheus), bounded. Without the prometheus package the case is
# skipped with the reason, but with CI=true it fails.
# Uses ci-hook's row, in_ci, work, DNSTRANSPORT, port_base, client_cpu.

PROM_PID=""
PROM_RUN_PID=""

prometheus_cleanup() {
  local pid
  for pid in "$PROM_RUN_PID" "$PROM_PID"; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PROM_PID=""
  PROM_RUN_PID=""
}

# prometheus_value URL QUERY: the first value of an instant query, empty when none yet.
prometheus_value() {
  python3 - "$1" "$2" <<'EOF' 2>/dev/null || true
import json, sys, urllib.parse, urllib.request
url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
with urllib.request.urlopen(url, timeout=2) as r:
    result = json.load(r)["data"]["result"]
if result:
    print(result[0]["value"][1])
EOF
}

# prometheus_wait URL QUERY: waits (at most 60 s) until QUERY gives a value above 0.
prometheus_wait() {
  local value deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    value=$(prometheus_value "$1" "$2")
    if [ -n "$value" ] && python3 -c "import sys; sys.exit(0 if float('$value') > 0 else 1)"; then
      echo "$value"
      return 0
    fi
    if ! kill -0 "$PROM_PID" 2>/dev/null || ! kill -0 "$PROM_RUN_PID" 2>/dev/null; then
      return 1
    fi
    sleep 0.2
  done
  return 1
}

prometheus_scrape() {
  local dir="$work/prometheus" metrics_port=$((port_base + 9601)) prom_port=$((port_base + 9600))
  local result="" url answers up status
  echo "== prometheus: scraping dnstransport run --metrics-listen"
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    local why="prometheus is not installed (Debian package prometheus, tools/packages/optional-servers.txt)"
    if [ "$in_ci" = 1 ]; then
      row prometheus metrics - - - - - - "FAIL: $why (CI=true: nothing may be skipped)"
    else
      row prometheus metrics - - - - - - "SKIP: $why"
    fi
    return 0
  fi
  mkdir -p "$dir/data"
  cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dnstransport
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
EOF
  # Rate-limited: this case is about the metrics, not the generator's ceiling.
  taskset -c "$client_cpu" "$DNSTRANSPORT" run --duration 300 --rate 2000 --interval 0.5 \
    --metrics-listen "127.0.0.1:$metrics_port" --metrics-file "$dir/run.prom" \
    --json "$dir/run.json" >"$dir/run.out" 2>"$dir/run.err" &
  PROM_RUN_PID=$!
  local deadline=$((SECONDS + 20))
  while ! grep -q "metrics at http://" "$dir/run.err" && kill -0 "$PROM_RUN_PID" 2>/dev/null &&
    [ $SECONDS -lt $deadline ]; do
    sleep 0.05
  done
  if ! grep -q "metrics at http://127.0.0.1:$metrics_port/metrics" "$dir/run.err"; then
    result="FAIL: the run did not serve its metrics: $(tail -n 3 "$dir/run.err" | tr '\n' ' ')"
  fi
  if [ -z "$result" ]; then
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
      --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
    PROM_PID=$!
    url="http://127.0.0.1:$prom_port"
    if ! up=$(prometheus_wait "$url" 'up{job="dnstransport"}'); then
      result="FAIL: Prometheus never saw the target up: $(tail -n 3 "$dir/prometheus.log" | tr '\n' ' ')"
    elif ! answers=$(prometheus_wait "$url" 'dnstransport_answers_total{job="dnstransport",transport="udp"}'); then
      result="FAIL: Prometheus scraped no answers"
    elif ! prometheus_wait "$url" 'dnstransport_latency_seconds_count{job="dnstransport"}' >/dev/null; then
      result="FAIL: Prometheus scraped no latency histogram"
    fi
  fi
  if kill -0 "$PROM_RUN_PID" 2>/dev/null; then kill -INT "$PROM_RUN_PID"; fi
  status=0
  wait "$PROM_RUN_PID" || status=$?
  PROM_RUN_PID=""
  prometheus_cleanup
  if [ -z "$result" ] && [ "$status" != 130 ]; then
    result="FAIL: the run ended with $status, not 130 (interrupted)"
  fi
  if [ -z "$result" ] && ! grep -q '^dnstransport_finished{.*} 1$' "$dir/run.prom"; then
    result="FAIL: --metrics-file does not hold the run's final figures"
  fi
  if [ -z "$result" ] && ! promtool check metrics <"$dir/run.prom" >"$dir/promtool.out" 2>&1; then
    result="FAIL: promtool check metrics: $(tr '\n' ' ' <"$dir/promtool.out")"
  fi
  [ -n "$result" ] || result=ok
  echo "   up=$up answers scraped=${answers:-none}: $result"
  row prometheus metrics - - - - - - "$result"
}
