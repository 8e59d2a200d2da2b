#!/usr/bin/env python3
"""cubin_text.py -- one line per kernel of a cubin (nvcc -cubin): the sha256 of its machine code
(the ELF section .text.<mangled name>) and its size, sorted by name. Two builds' outputs diffed
say which kernels changed a byte (no cuobjdump needed).
    python3 kernels/dev/cubin_text.py [--d256] a.cubin [b.cubin ...]
--d256: only the head_dim 256 instantiations, named without their D argument (the last template
argument, 256), as a build whose kernels had no head_dim parameter names them: diff it with such
a build's text.txt to see the 256 kernels unchanged."""
import hashlib
import re
import struct
import sys


def text_sections(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF (a cubin from nvcc -cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    for h in heads:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        if name.startswith(".text."):
            yield name[len(".text."):], data[h[4]:h[4] + h[5]]


def without_d256(name):
    """the mangled name without a last template argument of 256, or None when it has none"""
    m = re.match(r"_Z(\d+)(\w+?)ILi256EE(v.*)$", name)
    if m:  # the only template argument: a plain function of that name
        return f"_Z{m.group(1)}{m.group(2)}{m.group(3)[1:]}"
    return name.replace("ELi256EEv", "EEv") if "ELi256EEv" in name else None


def main():
    args = sys.argv[1:]
    d256 = bool(args) and args[0] == "--d256"
    for path in args[1:] if d256 else args:
        lines = []
        for name, code in text_sections(path):
            if d256:
                plain = without_d256(name)
                # a kernel without a head_dim parameter keeps its name
                name = plain if plain else None if re.search(r"[IE]Li(64|128)EEv", name) else name
            if name:
                lines.append((name, f"{hashlib.sha256(code).hexdigest()[:16]} {len(code):8d} {name}"))
        for _, line in sorted(lines):
            print(line)


if __name__ == "__main__":
    main()
