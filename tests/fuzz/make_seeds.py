#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora into tests/fuzz/corpus/<target>/ (run by hand; the
files are committed). A handful of small, valid or nearly valid inputs per target: the
fuzzer finds its way from there. The TLS target's seeds (tests/fuzz/corpus/tls) are real
handshake bytes, written by the target itself:
  FUZZ_TLS_WRITE_SEEDS=tests/fuzz/corpus/tls build-fuzz/tests/fuzz/fuzz_tls"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def name(text):
    out = b""
    for label in text.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(qname, qtype=1, qid=0x1234, opt=False):
    header = struct.pack(">HBBHHHH", qid, 0x01, 0, 1, 0, 0, 1 if opt else 0)
    body = name(qname) + struct.pack(">HH", qtype, 1)
    if opt:
        body += b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
    return header + body


def response(q, answers=b"", ancount=0, flags=0x8180):
    qid, _, qd, _, ns, ar = struct.unpack(">HHHHHH", q[:12])
    return struct.pack(">HHHHHH", qid, flags, qd, ancount, ns, ar) + q[12:] + answers


A_RECORD = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + bytes([192, 0, 2, 1])
LOOP = b"\x01x\xc0\x21" + struct.pack(">HHIH", 1, 1, 300, 4) + bytes(4)


def frames(*messages):
    return b"".join(struct.pack(">H", len(m)) + m for m in messages)


def write(target, files):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    for file_name, data in files.items():
        with open(os.path.join(directory, file_name), "wb") as f:
            f.write(data)


q = query("www.example.com")
q_opt = query("Mixed.Case.Example", qtype=28, opt=True)
ok = response(q, A_RECORD, 1)
write("check_response", {
    "answer": ok,
    "answer_edns": response(q_opt, A_RECORD, 1),
    "compression_loop": response(q, LOOP, 1),
    "truncated": response(q, flags=0x8380),
    "split_query_response": bytes([len(q)]) + q + ok,
    # Found by fuzzing (a flaw in the harness's own check): a name pointing into the header.
    "name_into_header": struct.pack(">HHHHHH", 0x1234, 0x6C9B, 1, 0, 0, 0) + b"\3www\xc0\x01"
    + struct.pack(">HH", 1, 1),
})
write("frame_reader", {
    "one_byte_chunks": b"\x00\x01" + frames(q, ok, q_opt),
    "random_chunks": b"\x06\x01" + frames(ok, ok, q),
    "zero_length": b"\x03\x01" + frames(q) + b"\x00\x00" + frames(ok),
    "partial": b"\x01\x10" + frames(q) + b"\x01\x00abc",
})
write("query_parsers", {
    "text": b"\x01www.example.com A\nexample.org AAAA ; comment\n\n; only a comment\n",
    "text_escapes": b"\x07a\\.b.example. TXT\n\\065\\066.example MX\nexample.net TYPE65\r\n",
    "wire": b"\x01" + frames(q, q_opt),
    "wire_truncated": b"\x00" + frames(q)[:-3],
})
write("encode_name", {
    "plain": b"www.example.com",
    "root": b".",
    "escapes": b"a\\.b\\032c.\\255\\000.example.",
    "long_label": b"x" * 63 + b".example",
    "empty_label": b"a..b",
})
write("doq_stream", {
    "whole_answer": b"\x03\x00" + frames(ok),
    "one_byte_chunks_fin_alone": b"\x00\x01" + frames(q),
    "random_chunks": b"\x06\x00" + frames(q_opt),
    "length_lies_long": b"\x03\x00" + struct.pack(">H", len(ok) + 1) + ok,
    "overrun": b"\x02\x00" + frames(ok) + b"\x00",
    "too_short": b"\x03\x01\x05",
})
