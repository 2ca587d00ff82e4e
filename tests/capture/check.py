#!/usr/bin/env python3
"""check.py CASE MTU SERVER_LOG CLIENT_LOG PCAP...: check packet captures
(SOFTVERBS_PCAP) of a known exchange.  Every packet must dissect in tshark
as InfiniBand (RoCEv2) with no malformed or error mark, and its ICRC must
be right (computed here with zlib's CRC-32, independently of the library).
The opcodes, PSNs and QPNs tshark reads must follow the wire rules (a
message of N packets on consecutive PSNs, first/middle/last, RETH and AETH
where they belong, ACKs naming the last PSN of a request) and the case's
exchange: its opcodes and the QP numbers and PSNs the programs printed.

check.py any MTU PCAP...: captures of any traffic (tests/verbs programs):
dissection and ICRC as above, with Wireshark's heuristic payload
dissectors off (arbitrary payloads trip them, docs/observability.md), and
each message's own packets (first/middle/last on consecutive PSNs, RETH
and AETH where they belong).  Not the PSNs from one message to the next,
nor which request a response names: a message may come again (a
retransmission), both QPs of a pair may be in one process's file, and a
direct access is only in the requester's (docs/observability.md).
Exit 0 pass, 1 fail."""
import re
import struct
import subprocess
import sys
import zlib

OP = {0: 'SEND_FIRST', 1: 'SEND_MIDDLE', 2: 'SEND_LAST', 3: 'SEND_LAST_IMM', 4: 'SEND_ONLY',
      5: 'SEND_ONLY_IMM', 6: 'WRITE_FIRST', 7: 'WRITE_MIDDLE', 8: 'WRITE_LAST',
      9: 'WRITE_LAST_IMM', 10: 'WRITE_ONLY', 11: 'WRITE_ONLY_IMM', 12: 'READ_REQ',
      13: 'READ_RESP_FIRST', 14: 'READ_RESP_MIDDLE', 15: 'READ_RESP_LAST',
      16: 'READ_RESP_ONLY', 17: 'ACK', 18: 'ATOMIC_ACK', 19: 'CMP_SWP', 20: 'FETCH_ADD',
      22: 'SEND_LAST_INV', 23: 'SEND_ONLY_INV', 29: 'ATOMICWRITE_ONLY'}
RESPONSES = {'ACK', 'ATOMIC_ACK', 'READ_RESP_FIRST', 'READ_RESP_MIDDLE', 'READ_RESP_LAST',
             'READ_RESP_ONLY'}
# What each case's requests may be; None: any
CASES = {
    'rc_pingpong': {'SEND_ONLY', 'SEND_FIRST', 'SEND_MIDDLE', 'SEND_LAST'},
    'write_bw': {'WRITE_FIRST', 'WRITE_MIDDLE', 'WRITE_LAST', 'WRITE_ONLY'},
    'read_bw': {'READ_REQ'},
    'atomic_bw': {'FETCH_ADD', 'CMP_SWP'},
    'ud_pingpong': {'UD_SEND_ONLY'},
}
# Wireshark's dissectors that guess what a payload is (all of infiniband.payload)
HEURISTICS = ['eth_over_ib', 'fc_infiniband', 'sdp_infiniband', 'iser_infiniband', 'lnet_ib',
              'rpcrdma_infiniband', 'smb_direct_infiniband', 'smcr_infiniband', 'nvme_rdma',
              'mellanox_eoib']
# A case's messages must show segmentation (first/middle/last) in the file
SEGMENTED = {'write_bw': 'WRITE_MIDDLE', 'read_bw': 'READ_RESP_MIDDLE'}
FIELDS = ['frame.number', 'infiniband.bth.opcode', 'infiniband.bth.destqp', 'infiniband.bth.psn',
          'infiniband.bth.a', 'infiniband.reth.dmalen', 'infiniband.aeth.msn',
          'infiniband.deth.srcqp', 'infiniband.bth.padcnt', 'udp.length']

errors = []


def fail(msg):
    errors.append(msg)
    print('FAIL: ' + msg)


no_heur = []


def tshark(args):
    return subprocess.run(['tshark', '-n'] + no_heur + args, capture_output=True, text=True,
                          timeout=120, check=True).stdout


def pcap_packets(path):
    """The frames of a classic pcap file."""
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack_from('<I', data)[0]
    if magic not in (0xa1b2c3d4, 0xa1b23c4d):
        raise SystemExit(f'{path}: not a little-endian pcap file')
    off = 24
    while off < len(data):
        _, _, caplen, _ = struct.unpack_from('<IIII', data, off)
        yield data[off + 16:off + 16 + caplen]
        off += 16 + caplen


def icrc_ok(frame):
    """RoCEv2 ICRC: 8 bytes of ones, then IP/UDP/BTH with TOS, TTL, the
    checksums and BTH's reserved byte masked, then the rest; little-endian."""
    ip = bytearray(frame[14:-4])
    ip[1] = 0xff
    ip[8] = 0xff
    ip[10:12] = b'\xff\xff'
    ip[26:28] = b'\xff\xff'
    ip[32] = 0xff
    want = zlib.crc32(b'\xff' * 8 + bytes(ip)) & 0xffffffff
    return struct.unpack('<I', frame[-4:])[0] == want


def qpn_psn(log):
    """The local QPN and PSN a program printed (ibv_*_pingpong, perftest)."""
    text = open(log, errors='replace').read()
    m = re.search(r'local address:.*?QPN\s+(0x[0-9a-fA-F]+).*?PSN\s+(0x[0-9a-fA-F]+)', text)
    if not m:
        raise SystemExit(f'{log}: no local address line')
    return int(m.group(1), 16), int(m.group(2), 16)


def opname(code):
    name = OP.get(code & 0x1f, f'OP{code:#x}')
    return ('UD_' + name) if code >> 5 == 3 else ('UC_' + name) if code >> 5 == 1 else name


def read_packets(path):
    rows = []
    for line in tshark(['-r', path, '-T', 'fields'] + sum((['-e', f] for f in FIELDS), [])).splitlines():
        v = line.split('\t')
        if len(v) < len(FIELDS) or not v[1]:
            fail(f'{path}: frame {v[0]} is not InfiniBand')
            continue
        num = lambda s: int(s, 0) if s else None
        rows.append({'frame': int(v[0]), 'op': opname(int(v[1], 0)), 'qp': int(v[2], 0),
                     'psn': int(v[3], 0), 'a': v[4] in ('1', 'True'), 'dmalen': num(v[5]),
                     'msn': num(v[6]), 'srcqp': num(v[7]), 'pad': num(v[8]),
                     'udplen': num(v[9])})
    return rows


def check_dissection(path):
    n = sum(1 for _ in pcap_packets(path))
    bad = tshark(['-r', path, '-Y', '_ws.malformed || _ws.expert.severity >= "error" || !infiniband.bth'])
    if bad.strip():
        fail(f'{path}: packets malformed or not InfiniBand:\n{bad}')
    crc = sum(1 for p in pcap_packets(path) if not icrc_ok(p))
    if crc:
        fail(f'{path}: {crc} of {n} packets with a wrong ICRC')
    return n


def npkts(length, mtu):
    return max(1, -(-length // mtu))


def check_rules(path, rows, mtu, loose):
    """Requests to each QP: messages on consecutive PSNs; responses name them."""
    nxt = {}          # destqp -> the PSN its next request must have
    msgs = {}         # destqp -> {first psn: (last psn, kind)}
    open_msg = {}     # destqp -> (kind, next psn) of a message between first and last
    for r in rows:
        op, qp, psn = r['op'], r['qp'], r['psn']
        if op.startswith('UD_'):
            continue
        base = op.split('_', 1)[1] if op.startswith('UC_') else op
        if base in RESPONSES:
            continue
        if loose and qp not in open_msg:
            nxt[qp] = psn           # any message may start anywhere
        if qp in nxt and psn != nxt[qp] and qp not in open_msg:
            fail(f'{path}: frame {r["frame"]}: {op} psn {psn} to QP {qp:#x}, expected {nxt[qp]}')
        kind = base.split('_')[0]
        part = base.split('_')[1]
        if part in ('MIDDLE', 'LAST'):
            if qp not in open_msg or open_msg[qp][1] != psn:
                fail(f'{path}: frame {r["frame"]}: {op} out of its message')
        elif qp in open_msg:
            fail(f'{path}: frame {r["frame"]}: {op} inside an unfinished message')
        if (r['dmalen'] is not None) != (base in ('WRITE_FIRST', 'WRITE_ONLY', 'WRITE_ONLY_IMM', 'READ_REQ')):
            fail(f'{path}: frame {r["frame"]}: {op} with{"" if r["dmalen"] is not None else "out"} RETH')
        if part == 'FIRST':
            open_msg[qp] = (kind, psn + 1, psn)
            continue
        if part == 'MIDDLE':
            open_msg[qp] = (kind, psn + 1, open_msg[qp][2])
            continue
        first = open_msg.pop(qp)[2] if part == 'LAST' else psn
        span = npkts(r['dmalen'], mtu) if base == 'READ_REQ' else 1
        msgs.setdefault(qp, {})[first] = (psn + span - 1, kind)
        nxt[qp] = (psn + span) & 0xffffff
    return msgs


def check_read_resp(path, r, reqs, opened, loose):
    """A READ response packet: AETH on first, last and only; its PSNs
    consecutive (per destination QP) and, unless loose, those of a READ
    request the file shows, up to its last."""
    op, psn, qp = r['op'], r['psn'], r['qp']
    has_aeth = r['msn'] is not None
    if has_aeth == (op == 'READ_RESP_MIDDLE'):
        fail(f'{path}: frame {r["frame"]}: {op} {"with" if has_aeth else "without"} AETH')
    if op in ('READ_RESP_FIRST', 'READ_RESP_ONLY'):
        end = None
        if not loose:
            if psn not in reqs or reqs[psn][2] != 'READ':
                fail(f'{path}: frame {r["frame"]}: {op} psn {psn} names no READ request')
                return
            end = reqs[psn][1]
        opened[qp] = (psn, end)
    elif qp not in opened or psn != opened[qp][0]:
        fail(f'{path}: frame {r["frame"]}: {op} psn {psn} out of its READ response')
        return
    nxt, end = opened[qp]
    if op in ('READ_RESP_LAST', 'READ_RESP_ONLY'):
        if end is not None and psn != end:
            fail(f'{path}: frame {r["frame"]}: {op} psn {psn}, the READ ends at {end}')
        del opened[qp]
    else:
        opened[qp] = (psn + 1, end)


def check_responses(path, rows, msgs, loose):
    """Each response names requests the file shows going the other way."""
    last_psns = {last for m in msgs.values() for last, _ in m.values()}
    reqs = {first: (q, last, kind) for q, m in msgs.items() for first, (last, kind) in m.items()}
    opened = {}
    for r in rows:
        op, psn = r['op'], r['psn']
        if op == 'ACK':
            if r['msn'] is None:
                fail(f'{path}: frame {r["frame"]}: ACK without AETH')
            elif psn not in last_psns and last_psns and not loose:
                fail(f'{path}: frame {r["frame"]}: ACK psn {psn} is no request\'s last packet')
        elif op == 'ATOMIC_ACK':
            if r['msn'] is None:
                fail(f'{path}: frame {r["frame"]}: atomic ACK without AETH')
            elif not loose and (psn not in reqs or reqs[psn][2] not in ('CMP', 'FETCH')):
                fail(f'{path}: frame {r["frame"]}: atomic ACK psn {psn} names no atomic request')
        elif op.startswith('READ_RESP'):
            check_read_resp(path, r, reqs, opened, loose)


def check_case(path, rows, case, server, client):
    """The exchange the case ran: its opcodes, QPNs and first PSNs."""
    want = CASES[case]
    reqs = [r for r in rows if r['op'] not in RESPONSES]
    qps = {server[0], client[0]}
    for r in rows:
        if r['qp'] not in qps:
            fail(f'{path}: frame {r["frame"]}: QPN {r["qp"]:#x} is neither program\'s {sorted(qps)}')
    got = {r['op'] for r in reqs}
    if not got or not got <= want:
        fail(f'{path}: requests {sorted(got)}, expected some of {sorted(want)}')
    if case in SEGMENTED and SEGMENTED[case] not in {r['op'] for r in rows}:
        fail(f'{path}: no {SEGMENTED[case]}: messages were not segmented')
    if case == 'ud_pingpong':
        for r in reqs:
            peer = client[0] if r['qp'] == server[0] else server[0]
            if r['srcqp'] != peer:
                fail(f'{path}: frame {r["frame"]}: DETH source QP {r["srcqp"]}, expected {peer:#x}')
        return
    # requests to a QP start at its peer's first PSN (the peer's sq_psn)
    for qpn, peer_psn in ((server[0], client[1]), (client[0], server[1])):
        first = next((r for r in reqs if r['qp'] == qpn), None)
        if first and first['psn'] != peer_psn and case == 'rc_pingpong':
            fail(f'{path}: first request to {qpn:#x} has psn {first["psn"]:#x}, expected {peer_psn:#x}')


def main():
    case, mtu = sys.argv[1], int(sys.argv[2])
    if case == 'any':
        files = sys.argv[3:]
        for h in HEURISTICS:
            no_heur.extend(['--disable-heuristic', h])
    else:
        slog, clog, files = sys.argv[3], sys.argv[4], sys.argv[5:]
        server, client = qpn_psn(slog), qpn_psn(clog)
    seen = []
    for path in files:
        n = check_dissection(path)
        rows = read_packets(path)
        msgs = check_rules(path, rows, mtu, case == 'any')
        check_responses(path, rows, msgs, case == 'any')
        if case != 'any':
            check_case(path, rows, case, server, client)
        ops = {}
        for r in rows:
            ops[r['op']] = ops.get(r['op'], 0) + 1
        print(f'{path}: {n} packets: ' + ', '.join(f'{k} {v}' for k, v in sorted(ops.items())))
        seen.append(sorted((r['op'], r['qp'], r['psn']) for r in rows if r['op'] not in RESPONSES))
    # an in-order exchange through frames: both ends saw the same requests
    if case == 'rc_pingpong' and len(seen) == 2 and seen[0] != seen[1]:
        fail('the two captures disagree on the requests')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
