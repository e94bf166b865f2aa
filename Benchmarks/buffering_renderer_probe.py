"""How soon gmediarender starts when it buffers before it plays, and whether what it starts
with plays in time: the measurements behind Docs/benchmarks.md "a head start for a renderer
that buffers, tried and not kept".

Usage (root; gmediarender and python3 from Debian):
  buffering_renderer_probe.py BUFFER_SECONDS [--burst SECONDS] [--gap SECONDS] [--first-delay SECONDS] [--head-early]

Makes a network namespace with a veth pair, runs gmediarender there with
`--gstout-buffer-duration=BUFFER_SECONDS` playing into a sink synced to its pipeline clock
(a FIFO read here), serves it 6 s of a 440 Hz tone as a live L16 stream (close-delimited, DLNA's
streaming headers), tells it SetAVTransportURI and Play, and waits `--gap` after its fetch before
the response head and the first samples (a sender waiting for its app). With `--burst`, that
much of the tone goes at once, then the rest at its pace in 100 ms pieces, the first
`--first-delay` after the burst; without it, all at its pace. With `--head-early` the response
head goes at the fetch and only the samples wait for `--gap` (as MediaRoute answers). BUFFER 0
asks for no buffering: gmediarender plays what it fetches at once. Prints one line: the first
sample's send to its first sound, and how many seconds of audio came out in the first 0.5 s of
sound (about 0.55 s when played in time, the FIFO taking 64 KiB ahead: more means late buffers
written at once). The namespace and gmediarender are removed at the end.
Python's standard library only.
"""
import argparse
import math
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from html import escape

RATE = 44_100
NAMESPACE = "mrprobe"
HOST_END, INSIDE_END = "mrprobe0", "mrprobe1"
INSIDE, OUTSIDE = "10.97.0.1", "10.97.0.2"


def tone(frames, start):
    out = bytearray()
    for index in range(frames):
        value = int(8000 * math.sin(2 * math.pi * 440 * (start + index) / RATE)) & 0xFFFF
        out += struct.pack(">HH", value, value)  # L16 is big-endian
    return bytes(out)


def soap(action, arguments):
    service = "urn:schemas-upnp-org:service:AVTransport:1"
    body = "".join("<%s>%s</%s>" % (name, escape(value), name) for name, value in arguments)
    envelope = ('<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
                's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:%s xmlns:u="%s">%s</u:%s></s:Body></s:Envelope>'
                % (action, service, body, action))
    description = urllib.request.urlopen("http://%s:49494/description.xml" % INSIDE, timeout=5).read().decode()
    control = re.search(r"<serviceType>%s</serviceType>.*?<controlURL>([^<]+)</controlURL>" % re.escape(service), description, re.S).group(1)
    request = urllib.request.Request("http://%s:49494%s" % (INSIDE, control), data=envelope.encode(), headers={
        "Content-Type": 'text/xml; charset="utf-8"', "SOAPAction": '"%s#%s"' % (service, action)})
    return urllib.request.urlopen(request, timeout=10).read()


def run(command, check=True):
    return subprocess.run(command, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def inside(options, fifo):
    """In the namespace: serve the stream, record the renderer's output, tell it to play."""
    times, heard = {}, {}
    audio = tone(RATE * 6, 0)  # made before the clock runs: Python takes a while over it

    def serve(listener):
        connection, _ = listener.accept()
        connection.recv(4096)
        times["fetch"] = time.monotonic()
        if not options.head_early: time.sleep(options.gap)
        connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: audio/L16;rate=44100;channels=2\r\nCache-Control: no-cache\r\n"
                           b"transferMode.dlna.org: Streaming\r\ncontentFeatures.dlna.org: DLNA.ORG_PN=LPCM;DLNA.ORG_OP=00;DLNA.ORG_CI=0;"
                           b"DLNA.ORG_FLAGS=01700000000000000000000000000000\r\nConnection: close\r\n\r\n")
        if options.head_early: time.sleep(options.gap)
        start = time.monotonic()
        times["first"] = start
        burst = int(options.burst * RATE)
        sent = 0
        if burst:
            connection.sendall(audio[:burst * 4])
            sent = burst
        piece = RATE // 10
        while sent < RATE * 6:
            due = start + (options.first_delay if burst else 0) + (sent - burst) / RATE
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            try:
                connection.sendall(audio[sent * 4:(sent + piece) * 4])
            except OSError:
                break
            sent += piece
        connection.close()

    def record():
        with open(fifo, "rb", buffering=0) as source:
            while True:
                data = source.read(4096)
                if not data:
                    return
                now = time.monotonic()
                if "sound" not in heard and any(data[:64]):
                    heard["sound"] = now
                if "sound" in heard and now - heard["sound"] < 0.5:
                    heard["early"] = heard.get("early", 0) + len(data)

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((INSIDE, 8099))
    listener.listen(1)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    threading.Thread(target=record, daemon=True).start()
    deadline = time.monotonic() + 60
    while True:
        try:
            soap("SetAVTransportURI", [("InstanceID", "0"), ("CurrentURI", "http://%s:8099/live.pcm" % INSIDE), ("CurrentURIMetaData", "")])
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("gmediarender did not answer")
            time.sleep(0.5)
    soap("Play", [("InstanceID", "0"), ("Speed", "1")])
    time.sleep(9)
    if "sound" not in heard or "first" not in times:
        raise SystemExit("nothing heard")
    print("buffer %g s, burst %g s, gap %g s: first sound %.0f ms after the first sample; %.2f s of audio in the first 0.5 s of sound"
          % (options.buffer, options.burst, options.gap, (heard["sound"] - times["first"]) * 1000, heard.get("early", 0) / (RATE * 4)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("buffer", type=float)
    parser.add_argument("--burst", type=float, default=0.0)
    parser.add_argument("--gap", type=float, default=0.1)
    parser.add_argument("--first-delay", type=float, default=0.1)
    parser.add_argument("--head-early", action="store_true", help="send the response head at the fetch, the samples after --gap")
    parser.add_argument("--inside", metavar="FIFO", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.inside:
        return inside(options, options.inside)

    run(["ip", "netns", "del", NAMESPACE], check=False)
    run(["ip", "link", "del", HOST_END], check=False)
    work = "/tmp/mrprobe-%d" % os.getpid()
    os.makedirs(work, exist_ok=True)
    fifo = work + "/out.fifo"
    os.mkfifo(fifo)
    renderer = None
    try:
        run(["ip", "netns", "add", NAMESPACE])
        run(["ip", "link", "add", HOST_END, "type", "veth", "peer", "name", INSIDE_END, "netns", NAMESPACE])
        run(["ip", "addr", "add", OUTSIDE + "/24", "dev", HOST_END])
        run(["ip", "link", "set", HOST_END, "up"])
        run(["ip", "netns", "exec", NAMESPACE, "ip", "addr", "add", INSIDE + "/24", "dev", INSIDE_END])
        run(["ip", "netns", "exec", NAMESPACE, "ip", "link", "set", INSIDE_END, "up"])
        run(["ip", "netns", "exec", NAMESPACE, "ip", "link", "set", "lo", "up"])
        renderer = subprocess.Popen(
            ["ip", "netns", "exec", NAMESPACE, "gmediarender", "-I", INSIDE_END, "-p", "49494", "-f", "Probe",
             "-u", "0a1b2c3d-0000-4000-8000-0000000000ff", "--gstout-buffer-duration=%g" % options.buffer,
             "--gstout-audiopipe=audioconvert ! audio/x-raw,format=S16LE,rate=44100,channels=2 ! filesink location=%s sync=true buffer-mode=unbuffered" % fifo,
             "--gstout-videosink=fakesink", "--logfile=%s/gmediarender.log" % work],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # The server, the recorder and the control point run in the namespace with the renderer.
        client = subprocess.run(
            ["ip", "netns", "exec", NAMESPACE, sys.executable, os.path.abspath(__file__), "--inside", fifo, str(options.buffer),
             "--burst", str(options.burst), "--gap", str(options.gap), "--first-delay", str(options.first_delay)] + (["--head-early"] if options.head_early else []),
            stdout=subprocess.PIPE, text=True)
        print(client.stdout.strip())
        return client.returncode
    finally:
        if renderer:
            renderer.terminate()
            try:
                renderer.wait(5)
            except subprocess.TimeoutExpired:
                renderer.kill()
        run(["ip", "netns", "exec", NAMESPACE, "pkill", "-x", "gmediarender"], check=False)
        run(["ip", "netns", "del", NAMESPACE], check=False)
        run(["ip", "link", "del", HOST_END], check=False)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
