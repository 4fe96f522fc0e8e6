#!/usr/bin/env python3
"""The figures of tools/bench/cost-model-check, from the files it wrote.

  cost_model_check.py NAME SWEEP_JSON [TRANSPORT ONE_PER_CONNECTION_JSON PERSISTENT_JSON]...

1. Each point of the sweep: the server's CPU per answer as measured (/proc, the run's
   server_usage) and as the sweep's cost model predicts it from the run's answers,
   connections and handshakes; the ratio, and how many points lie within 15 %.
2. Each TRANSPORT: the server's CPU per connection from `perf stat -e task-clock` (the
   files JSON.perf) around a run at 1 query per connection and one on persistent
   connections, against the model's cost for the same run's set-ups and handshakes.
"""
import json
import sys

CONNECTION_TRANSPORTS = {"tcp"}          # a set-up without TLS: the TCP connection term
HANDSHAKE_TRANSPORTS = {"tls", "doh", "doq"}


def model_of(sweep, transport, backend):
    for c in sweep["costs"]:
        if c["transport"] == transport and c.get("tls_backend", "") == backend:
            return c["server"]
    return None


def cost(model, key):
    v = model.get(key) if model else None
    return v["value"] if v else 0.0


def predict(model, transport, run):
    """The model's CPU seconds for a run's counts (cpu_cost_model::predict)."""
    total = cost(model, "answer_seconds") * run["responses_received"]
    if transport in CONNECTION_TRANSPORTS:
        total += cost(model, "tcp_connection_seconds") * run["connections"]["opened"]
    if transport in HANDSHAKE_TRANSPORTS:
        total += cost(model, "full_handshake_seconds") * run["handshakes"]["full"]
        total += cost(model, "resumed_handshake_seconds") * run["handshakes"]["resumed"]
    return total


def server_cpu(run):
    u = run.get("server_usage")
    if not u or not u.get("cpu_measured", True):
        return 0.0
    return u["cpu_user_seconds"] + u["cpu_system_seconds"]


def points_table(name, sweep):
    print(f"\n{name}: server CPU per answer, measured (/proc) against the cost model "
          "(mean of the repeats)")
    print(f"{'transport':16} {'clients':>7} {'q/conn':>9} {'measured us':>12} "
          f"{'model us':>10} {'model/measured':>15}")
    within = total = 0
    worst = 0.0
    for p in sweep["points"]:
        transport = p["transport"]
        model = model_of(sweep, transport, p.get("tls_backend", ""))
        runs = [r for r in p["repeats"] if server_cpu(r) > 0 and r["responses_received"] > 0]
        if not model or not runs:
            continue
        answers = sum(r["responses_received"] for r in runs)
        measured = sum(server_cpu(r) for r in runs)
        predicted = sum(predict(model, transport, r) for r in runs)
        ratio = predicted / measured
        total += 1
        within += abs(ratio - 1) <= 0.15
        worst = max(worst, abs(ratio - 1))
        qpc = p["queries_per_connection"] or "unlimited"
        print(f"{p['label']:16} {p['clients']:>7} {qpc:>9} {measured / answers * 1e6:>12.1f} "
              f"{predicted / answers * 1e6:>10.1f} {ratio:>15.3f}")
    print(f"{within} of {total} points within 15 % of the measured (largest difference "
          f"{worst * 100:.1f} %)")
    return within, total


def perf_seconds(path):
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2].startswith("task-clock") and fields[0]:
                return float(fields[0]) / 1e3  # msec
    raise SystemExit(f"{path}: no task-clock count (perf stat -x, output)")


def connection_check(name, sweep, checks):
    print(f"\n{name}: server CPU per connection, perf stat (task-clock of the server's "
          "process) against the cost model")
    print(f"{'transport':10} {'connections':>11} {'full/resumed':>13} {'perf us/conn':>13} "
          f"{'model us/conn':>14} {'model/perf':>11}")
    rows = []
    for transport, short_json, long_json in zip(checks[0::3], checks[1::3], checks[2::3]):
        short = json.load(open(short_json))
        persistent = json.load(open(long_json))
        model = model_of(sweep, transport, short.get("tls_backend", ""))
        opened = short["connections"]["opened"]
        if not model or opened == 0 or persistent["responses_received"] == 0:
            print(f"{transport:10} (no model or no connections)")
            continue
        per_answer = perf_seconds(long_json + ".perf") / persistent["responses_received"]
        measured = (perf_seconds(short_json + ".perf") -
                    per_answer * short["responses_received"]) / opened
        modelled = (predict(model, transport, short) -
                    cost(model, "answer_seconds") * short["responses_received"]) / opened
        ratio = modelled / measured if measured > 0 else float("inf")
        handshakes = f"{short['handshakes']['full']}/{short['handshakes']['resumed']}"
        print(f"{transport:10} {opened:>11} {handshakes:>13} {measured * 1e6:>13.1f} "
              f"{modelled * 1e6:>14.1f} {ratio:>11.3f}")
        rows.append(ratio)
    inside = sum(abs(r - 1) <= 0.20 for r in rows)
    print(f"{inside} of {len(rows)} transports within 20 % of perf stat")


def main():
    if len(sys.argv) < 3 or (len(sys.argv) - 3) % 3:
        raise SystemExit(__doc__)
    name, sweep_path, checks = sys.argv[1], sys.argv[2], sys.argv[3:]
    sweep = json.load(open(sweep_path))
    points_table(name, sweep)
    if checks:
        connection_check(name, sweep, checks)


if __name__ == "__main__":
    main()
