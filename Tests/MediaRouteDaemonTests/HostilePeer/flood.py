#!/usr/bin/python3
"""A hostile host on the LAN: floods the SSDP and mDNS groups with datagrams no
honest device sends, at a fixed rate, and prints how many it sent of each kind.

    flood.py SOURCE_ADDRESS RATE SECONDS

Every datagram is one MediaRoute must ignore: random bytes, oversized ones,
SSDP NOTIFYs whose LOCATION points at another host (a reflection attempt),
DNS messages whose counts overflow, whose names loop or run past the end.
"""
import json, os, random, socket, struct, sys, time

source, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(24)


def sender():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((source, 0))
    return s


def ssdp_kinds():
    def garbage():
        return os.urandom(rng.randrange(1, 1400))

    def oversized():
        head = b"NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nX-FILL: "
        return head + b"A" * rng.randrange(8300, 8900)

    def reflection():
        udn = "uuid:%032x" % rng.getrandbits(128)
        return ("NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nCACHE-CONTROL: max-age=1800\r\n"
                f"LOCATION: http://192.0.2.{rng.randrange(1, 254)}:80/d.xml\r\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\r\n"
                f"NTS: ssdp:alive\r\nUSN: {udn}::urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n").encode()

    def truncated_headers():
        return b"HTTP/1.1 200 OK\r\n" + b"X:" * rng.randrange(1, 3000)

    return [("garbage", garbage), ("oversized", oversized), ("reflection", reflection), ("unterminated", truncated_headers)]


def mdns_kinds():
    def counts():
        return struct.pack(">HHHHHH", 0, 0x8400, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF) + os.urandom(rng.randrange(0, 64))

    def loop():
        # An answer whose name points at itself.
        return struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 0) + b"\xc0\x0c" + struct.pack(">HHIH", 12, 1, 120, 2) + b"\xc0\x0c"

    def past_end():
        return struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 0) + bytes([63]) + b"x" * 20

    def garbage():
        return os.urandom(rng.randrange(12, 1400))

    return [("counts", counts), ("loop", loop), ("past-end", past_end), ("garbage", garbage)]


targets = [(("239.255.255.250", 1900), kind, make) for kind, make in ssdp_kinds()] + \
          [(("224.0.0.251", 5353), kind, make) for kind, make in mdns_kinds()]
# A pool of prepared datagrams: the flood's rate is the socket's, not Python's.
pool = [(address, kind, make()) for _ in range(64) for address, kind, make in targets]
sent = {f"{'ssdp' if address[1] == 1900 else 'mdns'}/{kind}": 0 for address, kind, _ in targets}
s = sender()
start = time.monotonic()
batch = max(1, rate // 100)
index = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    due = int(elapsed * rate)
    total = sum(sent.values())
    if total >= due:
        time.sleep(0.002)
        continue
    for _ in range(min(batch, due - total)):
        address, kind, data = pool[index % len(pool)]
        index += 1
        try:
            s.sendto(data, address)
        except OSError:
            continue  # a full send buffer: not sent, not counted
        sent[f"{'ssdp' if address[1] == 1900 else 'mdns'}/{kind}"] += 1
print(json.dumps({"sent": sent, "seconds": time.monotonic() - start}), flush=True)
