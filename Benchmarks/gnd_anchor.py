#!/usr/bin/env python3
"""gnome-network-displays' dummy mode as the anchor of `mediaroute-bench video` (issue 43), run by
hand: `python3 Benchmarks/gnd_anchor.py [SECONDS]` (needs gnome-network-displays, xvfb, xdotool,
dbus-x11 and GStreamer's libav plugin; none is installed by install-deps.sh).

gnome-network-displays 0.90.5 (Debian 12) runs in an Xvfb screen of its own with
NETWORK_DISPLAYS_DUMMY=1 (its dummy Wi-Fi Display sink selected with xdotool); without a screencast
portal it grabs the X11 screen. The screen shows the same pictures as the benchmark writes
(MediaRoute's VideoTestPattern: the frame number in blocks across the top), 1280x720 at 30 a second,
drawn by GStreamer's ximagesink as they are written. A GStreamer client fetches its RTSP stream
(rtsp://127.0.0.1:7236/wfd1.0, jitter buffer 0) and records each decoded picture at 160x90 with its
time; each picture's number is read back, and its latency is its arrival less when that number
was drawn. Prints the same lines as the benchmark.
"""
import os, subprocess, sys, threading, time
import numpy as np

SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
WIDTH, HEIGHT, RATE = 1280, 720, 30
DISPLAY = ":78"
BLOCKS, BITS = 18, 16


def picture(number):
    """VideoTestPattern.frame (Tests/MediaRouteTestSupport/VideoTestPattern.swift) in numpy."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    luma = (32 + (x + y + number * 4) % 192).astype(np.uint8)
    band = min(HEIGHT // 3, max(WIDTH // BLOCKS, 8))
    index = (np.arange(WIDTH) * BLOCKS // WIDTH)
    bits = np.array([1] + [(number >> (BITS - i)) & 1 for i in range(1, BITS + 1)] + [0], dtype=np.uint8)
    luma[:band, :] = np.where(bits[index] == 1, 235, 16).astype(np.uint8)
    chroma = np.full(WIDTH * HEIGHT // 2, 128, dtype=np.uint8)
    return luma.tobytes() + chroma.tobytes()


def number_in(gray, width, height):
    block = width / BLOCKS
    band = min(height // 3, max(width // BLOCKS, 8))
    row = band // 2
    def white(i):
        v = gray[row * width + int((i + 0.5) * block)]
        return True if v > 170 else False if v < 80 else None
    if white(0) is not True or white(BLOCKS - 1) is not False:
        return None
    value = 0
    for i in range(1, BITS + 1):
        bit = white(i)
        if bit is None:
            return None
        value = value << 1 | int(bit)
    return value


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    env = dict(os.environ, DISPLAY=DISPLAY, NETWORK_DISPLAYS_DUMMY="1")
    xvfb = subprocess.Popen(["Xvfb", DISPLAY, "-screen", "0", f"{WIDTH}x{HEIGHT}x24"], stderr=subprocess.DEVNULL)
    time.sleep(1)
    gnd = subprocess.Popen(["dbus-run-session", "--", "gnome-network-displays"], env=dict(env, G_MESSAGES_DEBUG="all"),
                           stdout=subprocess.DEVNULL, stderr=open("/tmp/gnd-anchor.log", "w"))
    time.sleep(6)
    subprocess.run(["xdotool", "mousemove", "300", "139", "click", "1"], env=env)
    time.sleep(0.5)
    subprocess.run(["xdotool", "mousemove", "300", "139", "click", "--repeat", "2", "1"], env=env)
    time.sleep(2)
    # Its window off the screen it grabs, so the pattern's band is what is seen.
    subprocess.run(["xdotool", "search", "--name", "Network Displays", "windowmove", "2000", "2000"], env=env)
    shown = subprocess.Popen(
        ["gst-launch-1.0", "-q", "fdsrc", "fd=0", "blocksize=%d" % (WIDTH * HEIGHT * 3 // 2), "!",
         f"rawvideoparse", f"width={WIDTH}", f"height={HEIGHT}", "format=i420", f"framerate={RATE}/1", "!",
         "videoconvert", "!", "ximagesink", "sync=false"], stdin=subprocess.PIPE, env=env)
    pictures = [picture(n) for n in range(RATE)]
    written = {}
    arrivals = []
    size = 160 * 90

    def record():
        client = subprocess.Popen(
            ["gst-launch-1.0", "-q", "rtspsrc", "location=rtsp://127.0.0.1:7236/wfd1.0", "latency=0", "!", "decodebin", "!",
             "videoconvert", "!", "videoscale", "!", "video/x-raw,format=GRAY8,width=160,height=90", "!", "fdsink", "fd=1", "sync=true"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        buffer = b""
        deadline = time.monotonic() + SECONDS + 5
        while time.monotonic() < deadline:
            piece = os.read(client.stdout.fileno(), 65536)
            if not piece:
                break
            buffer += piece
            while len(buffer) >= size:
                arrivals.append((time.clock_gettime(time.CLOCK_MONOTONIC), number_in(buffer[:size], 160, 90)))
                buffer = buffer[size:]
        client.kill()

    # The process itself (dbus-run-session started it): its comm is cut to 15 characters.
    gnd_pid = int(subprocess.run(["pgrep", "-n", "-x", "gnome-network-d"], capture_output=True, text=True).stdout.split()[0])
    cpu_before = cpu_seconds(gnd_pid)
    recorder = threading.Thread(target=record, daemon=True)
    start = time.monotonic()
    # The first second drawn before the client connects (the anchor needs a screen to grab).
    count = SECONDS * RATE
    for n in range(count):
        due = start + n / RATE
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        data = bytearray(pictures[n % RATE])
        # The number in the band is the picture's own (the cycled gradient is only motion).
        band = min(HEIGHT // 3, max(WIDTH // BLOCKS, 8))
        index = np.arange(WIDTH) * BLOCKS // WIDTH
        bits = np.array([1] + [(n >> (BITS - i)) & 1 for i in range(1, BITS + 1)] + [0], dtype=np.uint8)
        row = np.where(bits[index] == 1, 235, 16).astype(np.uint8).tobytes()
        for y in range(band):
            data[y * WIDTH:(y + 1) * WIDTH] = row
        shown.stdin.write(data)
        shown.stdin.flush()
        written[n] = time.clock_gettime(time.CLOCK_MONOTONIC)
        if n == RATE:
            recorder.start()
    wall = time.monotonic() - start
    cpu = cpu_seconds(gnd_pid) - cpu_before
    recorder.join(10)
    latencies = sorted((t - written[n]) * 1000 for t, n in arrivals if n is not None and n in written)
    numbers = []
    for _, n in arrivals:
        if n is not None and (not numbers or numbers[-1] != n):
            numbers.append(n)
    expected = set(range(RATE + RATE, count))  # from a second after the client connected
    missing = len(expected - set(numbers))
    print(f"anchor: gnome-network-displays 0.90.5 dummy sink, {WIDTH}x{HEIGHT}@{RATE} grabbed from X11, for {SECONDS} s: "
          f"{len(set(numbers))} pictures seen, {missing} of {len(expected)} missing after the first second ({missing * 100 / max(1, len(expected)):.2f} %)")
    if latencies:
        pick = lambda p: latencies[min(len(latencies) - 1, int(len(latencies) * p))]
        print(f"anchor: from a picture drawn to its decoding at the RTSP client: min {latencies[0]:.0f} ms, median {pick(0.5):.0f} ms, "
              f"p95 {pick(0.95):.0f} ms, max {latencies[-1]:.0f} ms ({len(latencies)} pictures)")
    print(f"anchor: gnome-network-displays' process: {cpu / wall * 100:.1f} % of a core (grabbing, converting, encoding, RTP)")
    for process in (shown, gnd, xvfb):
        process.kill()


if __name__ == "__main__":
    main()
