#!/usr/bin/env python3
"""Answer-data check for the interop suite, independent of dnstransport.

Asks a server for every record of the test zone over one transport (udp, tcp or tls) and
compares the answer RRset with the expected data; asks for names that do not exist and
expects NXDOMAIN. dnstransport counts rcodes but does not look at RDATA, so this is what
proves that the servers serve the zone the suite thinks they serve.

Records come from a tab-separated file: name, type, data (A, AAAA or TXT). Absent names
come from a query file ("name TYPE" per line). Prints one line per problem; exit 1 if any.
"""
import argparse
import ipaddress
import random
import socket
import ssl
import struct
import sys

TYPES = {"A": 1, "AAAA": 28, "TXT": 16}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\0"


def skip_name(msg: bytes, pos: int) -> int:
    while True:
        length = msg[pos]
        if length == 0:
            return pos + 1
        if length & 0xC0 == 0xC0:
            return pos + 2
        pos += 1 + length


def query(qid: int, name: str, qtype: int) -> bytes:
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    return header + encode_name(name) + struct.pack("!HH", qtype, 1)


def parse(msg: bytes, qid: int, qtype: int):
    """Returns (rcode name, sorted list of answer data of qtype as text)."""
    rid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    if rid != qid or not flags & 0x8000:
        raise ValueError(f"answer id {rid} / flags {flags:#x} do not match query id {qid}")
    pos = 12
    for _ in range(qd):
        pos = skip_name(msg, pos) + 4
    data = []
    for _ in range(an):
        pos = skip_name(msg, pos)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[pos:pos + 10])
        rdata = msg[pos + 10:pos + 10 + rdlen]
        pos += 10 + rdlen
        if rtype != qtype:
            continue
        if rtype in (1, 28):
            data.append(str(ipaddress.ip_address(rdata)))
        elif rtype == 16:
            strings, i = [], 0
            while i < len(rdata):
                strings.append(rdata[i + 1:i + 1 + rdata[i]].decode("ascii", "replace"))
                i += 1 + rdata[i]
            data.append("".join(strings))
    return RCODES.get(flags & 0xF, str(flags & 0xF)), sorted(data)


def exchange(args, wire: bytes) -> bytes:
    if args.transport == "udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(args.timeout)
            s.sendto(wire, (args.server, args.port))
            return s.recv(65535)
    raw = socket.create_connection((args.server, args.port), timeout=args.timeout)
    if args.transport == "tls":
        ctx = ssl.create_default_context(cafile=args.ca_file)
        raw = ctx.wrap_socket(raw, server_hostname=args.sni)
    with raw as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        buf = b""
        while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
            chunk = s.recv(65535)
            if not chunk:
                raise ConnectionError("connection closed before the whole answer")
            buf += chunk
        return buf[2:2 + struct.unpack("!H", buf[:2])[0]]


def ask(args, name: str, qtype_name: str):
    qid = random.randrange(65536)
    qtype = TYPES[qtype_name]
    return parse(exchange(args, query(qid, name, qtype)), qid, qtype)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--server", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--transport", choices=["udp", "tcp", "tls"], default="udp")
    p.add_argument("--records", required=True)
    p.add_argument("--absent", required=True)
    p.add_argument("--ca-file")
    p.add_argument("--sni", default="interop.test")
    p.add_argument("--timeout", type=float, default=2.0)
    args = p.parse_args()

    expected = {}
    with open(args.records, encoding="utf-8") as f:
        for line in f:
            name, qtype, data = line.rstrip("\n").split("\t")
            if qtype == "AAAA":
                data = str(ipaddress.ip_address(data))
            expected.setdefault((name, qtype), []).append(data)
    absent = []
    with open(args.absent, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if fields:
                absent.append((fields[0], fields[1] if len(fields) > 1 else "A"))

    problems = []
    for (name, qtype), want in expected.items():
        try:
            rcode, got = ask(args, name, qtype)
        except (OSError, ValueError) as e:
            problems.append(f"{name} {qtype}: {e}")
            continue
        if rcode != "NOERROR" or got != sorted(want):
            problems.append(f"{name} {qtype}: got {rcode} {got}, want NOERROR {sorted(want)}")
    for name, qtype in absent:
        try:
            rcode, got = ask(args, name, qtype)
        except (OSError, ValueError) as e:
            problems.append(f"{name} {qtype}: {e}")
            continue
        if rcode != "NXDOMAIN" or got:
            problems.append(f"{name} {qtype}: got {rcode} {got}, want NXDOMAIN")
    for line in problems:
        print(line)
    checked = len(expected) + len(absent)
    if not problems:
        print(f"{checked} names checked, answer data as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
