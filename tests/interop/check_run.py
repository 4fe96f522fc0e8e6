#!/usr/bin/env python3
"""Checks one dnstransport --json result against what the interop suite expects.

Prints one tab-separated line: answered/sent, the rcode check, resumed handshakes, and
either "ok" or the list of problems; exits 1 when there is a problem.
"""
import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("result")
    parser.add_argument("--rcode", required=True, help="every answer must have this rcode")
    parser.add_argument("--resume", choices=["expect", "any"], default="any",
                        help="expect: after each client's first connection, handshakes resume")
    parser.add_argument("--new-connection-per-query", action="store_true",
                        help="qpc 1: at least one connection per answered query")
    parser.add_argument("--keepalive",
                        help="every answer advertises this edns-tcp-keepalive timeout (s), "
                        "or 'none': no answer does")
    parser.add_argument("--padded", type=int, metavar="BLOCK",
                        help="every answer is padded to a multiple of BLOCK octets")
    parser.add_argument("--unpadded", action="store_true", help="no answer is padded")
    args = parser.parse_args()

    with open(args.result, encoding="utf-8") as f:
        r = json.load(f)

    sent = r["queries_sent"]
    answered = r["responses_received"]
    conns = r.get("connections", {})
    problems = []
    if sent == 0:
        problems.append("no query sent")
    if answered != sent:
        problems.append(f"{sent - answered} of {sent} unanswered")
    for key in ("lost", "lost_on_close", "malformed", "mismatched", "abandoned", "duplicates",
                "unexpected", "late"):
        if r.get(key, 0):
            problems.append(f"{key}={r[key]}")
    # DoH: a query whose HTTP exchange failed (a status other than 200, a reset stream, a
    # wrong content type) is counted here by cause, not as an answer.
    if r.get("http_failed", 0):
        causes = ", ".join(f"{k} {v}" for k, v in sorted(r.get("http_failures", {}).items()))
        problems.append(f"http_failed={r['http_failed']} ({causes})")

    rcodes = r.get("rcodes", {})
    others = {k: v for k, v in rcodes.items() if k != args.rcode and v}
    rcode_ok = not others and rcodes.get(args.rcode, 0) == answered
    rcode_cell = f"{args.rcode} {rcodes.get(args.rcode, 0)}/{answered}"
    if others:
        rcode_cell += " (" + ", ".join(f"{k} {v}" for k, v in sorted(others.items())) + ")"
        problems.append("unexpected rcodes " + ", ".join(f"{k}={v}" for k, v in others.items()))
    elif not rcode_ok:
        problems.append(f"{args.rcode} on {rcodes.get(args.rcode, 0)} of {answered} answers")

    if conns.get("failed", 0):
        causes = ", ".join(f"{k} {v}" for k, v in sorted(conns.get("failures", {}).items()))
        problems.append(f"{conns['failed']} connections failed ({causes}; first: "
                        f"{conns.get('first_failure', '')})")
    if conns.get("reset_by_server", 0):
        problems.append(f"{conns['reset_by_server']} connections reset by the server")
    # Closed by us because the server broke HTTP/2 or QUIC (counted as a reset before).
    if conns.get("closed_protocol_error", 0):
        problems.append(f"{conns['closed_protocol_error']} connections closed over the "
                        "server's protocol error")
    if args.new_connection_per_query and conns.get("opened", 0) < answered:
        problems.append(f"qpc 1 but {conns.get('opened', 0)} connections for {answered} answers")

    edns = r.get("edns", {})
    ka = edns.get("keepalive_answers", 0)
    if args.keepalive == "none":
        if ka:
            problems.append(f"keepalive: {ka} answers advertised a timeout, none expected")
    elif args.keepalive is not None:
        expected = float(args.keepalive)
        lo = edns.get("keepalive_timeout_min_seconds", 0)
        hi = edns.get("keepalive_timeout_max_seconds", 0)
        if ka != answered or lo != expected or hi != expected:
            problems.append(f"keepalive: {ka} of {answered} answers, timeouts {lo} to {hi} s "
                            f"(expected {expected} s on every answer)")
    padded = edns.get("padded_answers", 0)
    if args.padded is not None:
        sizes = edns.get("padded_sizes", {})
        odd = [s for s in sizes if int(s) % args.padded]
        if padded != answered or odd:
            problems.append(f"padding: {padded} of {answered} answers padded, sizes "
                            f"{sorted(sizes, key=int)} (expected multiples of {args.padded})")
    if args.unpadded and padded:
        problems.append(f"padding: {padded} answers padded, none expected")

    hs = r.get("handshakes", {})
    resumed = hs.get("resumed", 0)
    resumed_cell = "-"
    if r.get("transport") in ("tls", "doh"):
        resumed_cell = f"{resumed}/{resumed + hs.get('full', 0)}"
    full = hs.get("full", 0)
    # Each client's first handshake is full; a connection that ends before its ticket
    # arrives may add one more. Anything beyond that means tickets are not reused.
    allowed_full = max(2 * r.get("clients", 1), (resumed + full) // 20)
    if args.resume == "expect" and (resumed == 0 or full > allowed_full):
        problems.append(f"{resumed} of {resumed + full} handshakes resumed "
                        f"(at most {allowed_full} full expected)")

    status = "ok" if not problems else "FAIL: " + "; ".join(problems)
    answered_cell = f"{answered}/{sent}"
    print(f"{answered_cell}\t{rcode_cell}\t{resumed_cell}\t{status}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
