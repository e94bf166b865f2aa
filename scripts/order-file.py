#!/usr/bin/env python3
"""Writes mediarouted's link order: the code it runs from start-up to idle.

Usage: order-file.py PROFILE MAP BINARY-NAME

PROFILE is a callgrind profile taken with --dump-instr=yes (see order-file.sh),
MAP the lld link map (-Map) of the profiled binary, BINARY-NAME the profiled
file's name as callgrind records it. Prints, one per line, symbol names for
lld's --symbol-ordering-file: every input section of `.text` in which an
instruction ran, once, in the order the profile first met them. Linked first
and together, they share far fewer pages than when scattered over the 13 MB of
text, and the kernel maps 64 KB around every page a process touches.

Sections are found from instruction addresses, not function names: callgrind
leaves a tenth of the functions unnamed (async partial functions among them).
lld moves every section that defines an ordered name, so a section is named by
a symbol no other section defines; local helpers that share one name in many
objects (outlined copies, value witnesses, merged "Tm" thunks) are listed only
when every section defining them is a section of its own (-function-sections)
or ran anyway, never when that would drag in a library object's whole `.text`
(hundreds of KB) that did not run.
Sections of their own come first, then the whole-object ones, so the dense part
stays contiguous.
"""
import bisect
import re
import sys

profile_path, map_path, binary_name = sys.argv[1], sys.argv[2], sys.argv[3]

# --- the link map: .text input sections and the symbols each defines ---------
sections = []  # [address, size, is_own_section, [symbol names]]
in_text = False
with open(map_path, errors="replace") as lines:
    for line in lines:
        # Columns: VMA LMA Size Align, then an output section after one space, an input
        # section after 9 (path:(section)), a symbol after 17.
        output_section = re.match(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+ (\S.*)$", line)
        if output_section:
            in_text = output_section.group(1).strip() == ".text"
            continue
        fields = line.split()
        if not in_text or len(fields) < 5:
            continue
        name = " ".join(fields[4:])
        if ":(" in name:
            section_name = name[name.rindex(":(") + 2:-1]
            sections.append([int(fields[0], 16), int(fields[2], 16), section_name != ".text", []])
        elif sections:
            sections[-1][3].append(name)

starts = [section[0] for section in sections]
defining = {}
for index, section in enumerate(sections):
    for symbol in section[3]:
        defining.setdefault(symbol, []).append(index)

# --- executed instruction addresses of our binary, in profile order ------------
objects = {}
current = None
last = 0
executed = []  # section indexes in order of first execution
seen = set()
with open(profile_path, errors="replace") as lines:
    for line in lines:
        if line.startswith(("ob=", "cob=")):
            match = re.match(r"^c?ob=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if match.group(2):
                objects[match.group(1)] = match.group(2)
            if line.startswith("ob="):
                current = objects.get(match.group(1), "")
            continue
        first = line[:1]
        if not first or first not in "0123456789+-*":
            continue
        token = line.split()[0]
        if token.startswith("0x"):
            address = int(token, 16)
        elif first == "+":
            address = last + int(token[1:])
        elif first == "-":
            address = last - int(token[1:])
        elif token == "*":
            address = last
        else:
            continue
        last = address
        if not current or not current.endswith("/" + binary_name):
            continue
        index = bisect.bisect_right(starts, address) - 1
        if index >= 0 and address < sections[index][0] + sections[index][1] and index not in seen:
            seen.add(index)
            executed.append(index)


def name_for(index):
    """A symbol that moves this section and no whole-object `.text` that did not run, or None."""
    symbols = sections[index][3]
    for symbol in symbols:
        if len(defining[symbol]) == 1:
            return symbol
    for symbol in symbols:
        if all(sections[other][2] or other in seen for other in defining[symbol]):
            return symbol
    return None


own = [index for index in executed if sections[index][2]]
whole = [index for index in executed if not sections[index][2]]
listed = set()
for index in own + whole:
    symbol = name_for(index)
    if symbol and symbol not in listed:
        listed.add(symbol)
        print(symbol)
print(len(executed), "executed sections,", len(own), "own,", len(whole), "whole-object,",
      sum(1 for index in executed if name_for(index) is None), "without a usable name", file=sys.stderr)
