#!/usr/bin/env python3
"""Writes mediarouted's link order: the functions it runs from start-up to idle.

Reads a callgrind profile of a start-up and an idle period (see
order-file.sh) and the binary's symbol table, and prints the mangled names of
the executed functions in the order callgrind first met them. Linked first and
together (lld --symbol-ordering-file), they share far fewer pages than when
scattered over the 13 MB of text, and the kernel maps 64 KB around every page
a process touches.
"""
import re
import subprocess
import sys

profile, binary = sys.argv[1], sys.argv[2]

# callgrind names each function once, as fn=(id) name or cfn=(id) name; ids follow first mention.
names = {}
with open(profile, errors="replace") as lines:
    for line in lines:
        match = re.match(r"^c?fn=\((\d+)\) (.*)$", line.rstrip("\n"))
        if match:
            names.setdefault(int(match.group(1)), match.group(2))

symbols = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
mangled = [fields[2] for fields in (line.split() for line in symbols.splitlines()) if len(fields) == 3]
demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout.splitlines()
known = set(mangled)
by_demangled = {}
for plain, pretty in zip(mangled, demangled):
    by_demangled.setdefault(pretty, plain)

seen = set()
for identifier in sorted(names):
    # callgrind appends 'N to a function's name for its recursion levels.
    name = names[identifier].split("'")[0]
    symbol = name if name in known else by_demangled.get(name)
    if symbol and symbol not in seen:
        seen.add(symbol)
        print(symbol)
