#!/usr/bin/python3
"""A hostile host trying to use a MediaRoute box as an amplifier, and counting what it got.

    amplify.py SOURCE_ADDRESS BOX_ADDRESS SECONDS QUERIES

For SECONDS it sends QUERIES mDNS questions for the box's service (_mediaroute._udp,
half of them asking for a unicast answer, RFC 6762 §5.4) from SOURCE_ADDRESS, and
listens on the mDNS group for what BOX_ADDRESS sends. From the box's own answer it
learns the port of the box's coordination medium (SRV), then sends the medium
datagrams a box without the household key can make: random bytes, and copies of the
box's answers. It prints, as one JSON line, the bytes it sent and the bytes the box sent
back, per path.
"""
import json, os, random, select, socket, struct, sys, time

source, box, seconds, queries = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
GROUP = "224.0.0.251"
rng = random.Random(37)


def name(text):
    return b"".join(bytes([len(label)]) + label.encode() for label in text.split(".")) + b"\0"


def query(unicast):
    qclass = 0x8001 if unicast else 0x0001
    return struct.pack("!HHHHHH", 0, 0, 1, 0, 0, 0) + name("_mediaroute._udp.local") + struct.pack("!HH", 12, qclass)


def read_name(data, offset, depth=0):
    labels = []
    while offset < len(data) and depth < 16:
        length = data[offset]
        if length == 0:
            return ".".join(labels), offset + 1
        if length & 0xC0 == 0xC0:
            pointer = ((length & 0x3F) << 8) | data[offset + 1]
            rest, _ = read_name(data, pointer, depth + 1)
            labels.append(rest)
            return ".".join(labels), offset + 2
        labels.append(data[offset + 1:offset + 1 + length].decode(errors="replace"))
        offset += 1 + length
    return ".".join(labels), offset


def srv_port(data):
    """The port of the first SRV record in a DNS response, or None."""
    try:
        _, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", data[:12])
        offset = 12
        for _ in range(qd):
            _, offset = read_name(data, offset)
            offset += 4
        for _ in range(an + ns + ar):
            _, offset = read_name(data, offset)
            rtype, _, _, length = struct.unpack("!HHIH", data[offset:offset + 10])
            offset += 10
            if rtype == 33:
                return struct.unpack("!H", data[offset + 4:offset + 6])[0]
            offset += length
    except Exception:
        return None
    return None


listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
listener.bind(("", 5353))
listener.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton(source))

asker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
asker.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
asker.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
asker.bind((source, 0))

medium = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
medium.bind((source, 0))

sent = {"mdns": 0, "medium": 0}
received = {"mdns": 0, "mdns_unicast": 0, "medium": 0}
answers = 0
port = None
recorded = []
start = time.monotonic()
interval = seconds / max(queries, 1)
asked = 0
while time.monotonic() - start < seconds + 1.5:
    now = time.monotonic() - start
    if asked < queries and now >= asked * interval:
        packet = query(unicast=asked % 2 == 1)
        asker.sendto(packet, (GROUP, 5353))
        sent["mdns"] += len(packet)
        asked += 1
    if port is not None and now < seconds and sent["medium"] < 400 * 64:
        packet = rng.choice(recorded) if recorded and rng.random() < 0.5 else os.urandom(rng.randrange(8, 120))
        medium.sendto(packet, (box, port))
        sent["medium"] += len(packet)
    readable, _, _ = select.select([listener, asker, medium], [], [], 0.001)
    for sock in readable:
        data, (host, _) = sock.recvfrom(65536)
        if host != box:
            continue
        if sock is listener:
            received["mdns"] += len(data)
            answers += 1
            recorded.append(data)
            if port is None:
                port = srv_port(data)
        elif sock is asker:
            received["mdns_unicast"] += len(data)
        else:
            received["medium"] += len(data)

print(json.dumps({"sent": sent, "received": received, "answers": answers, "queries": asked, "mediumPort": port}))
