#!/usr/bin/env python3
"""Delays every packet of an NFQUEUE queue by DELAY ms plus a uniform 0..JITTER ms.

This machine's kernel has no netem; iptables' NFQUEUE target hands packets to
this process, which gives each its verdict (accept) when its time has come.
Packets may overtake each other when the jitter says so, as with netem.

    nfqueue_delay.py QUEUE DELAY_MS JITTER_MS

Run in the namespace whose iptables rules send packets to QUEUE, e.g.
    iptables-legacy -A INPUT -i IF -j NFQUEUE --queue-num 7
Prints "ready" once bound. Talks netlink directly (no third-party module).
"""
import heapq
import os
import random
import select
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS = 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_ACCEPT = 1
NLM_F_REQUEST = 1
NLMSG_ERROR = 2


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def message(queue, kind, attributes, sequence):
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + b"".join(attributes)
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, NLM_F_REQUEST, sequence, 0) + body


def packet_ids(data):
    """The packet ids of the NFQNL_MSG_PACKET messages in one netlink read."""
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16 or offset + length > len(data):
            return
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            position = offset + 20
            while position + 4 <= offset + length:
                attribute_length, attribute_kind = struct.unpack_from("=HH", data, position)
                if attribute_length < 4:
                    break
                if attribute_kind & 0x7FFF == NFQA_PACKET_HDR and attribute_length >= 8:
                    yield struct.unpack_from("!I", data, position + 4)[0]
                position += (attribute_length + 3) & ~3
        offset += (length + 3) & ~3


def main():
    queue, delay, jitter = int(sys.argv[1]), float(sys.argv[2]) / 1000, float(sys.argv[3]) / 1000
    netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    netlink.bind((0, 0))
    netlink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    netlink.send(message(queue, NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET))], 1))
    netlink.send(message(queue, NFQNL_MSG_CONFIG, [attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))], 2))
    print("ready", flush=True)
    held = []
    sequence = 3
    while True:
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, packet = heapq.heappop(held)
            netlink.send(message(queue, NFQNL_MSG_VERDICT, [attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet))], sequence))
            sequence += 1
        timeout = max(0.0, held[0][0] - time.monotonic()) if held else None
        readable, _, _ = select.select([netlink], [], [], timeout)
        if not readable:
            continue
        data = netlink.recv(65536)
        arrived = time.monotonic()
        for packet in packet_ids(data):
            heapq.heappush(held, (arrived + delay + random.uniform(0, jitter), packet))


if __name__ == "__main__":
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, PermissionError, OSError):
        pass
    main()
